#ifndef TODAY_CLIBXML2_SHIM_H
#define TODAY_CLIBXML2_SHIM_H
#include <libxml/xmlversion.h>
/* Debian builds libxml2 with ICU, whose headers clash with the ICU that the
 * Swift toolchain's Foundation carries. Only the conversion handler's
 * private members depend on this switch, and we never touch them. */
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>

/* Sets libxml2's process-wide nesting limit. Called once, before any
 * parser runs (XMLPlistReader.initialize), so no parse reads it while it
 * changes. */
static inline void today_xml_set_maximum_depth(unsigned int depth) { xmlParserMaxDepth = depth; }
#endif
