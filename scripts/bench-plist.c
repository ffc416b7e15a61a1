/* Reference timings for the property-list benchmark: libxml2's
 * xmlReadMemory alone (tree built and freed, no plist work) and libplist's
 * XML and binary readers, on the files plist-bench wrote.
 *   bench-plist-ref XML BPLIST   prints "xmlReadMemory MS", "libplist-xml MS", "libplist-binary MS" */
#include <libxml/parser.h>
#include <plist/plist.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static char *slurp(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END); *size = ftell(f); rewind(f);
  char *buf = malloc(*size);
  if (fread(buf, 1, *size, f) != (size_t)*size) { perror(path); exit(1); }
  fclose(f);
  return buf;
}
static double ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s XML BPLIST\n", argv[0]); return 2; }
  long xs, bs; char *x = slurp(argv[1], &xs), *b = slurp(argv[2], &bs);
  xmlInitParser();
  double best = 1e9;
  for (int i = 0; i < 15; i++) {
    double t = ms(); xmlDocPtr d = xmlReadMemory(x, xs, NULL, NULL, XML_PARSE_NONET); xmlFreeDoc(d); t = ms() - t;
    if (t < best) best = t;
  }
  printf("xmlReadMemory %.2f\n", best);
  best = 1e9;
  for (int i = 0; i < 15; i++) {
    plist_t p = NULL; double t = ms(); plist_from_xml(x, xs, &p); plist_free(p); t = ms() - t;
    if (t < best) best = t;
  }
  printf("libplist-xml %.2f\n", best);
  best = 1e9;
  for (int i = 0; i < 15; i++) {
    plist_t p = NULL; double t = ms(); plist_from_bin(b, bs, &p); plist_free(p); t = ms() - t;
    if (t < best) best = t;
  }
  printf("libplist-binary %.2f\n", best);
  return 0;
}
