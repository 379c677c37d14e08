// close-check: an LD_PRELOAD library for `scripts/sanitize descriptors`. It wraps close(2) and, in
// our own processes (the test binary and detour-analytics), writes a report with a backtrace
// whenever close fails with EBADF on a descriptor >= 0: a descriptor closed twice. The second close
// is harmless only while the number stays free; once another thread has been given it (a socket, a
// segment file, libmicrohttpd's eventfd), the second close takes it from under its new owner.
// Reports go to $DETOUR_CLOSE_REPORTS (one file per process); nothing else changes. It sees a
// double close only while the number is still free: once reused, the second close succeeds, so
// "no report" is evidence, not proof (each run gives the races another chance).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Both set once, before the program's own code runs (a constructor), so threads only read them.
static int (*real_close)(int);
static int ours;  // the test binary or detour-analytics

__attribute__((constructor)) static void set_up(void) {
    real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length > 0) {
        path[length] = 0;
        const char *name = strrchr(path, '/');
        name = name ? name + 1 : path;
        ours = strcmp(name, "detour-analytics") == 0 || strstr(name, ".xctest") != NULL;
    }
}

int close(int fd) {
    if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");  // a close before set_up
    int result = real_close(fd);
    if (result == -1 && errno == EBADF && fd >= 0 && ours) {
        int saved = errno;
        const char *directory = getenv("DETOUR_CLOSE_REPORTS");
        char file[PATH_MAX];
        snprintf(file, sizeof file, "%s/close.%d", directory ? directory : "/tmp", (int)getpid());
        int report = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (report >= 0) {
            char line[96];
            int n = snprintf(line, sizeof line, "ERROR: close(%d) failed with EBADF: closed twice\n", fd);
            if (write(report, line, (size_t)n) < 0) { /* nothing to do */ }
            void *frames[48];
            backtrace_symbols_fd(frames, backtrace(frames, 48), report);
            if (write(report, "\n", 1) < 0) { /* nothing to do */ }
            real_close(report);
        }
        errno = saved;
    }
    return result;
}
