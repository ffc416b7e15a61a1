#ifndef TODAY_CLIBXML2_SHIM_H
#define TODAY_CLIBXML2_SHIM_H
#include <libxml/xmlversion.h>
/* Debian builds libxml2 with ICU, whose headers clash with the ICU that the
 * Swift toolchain's Foundation carries. Only the conversion handler's
 * private members depend on this switch, and we never touch them. */
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>

/* Sets libxml2's process-wide nesting limit. Called once, before any
 * parser runs (XMLPlistReader.initialize), so no parse reads it while it
 * changes. */
static inline void today_xml_set_maximum_depth(unsigned int depth) { xmlParserMaxDepth = depth; }

static inline void today_xml_ignore(void *context, const char *message, ...) {
    (void)context;
    (void)message;
}

static inline void today_xml_ignore_structured(void *context, xmlErrorPtr error) {
    (void)context;
    (void)error;
}

/* Stops libxml2 from printing to standard error on the calling thread (its
 * handlers are per thread): the encoding layer reports bad input there
 * with no parser context, whatever the parser's options. What went wrong
 * is read from the parser context (xmlCtxtGetLastError) instead. */
static inline void today_xml_quiet_thread(void) {
    xmlSetGenericErrorFunc(NULL, today_xml_ignore);
    xmlSetStructuredErrorFunc(NULL, today_xml_ignore_structured);
}
#endif
