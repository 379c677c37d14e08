// Naming the calling thread (what top -H, perf, gdb and /proc/PID/task/*/comm show): prctl is
// variadic, which Swift cannot call, and Swift's Glibc module leaves out pthread_setname_np (a GNU
// extension). Linux keeps the first 15 bytes; the caller cuts the name to fit.
#include <sys/prctl.h>

static inline int detour_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
