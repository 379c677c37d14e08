// Cost of write + fdatasync on this disk: appending (the size changes every time), writing into
// already-written zeros (preallocated as PostgreSQL does for WAL), writing into fallocate()d space.
// Build: gcc -O2 -o /tmp/prealloc-probe bench/eventlog/prealloc-probe.c
// Usage: /tmp/prealloc-probe DIR WRITE_BYTES COUNT   (prints p50/p90/mean µs per write+fdatasync)
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static void run(const char *dir, const char *mode, size_t size, int count) {
    char path[4096]; snprintf(path, sizeof path, "%s/probe-%s", dir, mode);
    unlink(path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    size_t total = size * (size_t)count;
    char *buffer = malloc(size); memset(buffer, 'x', size);
    double zeroCost = 0;
    if (!strcmp(mode, "zeros")) {
        char *zeros = calloc(1, 1 << 20);
        double start = now();
        for (size_t done = 0; done < total; done += 1 << 20) pwrite(fd, zeros, 1 << 20, done);
        fdatasync(fd);
        zeroCost = now() - start;
        free(zeros);
    } else if (!strcmp(mode, "fallocate")) {
        fallocate(fd, 0, 0, total); fdatasync(fd);
    }
    double *took = malloc(sizeof(double) * count), sum = 0;
    for (int i = 0; i < count; i++) {
        double start = now();
        pwrite(fd, buffer, size, (off_t)size * i);
        fdatasync(fd);
        took[i] = now() - start; sum += took[i];
    }
    qsort(took, count, sizeof(double), cmp);
    printf("%-10s %8zu B: p50 %7.1f  p90 %7.1f  mean %7.1f us", mode, size, took[count / 2], took[count * 9 / 10], sum / count);
    if (zeroCost > 0) printf("  (zero-fill of %zu MiB + fdatasync: %.1f ms)", total >> 20, zeroCost / 1000);
    printf("\n");
    close(fd); unlink(path); free(buffer); free(took);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s DIR WRITE_BYTES COUNT\n", argv[0]); return 2; }
    size_t size = strtoul(argv[2], 0, 10); int count = atoi(argv[3]);
    for (int round = 0; round < 3; round++) {
        run(argv[1], "append", size, count);
        run(argv[1], "zeros", size, count);
        run(argv[1], "fallocate", size, count);
    }
    return 0;
}
