#ifndef CZSTD_SHIM_H
#define CZSTD_SHIM_H
// zstd's API is plain C functions; only ZSTD_isError-style helpers are used as is.
#include <zstd.h>
#include <zstd_errors.h>
#endif
