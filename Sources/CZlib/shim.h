#ifndef BUZZKIT_CZLIB_SHIM_H
#define BUZZKIT_CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2 and inflateInit2 are macros that pass the version and struct size.
static inline int buzzkit_deflateInit2(z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}

static inline int buzzkit_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
