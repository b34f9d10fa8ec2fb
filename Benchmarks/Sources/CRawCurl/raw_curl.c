#include "raw_curl.h"
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// libcurl's stable ABI: option and info numbers, and the one message kind read here.
enum { OPT_WRITEDATA = 10001, OPT_URL = 10002, OPT_WRITEFUNCTION = 20011, OPT_NOSIGNAL = 99, OPT_ACCEPT_ENCODING = 10102,
       OPT_CAINFO = 10065, OPT_CAPATH = 10097, OPT_PIPEWAIT = 237 };
enum { MOPT_MAXCONNECTS = 6 };
enum { INFO_RESPONSE_CODE = 0x200002 };
enum { MSG_DONE = 1 };
typedef struct { int msg; void *easy; union { void *whatever; int result; } data; } CurlMessage;

static struct {
    int (*global_init)(long);
    void *(*easy_init)(void);
    void (*easy_cleanup)(void *);
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
    curl.easy_cleanup = find(library, "curl_easy_cleanup");
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

struct raw_curl { void *multi; void **handles; Body *bodies; int width; const char *url; int fresh; const char *authorities; };

/// Over HTTPS: only the authorities in the PEM file `authorities` are trusted, and requests
/// sent together wait to learn whether the first connection speaks HTTP/2, then share it, as
/// CurlTransport sets its handles.
static void trust(void *easy, const char *authorities) {
    curl.easy_setopt(easy, OPT_CAINFO, authorities);
    curl.easy_setopt(easy, OPT_CAPATH, (char *)NULL);
    curl.easy_setopt(easy, OPT_PIPEWAIT, 1L);
}

/// A handle for `url` whose bodies go to `body`.
static void *make_handle(const char *url, Body *body, const char *authorities) {
    void *easy = curl.easy_init();
    curl.easy_setopt(easy, OPT_URL, url);
    curl.easy_setopt(easy, OPT_NOSIGNAL, 1L);
    curl.easy_setopt(easy, OPT_ACCEPT_ENCODING, "");
    curl.easy_setopt(easy, OPT_WRITEFUNCTION, keep);
    curl.easy_setopt(easy, OPT_WRITEDATA, body);
    if (authorities) trust(easy, authorities);
    return easy;
}

void raw_curl_use_fresh_handles(raw_curl *raw) { raw->fresh = 1; }

void raw_curl_trust(raw_curl *raw, const char *authorities) {
    raw->authorities = strdup(authorities);
    for (int slot = 0; slot < raw->width; slot++) trust(raw->handles[slot], raw->authorities);
}

raw_curl *raw_curl_open(const char *url, int width) {
    static int loaded;
    if (!loaded) { load(); loaded = 1; }
    raw_curl *raw = calloc(1, sizeof(raw_curl));
    raw->multi = curl.multi_init();
    // Every connection in flight is kept for the next request: with fewer kept than in flight,
    // libcurl closed the rest after each answer and opened new ones (8% of the floor's time in
    // connect at 64 in flight, 5 TCP segments per request instead of 3).
    curl.multi_setopt(raw->multi, MOPT_MAXCONNECTS, (long)(width > 32 ? width : 32));
    raw->width = width;
    raw->handles = calloc(width, sizeof(void *));
    raw->bodies = calloc(width, sizeof(Body));
    raw->url = strdup(url);
    for (int slot = 0; slot < width; slot++) raw->handles[slot] = make_handle(url, &raw->bodies[slot], NULL);
    return raw;
}

int raw_curl_round(raw_curl *raw, int count, raw_curl_body body, void *context) {
    void *multi = raw->multi, **handles = raw->handles;
    Body *bodies = raw->bodies;
    int width = raw->width;
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
            int slot = 0;
            while (handles[slot] != easy) slot++;
            long status = 0;
            curl.easy_getinfo(easy, INFO_RESPONSE_CODE, &status);
            if (message->data.result == 0 && status == 200 && (!body || body(bodies[slot].bytes, bodies[slot].count, context))) ok++;
            curl.multi_remove_handle(multi, easy);
            done++;
            bodies[slot].count = 0;
            if (raw->fresh) {
                curl.easy_cleanup(easy);
                easy = handles[slot] = make_handle(raw->url, &bodies[slot], raw->authorities);
            }
            if (started < count) {
                curl.multi_add_handle(multi, easy);
                started++;
            }
        }
        if (done < count) curl.multi_poll(multi, NULL, 0, 1000, NULL);
    }
    return ok;
}
