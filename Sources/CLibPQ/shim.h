#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
// libpq's API is plain C functions, callable from Swift as is; no shim functions needed.
#include <libpq-fe.h>
#endif
