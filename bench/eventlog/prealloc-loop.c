// Back-to-back frame syncs as the log's sync thread makes them under single-event load (a frame
// of FRAME bytes written with pwrite at the end of the data, then fdatasync, in a closed loop for
// SECONDS), with and without a second thread zero-filling CHUNK bytes ahead of the data (pwrite of
// zeros + fdatasync whenever fewer than CHUNK/2 are left, starting CHUNK/4 past the data when it
// caught up), as SegmentPreallocator does. Alternates the two modes ROUNDS times; prints syncs/s
// and p50/p99 of write+fdatasync.
// Build: gcc -O2 -pthread -o /tmp/prealloc-loop bench/eventlog/prealloc-loop.c
// Usage: /tmp/prealloc-loop DIR FRAME CHUNK SECONDS ROUNDS
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static int fd; static long chunk; static char *zeros;
static atomic_long dataEnd, zeroEnd; static atomic_int stop;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long fillFrom = -1, fillTo = -1;  // region being filled (under lock)
static long fills;

static void *filler(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        long data = atomic_load(&dataEnd), z = atomic_load(&zeroEnd);
        if (z - data >= chunk / 2) { usleep(100); continue; }
        long start = z > data ? z : data + chunk / 4;
        pthread_mutex_lock(&lock); fillFrom = start; fillTo = start + chunk; pthread_mutex_unlock(&lock);
        pwrite(fd, zeros, chunk, start);
        fdatasync(fd);
        pthread_mutex_lock(&lock); fillFrom = fillTo = -1; pthread_mutex_unlock(&lock);
        atomic_store(&zeroEnd, start + chunk);
        fills++;
    }
    return NULL;
}

static void run(const char *dir, int prealloc, long frame, double seconds) {
    char path[4096]; snprintf(path, sizeof path, "%s/loop-%d", dir, prealloc);
    unlink(path);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    atomic_store(&dataEnd, 0); atomic_store(&zeroEnd, 0); atomic_store(&stop, 0); fills = 0;
    pthread_t thread;
    if (prealloc) pthread_create(&thread, NULL, filler, NULL);
    char *buffer = malloc(frame); memset(buffer, 'x', frame);
    int capacity = 1 << 20, count = 0; double *took = malloc(sizeof(double) * capacity);
    double start = now(), end = start + seconds;
    long offset = 0;
    while (now() < end && count < capacity) {
        for (;;) {  // the committer waits only if the frame would reach into the chunk being filled
            pthread_mutex_lock(&lock); int overlaps = fillFrom >= 0 && offset + frame > fillFrom && offset < fillTo; pthread_mutex_unlock(&lock);
            if (!overlaps) break;
            usleep(50);
        }
        double t = now();
        pwrite(fd, buffer, frame, offset);
        fdatasync(fd);
        took[count++] = now() - t;
        offset += frame;
        atomic_store(&dataEnd, offset);
    }
    double elapsed = now() - start;
    atomic_store(&stop, 1);
    if (prealloc) pthread_join(thread, NULL);
    qsort(took, count, sizeof(double), cmp);
    printf("%-8s frame %6ld B: %7.0f syncs/s  p50 %6.1f us  p99 %7.1f us  fills %ld\n", prealloc ? "prealloc" : "append", frame,
           count / elapsed, took[count / 2] * 1e6, took[count * 99 / 100] * 1e6, fills);
    close(fd); unlink(path); free(buffer); free(took);
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: %s DIR FRAME CHUNK SECONDS ROUNDS\n", argv[0]); return 2; }
    long frame = atol(argv[2]); chunk = atol(argv[3]); double seconds = atof(argv[4]); int rounds = atoi(argv[5]);
    zeros = calloc(1, chunk);
    for (int round = 0; round < rounds; round++) {
        run(argv[1], round % 2, frame, seconds);
        run(argv[1], 1 - round % 2, frame, seconds);
    }
    return 0;
}
