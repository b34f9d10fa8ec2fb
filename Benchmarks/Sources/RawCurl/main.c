// The floor: libcurl's multi interface driven directly from C, as Tern's CurlTransport drives
// it (one multi handle, keep-alive, decompression on, each body kept in memory), with nothing
// above it: no promise, no pipeline, no Foundation. Tern's cost per request is measured against
// this, against the same nginx, in the same run of Benchmarks/nginx/bench.
//
//     RawCurl <url> [in flight] [requests per round] [rounds]
//
// libcurl is loaded at run time, as Tern loads it, so no curl headers are needed to build.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

// libcurl's stable ABI: option and info numbers, and the one message kind read here.
enum { OPT_WRITEDATA = 10001, OPT_URL = 10002, OPT_WRITEFUNCTION = 20011, OPT_NOSIGNAL = 99, OPT_ACCEPT_ENCODING = 10102 };
enum { MOPT_MAXCONNECTS = 6 };
enum { INFO_RESPONSE_CODE = 0x200002 };
enum { MSG_DONE = 1 };
typedef struct { int msg; void *easy; union { void *whatever; int result; } data; } CurlMessage;

static struct {
    int (*global_init)(long);
    void *(*easy_init)(void);
    int (*easy_setopt)(void *, int, ...);
    int (*easy_getinfo)(void *, int, ...);
    void *(*multi_init)(void);
    int (*multi_setopt)(void *, int, ...);
    int (*multi_add_handle)(void *, void *);
    int (*multi_remove_handle)(void *, void *);
    int (*multi_perform)(void *, int *);
    int (*multi_poll)(void *, void *, unsigned, int, int *);
    CurlMessage *(*multi_info_read)(void *, int *);
} curl;

static void *find(void *library, const char *name) {
    void *symbol = dlsym(library, name);
    if (!symbol) { fprintf(stderr, "libcurl has no %s\n", name); exit(1); }
    return symbol;
}

static void load(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW);
    if (!library) { fprintf(stderr, "%s\n", dlerror()); exit(1); }
    curl.global_init = find(library, "curl_global_init");
    curl.easy_init = find(library, "curl_easy_init");
    curl.easy_setopt = find(library, "curl_easy_setopt");
    curl.easy_getinfo = find(library, "curl_easy_getinfo");
    curl.multi_init = find(library, "curl_multi_init");
    curl.multi_setopt = find(library, "curl_multi_setopt");
    curl.multi_add_handle = find(library, "curl_multi_add_handle");
    curl.multi_remove_handle = find(library, "curl_multi_remove_handle");
    curl.multi_perform = find(library, "curl_multi_perform");
    curl.multi_poll = find(library, "curl_multi_poll");
    curl.multi_info_read = find(library, "curl_multi_info_read");
    curl.global_init(3);   // CURL_GLOBAL_ALL
}

/// One transfer's body, kept whole in memory as Tern keeps a body it decodes.
typedef struct { char *bytes; size_t count, capacity; } Body;

static size_t keep(char *data, size_t size, size_t count, void *context) {
    Body *body = context;
    size_t length = size * count;
    if (body->count + length > body->capacity) {
        body->capacity = (body->count + length) * 2;
        body->bytes = realloc(body->bytes, body->capacity);
    }
    memcpy(body->bytes + body->count, data, length);
    body->count += length;
    return length;
}

static double seconds(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

static double cpuSeconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/// Sends `count` GETs of `url`, `width` at a time; returns how many were answered 200.
static int round_of(void *multi, void **handles, Body *bodies, int width, int count) {
    int started = 0, done = 0, ok = 0, running = 0;
    for (; started < width && started < count; started++) {
        bodies[started].count = 0;
        curl.multi_add_handle(multi, handles[started]);
    }
    while (done < count) {
        curl.multi_perform(multi, &running);
        int queued = 0;
        CurlMessage *message;
        while ((message = curl.multi_info_read(multi, &queued))) {
            if (message->msg != MSG_DONE) continue;
            void *easy = message->easy;
            long status = 0;
            curl.easy_getinfo(easy, INFO_RESPONSE_CODE, &status);
            if (message->data.result == 0 && status == 200) ok++;
            curl.multi_remove_handle(multi, easy);
            done++;
            if (started < count) {
                for (int slot = 0; slot < width; slot++) {
                    if (handles[slot] == easy) { bodies[slot].count = 0; break; }
                }
                curl.multi_add_handle(multi, easy);
                started++;
            }
        }
        if (done < count) curl.multi_poll(multi, NULL, 0, 1000, NULL);
    }
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: RawCurl <url> [in flight] [requests per round] [rounds]\n"); return 2; }
    const char *url = argv[1];
    int width = argc > 2 ? atoi(argv[2]) : 1;
    int count = argc > 3 ? atoi(argv[3]) : 1000;
    int rounds = argc > 4 ? atoi(argv[4]) : 10;
    load();
    void *multi = curl.multi_init();
    curl.multi_setopt(multi, MOPT_MAXCONNECTS, 32L);
    void **handles = calloc(width, sizeof(void *));
    Body *bodies = calloc(width, sizeof(Body));
    for (int slot = 0; slot < width; slot++) {
        handles[slot] = curl.easy_init();
        curl.easy_setopt(handles[slot], OPT_URL, url);
        curl.easy_setopt(handles[slot], OPT_NOSIGNAL, 1L);
        curl.easy_setopt(handles[slot], OPT_ACCEPT_ENCODING, "");
        curl.easy_setopt(handles[slot], OPT_WRITEFUNCTION, keep);
        curl.easy_setopt(handles[slot], OPT_WRITEDATA, &bodies[slot]);
    }
    round_of(multi, handles, bodies, width, width * 10);   // warm up: connections open
    double *rates = calloc(rounds, sizeof(double)), *cpu = calloc(rounds, sizeof(double));
    for (int round = 0; round < rounds; round++) {
        double wall = seconds(CLOCK_MONOTONIC), used = cpuSeconds();
        int ok = round_of(multi, handles, bodies, width, count);
        wall = seconds(CLOCK_MONOTONIC) - wall;
        used = cpuSeconds() - used;
        if (ok != count) { fprintf(stderr, "only %d of %d answered 200\n", ok, count); return 1; }
        rates[round] = count / wall;
        cpu[round] = used / count * 1e6;
    }
    qsort(rates, rounds, sizeof(double), ascending);
    qsort(cpu, rounds, sizeof(double), ascending);
    printf("raw libcurl from C, %d in flight: %.0f req/s, %.1f us CPU per request (medians of %d rounds of %d)\n",
           width, rates[rounds / 2], cpu[rounds / 2], rounds, count);
    return 0;
}
