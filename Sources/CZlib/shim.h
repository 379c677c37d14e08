#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2 and inflateInit2 are macros that pass ZLIB_VERSION and the stream size,
// which Swift cannot import; these wrappers make them callable.
static inline int CZlib_deflateInit2(z_streamp strm, int level, int method, int windowBits,
                                     int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}

static inline int CZlib_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
