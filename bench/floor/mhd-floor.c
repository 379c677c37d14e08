// bench/floor/mhd-floor.c: what libmicrohttpd itself costs per request with the daemon settings of
// detour's ingest (internal poll threads, one per core, 16 KiB per connection, suspend/resume allowed),
// and nothing of ours: no auth, no JSON, no event log. It answers every POST with the body ingest
// sends for one accepted event. Run as a `serve` variant of bench/ingest-ab (docs/ingest-performance.md,
// "The floor under the single-event figure"):
//
//   --mode now     answer from the request's last handler call, as a server with nothing to wait for
//   --mode resume  suspend the connection and queue the request; one hand-off thread takes every
//                  queued request at once, sleeps --sync-us (a stand-in for the group's fdatasync)
//                  and resumes them, and each is answered when libmicrohttpd calls the handler again:
//                  ingest's path with the work left out (default)
//   --mode block   the handler blocks until the hand-off thread has "synced" its request: a thread
//                  pool instead of suspend/resume (--threads sets the pool)
//   --mode thread  as block, with a thread per connection (MHD_USE_THREAD_PER_CONNECTION, 256 KiB
//                  stacks) instead of a pool: each request waits on its own thread
//   --mode inline  no hand-off thread: --threads loops of our own (libmicrohttpd's external epoll mode,
//                  a daemon per loop); after each run the loop writes and syncs the requests it left
//                  suspended, resumes them and runs again to answer them (--inline wait: not suspended,
//                  left waiting for their answer, which libmicrohttpd asks the handler for at the next
//                  run). Measured and not kept (docs/ingest-performance.md, "A loop that syncs its own group")
//   --mode handed  --threads loops as in inline, but the loops hand each run's suspended requests to the
//                  hand-off thread, which syncs the group and then tells each loop once (an eventfd of
//                  the loop's own) instead of resuming every request itself; the loop resumes them from
//                  its own thread and runs again: one wake-up per loop and group whatever its size
//   --sync-file PATH  instead of the sleep, write 300 bytes per request of the group into PATH (64 MiB,
//                  zero-filled first, as the event log preallocates its open segment; written round)
//                  and fdatasync it: a durable answer with nothing else of ours
//   --accept own   (default) accept on a thread of our own and hand each connection to libmicrohttpd
//                  (MHD_add_connection), which alternates them between the poll loops, as ingest does
//                  since 2026-12-02 ("Balanced loops" in docs/ingest-performance.md); not with --mode thread
//   --accept mhd   libmicrohttpd's own accept: each loop accepts from the shared socket, so a burst of
//                  connections can land on one loop
//
// It takes and ignores the other `serve` flags bench/ingest-ab passes, and prints the line the
// bench waits for: "listening on http://127.0.0.1:PORT".
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode { NOW, RESUME, BLOCK, THREAD, INLINE, HANDED };
enum state { READING, QUEUED, DURABLE };

struct loop;

typedef struct request {
    enum state state;
    struct MHD_Connection *connection;
    struct loop *loop;
    struct request *next;
} request;

// --mode inline: one loop of ours per daemon; the requests its last run suspended, synced by the loop.
// --mode handed: the same loops; `durable` holds the requests the hand-off thread synced for this
// loop (under `lock`), and `wake` is the loop's eventfd (handed mode only), written once per group.
typedef struct loop {
    struct MHD_Daemon *daemon;
    request *pending;
    request *durable;
    int wake;
    int notify;  // set when `durable` went from empty to not; only the hand-off thread reads and clears it
} loop;

static loop *loops;
static unsigned loop_count;
static enum mode mode = RESUME;
static int inline_suspend = 1;  // --mode inline: suspend each request until synced (--inline wait: leave it waiting)
static unsigned sync_us = 80;
static int sync_fd = -1;
static const off_t sync_file_bytes = 64 << 20;
static off_t sync_offset;

// Writes `count` records of 300 bytes at the file's next offset and waits for them to be durable.
static void write_and_sync(unsigned count) {
    static char record[300];
    for (unsigned i = 0; i < count; i++) {
        off_t offset = __atomic_fetch_add(&sync_offset, (off_t)sizeof record, __ATOMIC_RELAXED) % sync_file_bytes;
        if (offset + (off_t)sizeof record > sync_file_bytes) offset = 0;
        if (pwrite(sync_fd, record, sizeof record, offset) != (ssize_t)sizeof record) abort();
    }
    if (fdatasync(sync_fd) != 0) abort();
}
static struct MHD_Response *accepted;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER;
static pthread_cond_t durable = PTHREAD_COND_INITIALIZER;
static request *queue;

static void *hand_off(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!queue) pthread_cond_wait(&queued, &lock);
        request *group = queue;
        queue = NULL;
        pthread_mutex_unlock(&lock);
        if (sync_fd >= 0) {
            unsigned count = 0;
            for (request *r = group; r; r = r->next) count++;
            write_and_sync(count);
        } else if (sync_us) {
            usleep(sync_us);
        }
        if (mode == BLOCK || mode == THREAD) {
            pthread_mutex_lock(&lock);
            for (request *r = group; r; r = r->next) r->state = DURABLE;
            pthread_cond_broadcast(&durable);
            pthread_mutex_unlock(&lock);
        } else if (mode == HANDED) {
            // Give each loop its requests, then wake each loop that got any, once.
            pthread_mutex_lock(&lock);
            for (request *r = group, *next; r; r = next) {
                next = r->next;
                r->state = DURABLE;
                struct loop *l = r->loop;
                if (!l->durable) l->notify = 1;
                r->next = l->durable;
                l->durable = r;
            }
            pthread_mutex_unlock(&lock);
            for (unsigned i = 0; i < loop_count; i++) {
                if (!loops[i].notify) continue;
                loops[i].notify = 0;
                uint64_t one = 1;
                if (write(loops[i].wake, &one, sizeof one) != sizeof one) abort();
            }
        } else {
            for (request *r = group, *next; r; r = next) {
                next = r->next;
                r->state = DURABLE;
                MHD_resume_connection(r->connection);
            }
        }
    }
    return NULL;
}

static void enqueue(request *r) {
    r->state = QUEUED;
    r->next = queue;
    queue = r;
    pthread_cond_signal(&queued);
}

// --mode inline: each loop waits for its connections, runs libmicrohttpd over them, and when that run
// suspended requests, writes and syncs them itself and resumes them: no hand-off thread, no waking
// a sleeping loop (the resumes' eventfd writes come from the loop's own thread).
static void *run_loop(void *argument) {
    loop *l = argument;
    for (;;) {
        MHD_run_wait(l->daemon, -1);
        while (l->pending) {
            request *group = l->pending;
            l->pending = NULL;
            unsigned count = 0;
            for (request *r = group; r; r = r->next) count++;
            if (sync_fd >= 0) write_and_sync(count);
            else if (sync_us) usleep(sync_us);
            for (request *r = group, *next; r; r = next) {
                next = r->next;
                r->state = DURABLE;
                if (inline_suspend) MHD_resume_connection(r->connection);
            }
            MHD_run(l->daemon);
        }
    }
    return NULL;
}

// --mode handed: each loop waits on libmicrohttpd's epoll descriptor and its own eventfd; it hands
// what a run suspended to the hand-off thread, and resumes what the hand-off thread gave back.
static void *run_handed(void *argument) {
    loop *l = argument;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 0};
    if (!info || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, info->epoll_fd, &ev) != 0) abort();
    ev.data.u32 = 1;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, l->wake, &ev) != 0) abort();
    for (;;) {
        struct epoll_event events[2];
        MHD_UNSIGNED_LONG_LONG timeout;
        int ms = MHD_get_timeout(l->daemon, &timeout) == MHD_YES ? (int)(timeout < 1000 ? timeout : 1000) : 1000;
        int n = epoll_wait(ep, events, 2, ms);
        for (int i = 0; i < n; i++) {
            if (events[i].data.u32 != 1) continue;
            uint64_t count;
            if (read(l->wake, &count, sizeof count) < 0 && errno != EAGAIN) abort();
            pthread_mutex_lock(&lock);
            request *group = l->durable;
            l->durable = NULL;
            pthread_mutex_unlock(&lock);
            for (request *r = group; r; r = r->next) MHD_resume_connection(r->connection);
        }
        MHD_run(l->daemon);
        if (l->pending) {
            pthread_mutex_lock(&lock);
            for (request *r = l->pending, *next; r; r = next) {
                next = r->next;
                enqueue(r);
            }
            pthread_mutex_unlock(&lock);
            l->pending = NULL;
        }
    }
    return NULL;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **context) {
    (void)url; (void)method; (void)version; (void)data;
    request *r = *context;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->connection = connection;
        *context = r;
        return MHD_YES;
    }
    if (*size) {
        *size = 0;
        return MHD_YES;
    }
    switch (mode) {
    case NOW:
        return MHD_queue_response(connection, 200, accepted);
    case BLOCK:
    case THREAD:
        pthread_mutex_lock(&lock);
        enqueue(r);
        while (r->state != DURABLE) pthread_cond_wait(&durable, &lock);
        pthread_mutex_unlock(&lock);
        return MHD_queue_response(connection, 200, accepted);
    case INLINE:
    case HANDED:
        if (r->state == DURABLE) return MHD_queue_response(connection, 200, accepted);
        if (r->state == READING) {
            loop *l = cls;
            r->loop = l;
            if (inline_suspend) MHD_suspend_connection(connection);
            r->state = QUEUED;
            r->next = l->pending;
            l->pending = r;
        }
        return MHD_YES;
    case RESUME:
        if (r->state == DURABLE) return MHD_queue_response(connection, 200, accepted);
        if (r->state == READING) {
            MHD_suspend_connection(connection);
            pthread_mutex_lock(&lock);
            enqueue(r);
            pthread_mutex_unlock(&lock);
        }
        return MHD_YES;
    }
    return MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *connection, void **context,
                      enum MHD_RequestTerminationCode code) {
    (void)cls; (void)connection; (void)code;
    free(*context);
    *context = NULL;
}

static int listen_fd = -1;

// --accept own: takes every connection and gives it to the daemon (which closes it on failure), or
// in --mode inline to the loops' daemons in turn.
static void *acceptor(void *daemon) {
    unsigned next = 0;
    for (;;) {
        struct sockaddr_storage address;
        socklen_t length = sizeof address;
        int fd = accept(listen_fd, (struct sockaddr *)&address, &length);
        if (fd < 0) {
            if (errno != EINTR) usleep(1000);  // out of descriptors: do not spin a core under the benchmark
            continue;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        if (loop_count) {
            daemon = loops[next].daemon;
            next = (next + 1) % loop_count;
        }
        MHD_add_connection(daemon, fd, (struct sockaddr *)&address, length);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int own_accept = 1;
    unsigned threads = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--mode")) {
            mode = !strcmp(value, "now") ? NOW : !strcmp(value, "block") ? BLOCK : !strcmp(value, "thread") ? THREAD
                : !strcmp(value, "inline") ? INLINE : !strcmp(value, "handed") ? HANDED : RESUME;
            i++;
        } else if (!strcmp(argv[i], "--sync-us")) {
            sync_us = (unsigned)atoi(value);
            i++;
        } else if (!strcmp(argv[i], "--sync-file")) {
            sync_fd = open(value, O_RDWR | O_CREAT | O_TRUNC, 0600);
            if (sync_fd < 0) {
                perror("mhd-floor: --sync-file");
                return 1;
            }
            static char zeros[1 << 20];
            for (off_t written = 0; written < sync_file_bytes; written += sizeof zeros)
                if (write(sync_fd, zeros, sizeof zeros) != (ssize_t)sizeof zeros) return 1;
            if (fsync(sync_fd) != 0) return 1;
            i++;
        } else if (!strcmp(argv[i], "--accept")) {
            own_accept = strcmp(value, "mhd") != 0;
            i++;
        } else if (!strcmp(argv[i], "--inline")) {
            inline_suspend = strcmp(value, "wait") != 0;
            i++;
        } else if (!strcmp(argv[i], "--threads")) {
            threads = (unsigned)atoi(value);
            i++;
        }
    }
    static const char body[] = "{\"accepted\":1,\"rejected\":[],\"warnings\":[]}";
    accepted = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(accepted, "Content-Type", "application/json");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // 127.0.0.1 only, on a free port
    pthread_t thread;
    pthread_create(&thread, NULL, hand_off, NULL);
    if (mode == THREAD) own_accept = 0;
    if (mode == INLINE || mode == HANDED) own_accept = 1;  // the loops' daemons have no listening socket
    unsigned port = 0;
    if (own_accept) {
        listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int yes = 1;
        setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&address, sizeof address) != 0 || listen(listen_fd, 1024) != 0) {
            perror("mhd-floor: listen");
            return 1;
        }
        socklen_t length = sizeof address;
        getsockname(listen_fd, (struct sockaddr *)&address, &length);
        port = ntohs(address.sin_port);
    }
    if (mode == INLINE || mode == HANDED) {
        // External polling: MHD_add_connection from the accept thread needs the daemon's own lock and
        // channel (MHD_USE_ITC), which suspend/resume turns on anyway.
        loop_count = threads;
        loops = calloc(loop_count, sizeof *loops);
        for (unsigned i = 0; i < loop_count; i++) {
            loops[i].daemon = MHD_start_daemon(
                MHD_USE_ERROR_LOG | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL,
                handle, &loops[i], MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
                MHD_OPTION_CONNECTION_LIMIT, 4096, MHD_OPTION_CONNECTION_TIMEOUT, 30,
                MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
            if (!loops[i].daemon) {
                fprintf(stderr, "mhd-floor: libmicrohttpd did not start\n");
                return 1;
            }
            loops[i].wake = mode == HANDED ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
            if (mode == HANDED && loops[i].wake < 0) return 1;
            pthread_t running;
            pthread_create(&running, NULL, mode == HANDED ? run_handed : run_loop, &loops[i]);
        }
        pthread_t accepting;
        pthread_create(&accepting, NULL, acceptor, NULL);
        printf("listening on http://127.0.0.1:%u\n", port);
        fflush(stdout);
        pause();
        return 0;
    }
    struct MHD_Daemon *daemon = mode == THREAD
        ? MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL, NULL, handle, NULL,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 << 10),
        MHD_OPTION_CONNECTION_LIMIT, 4096, MHD_OPTION_CONNECTION_TIMEOUT, 30,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address, MHD_OPTION_END)
        : own_accept
        ? MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET, 0, NULL,
        NULL, handle, NULL, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
        MHD_OPTION_CONNECTION_LIMIT, 4096, MHD_OPTION_CONNECTION_TIMEOUT, 30,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END)
        : MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, handle, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
        MHD_OPTION_CONNECTION_LIMIT, 4096, MHD_OPTION_CONNECTION_TIMEOUT, 30,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address, MHD_OPTION_END);
    if (!daemon) {
        fprintf(stderr, "mhd-floor: libmicrohttpd did not start\n");
        return 1;
    }
    if (own_accept) {
        pthread_t accepting;
        pthread_create(&accepting, NULL, acceptor, daemon);
    } else {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
        port = info ? info->port : 0;
    }
    printf("listening on http://127.0.0.1:%u\n", port);
    fflush(stdout);
    pause();
    return 0;
}
