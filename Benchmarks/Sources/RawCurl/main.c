// The floor: libcurl's multi interface driven directly from C, as Tern's CurlTransport drives
// it (one multi handle, keep-alive, decompression on, each body kept in memory), with nothing
// above it: no promise, no pipeline, no Foundation. Tern's cost per request is measured against
// this, against the same nginx, in the same run of Benchmarks/nginx/bench.
//
//     RawCurl <url> [in flight] [requests per round] [rounds] [fresh]
//
// `fresh` gives each request a new easy handle, freed after it, as Tern must with a libcurl
// older than 8.1.0: the floor Tern can reach there. Over HTTPS, TERN_BENCH_CA names the PEM file
// of the test CA to trust.
//
// libcurl is loaded at run time, as Tern loads it, so no curl headers are needed to build.
#include "raw_curl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: RawCurl <url> [in flight] [requests per round] [rounds] [fresh]\n"); return 2; }
    const char *url = argv[1];
    int width = argc > 2 ? atoi(argv[2]) : 1;
    int count = argc > 3 ? atoi(argv[3]) : 1000;
    int rounds = argc > 4 ? atoi(argv[4]) : 10;
    int fresh = argc > 5 && strcmp(argv[5], "fresh") == 0;
    raw_curl *raw = raw_curl_open(url, width);
    if (fresh) raw_curl_use_fresh_handles(raw);
    const char *authorities = getenv("TERN_BENCH_CA");
    if (authorities && *authorities) raw_curl_trust(raw, authorities);
    raw_curl_round(raw, width * 10, NULL, NULL);   // warm up: connections open
    double *rates = calloc(rounds, sizeof(double)), *cpu = calloc(rounds, sizeof(double));
    for (int round = 0; round < rounds; round++) {
        double wall = seconds(CLOCK_MONOTONIC), used = cpuSeconds();
        int ok = raw_curl_round(raw, count, NULL, NULL);
        wall = seconds(CLOCK_MONOTONIC) - wall;
        used = cpuSeconds() - used;
        if (ok != count) { fprintf(stderr, "only %d of %d answered 200\n", ok, count); return 1; }
        rates[round] = count / wall;
        cpu[round] = used / count * 1e6;
    }
    qsort(rates, rounds, sizeof(double), ascending);
    qsort(cpu, rounds, sizeof(double), ascending);
    printf("raw libcurl from C%s, %s, %d in flight: %.0f req/s, %.1f us CPU per request (medians of %d rounds of %d)\n",
           fresh ? ", a new handle per request" : "", url, width, rates[rounds / 2], cpu[rounds / 2], rounds, count);
    return 0;
}
