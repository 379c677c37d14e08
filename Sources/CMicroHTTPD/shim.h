#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

// MHD_start_daemon is variadic, which Swift cannot call. Every option we use goes through
// MHD_OPTION_ARRAY, so Swift builds the option list as an array of struct MHD_OptionItem.
static inline struct MHD_Daemon *CMicroHTTPD_start(unsigned int flags, uint16_t port,
                                                   MHD_AccessHandlerCallback handler, void *handler_cls,
                                                   const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

// MHD_OPTION_NOTIFY_COMPLETED takes a function pointer through varargs; Swift passes it via
// MHD_OptionItem.ptr_value, which needs a cast from the function type.
static inline void *CMicroHTTPD_completedCallbackPointer(MHD_RequestCompletedCallback cb) {
    return (void *)cb;
}

// The same for MHD_OPTION_NOTIFY_CONNECTION.
static inline void *CMicroHTTPD_connectionCallbackPointer(MHD_NotifyConnectionCallback cb) {
    return (void *)cb;
}
#endif
