#ifndef TODAY_CZLIB_SHIM_H
#define TODAY_CZLIB_SHIM_H
/* zlib: deflate and CRC-32 for the PNG files todayd keeps of notification
 * pictures. */
#include <zlib.h>
#endif
