// close-check: an LD_PRELOAD library for `scripts/sanitize descriptors`. It wraps close(2) and, in
// our own processes (the test binary and detour-analytics), writes a report with a backtrace
// whenever close fails with EBADF on a descriptor >= 0: a descriptor closed twice. The second close
// is harmless only while the number stays free; once another thread has been given it (a socket, a
// segment file, libmicrohttpd's eventfd), the second close takes it from under its new owner.
// Reports go to $DETOUR_CLOSE_REPORTS (one file per process); nothing else changes.
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

static int (*real_close)(int);
static int checked = -1;  // -1 unknown, 0 another program, 1 ours

static int is_ours(void) {
    if (checked >= 0) return checked;
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    checked = 0;
    if (length > 0) {
        path[length] = 0;
        const char *name = strrchr(path, '/');
        name = name ? name + 1 : path;
        checked = strcmp(name, "detour-analytics") == 0 || strstr(name, ".xctest") != NULL;
    }
    return checked;
}

int close(int fd) {
    if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    int result = real_close(fd);
    if (result == -1 && errno == EBADF && fd >= 0 && is_ours()) {
        int saved = errno;
        const char *directory = getenv("DETOUR_CLOSE_REPORTS");
        char file[PATH_MAX];
        snprintf(file, sizeof file, "%s/close.%d", directory ? directory : "/tmp", (int)getpid());
        int report = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
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
