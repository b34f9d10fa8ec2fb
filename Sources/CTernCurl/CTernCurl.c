#define _GNU_SOURCE
#include "CTernCurl.h"
#include <dlfcn.h>
#include <pthread.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

void tern_name_this_thread(const char *name) {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), name);
#elif defined(__APPLE__)
    pthread_setname_np(name);
#endif
}

/// One per thread: a loop's thread can tell itself from the others with no lock.
static _Thread_local const void *thread_loop;

void tern_mark_thread_loop(const void *loop) {
    thread_loop = loop;
}

const void *tern_thread_loop(void) {
    return thread_loop;
}

#if defined(__linux__)
/// Threads in libcurl hold it to read; the exit handler takes it to write, and keeps it. Writers
/// first where the C library can say so (glibc), so that a loop's next turn cannot keep exit
/// waiting.
#if defined(PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP)
static pthread_rwlock_t in_libcurl = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#else
static pthread_rwlock_t in_libcurl = PTHREAD_RWLOCK_INITIALIZER;
#endif
/// How deep the calling thread is in tern_curl_enter: it holds the lock once, whatever the depth.
static _Thread_local int depth_in_libcurl;

void tern_curl_enter(void) {
    if (depth_in_libcurl++ == 0) pthread_rwlock_rdlock(&in_libcurl);
}

void tern_curl_leave(void) {
    if (--depth_in_libcurl == 0) pthread_rwlock_unlock(&in_libcurl);
}

static void wait_for_threads_in_libcurl(void) {
    // Exiting from inside (the app's code, run in a loop's turn), it cannot take the lock it holds.
    if (depth_in_libcurl > 0) return;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 2;
    // Never released: no other thread enters again. This one may, in what exit runs after this
    // (a deinit that frees a handle): it holds the lock, so it counts as inside already.
    if (pthread_rwlock_timedwrlock(&in_libcurl, &deadline) == 0) depth_in_libcurl = 1;
}

void tern_curl_wait_at_exit(void) {
    atexit(wait_for_threads_in_libcurl);
}
#else
// libcurl is Linux's transport; elsewhere nothing calls these.
void tern_curl_enter(void) {}
void tern_curl_leave(void) {}
void tern_curl_wait_at_exit(void) {}
#endif

/// OpenSSL frees its state in an exit handler, under any thread still using it: a loop thread
/// in a TLS handshake as the process exited took a freed lock (SIGSEGV, 8 exits in 400 with 64
/// HTTPS requests under way). Told so before its first initialization, which libcurl's global
/// one is, it registers no such handler (OpenSSL 1.1.1 and later), and threads Tern does not
/// run (URLSession's) are spared too; where it came too late, tern_curl_wait_at_exit holds
/// exit for Tern's own. Searched in libcurl and what it links.
static void keep_openssl_past_exit(void *library) {
    unsigned long (*version)(void) = (unsigned long (*)(void))dlsym(library, "OpenSSL_version_num");
    int (*initialize)(uint64_t, const void *) = (int (*)(uint64_t, const void *))dlsym(library, "OPENSSL_init_crypto");
    if (version && initialize && version() >= 0x10101000UL) initialize(0x00080000UL /* OPENSSL_INIT_NO_ATEXIT */, NULL);
}

int tern_curl_load(TernCurl *curl, const char *path, const char **error) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        *error = dlerror();
        return -1;
    }
    curl->library = library;
    keep_openssl_past_exit(library);
#define TERN_FIND(field, name) \
    if (!(*(void **)&curl->field = dlsym(library, name))) { *error = name; dlclose(library); return -2; }
    TERN_FIND(global_init, "curl_global_init")
    TERN_FIND(easy_init, "curl_easy_init")
    TERN_FIND(easy_cleanup, "curl_easy_cleanup")
    TERN_FIND(easy_reset, "curl_easy_reset")
    TERN_FIND(easy_setopt, "curl_easy_setopt")
    TERN_FIND(easy_getinfo, "curl_easy_getinfo")
    TERN_FIND(easy_pause, "curl_easy_pause")
    TERN_FIND(easy_strerror, "curl_easy_strerror")
    TERN_FIND(multi_init, "curl_multi_init")
    TERN_FIND(multi_setopt, "curl_multi_setopt")
    TERN_FIND(multi_add_handle, "curl_multi_add_handle")
    TERN_FIND(multi_remove_handle, "curl_multi_remove_handle")
    TERN_FIND(multi_perform, "curl_multi_perform")
    TERN_FIND(multi_poll, "curl_multi_poll")
    TERN_FIND(multi_wakeup, "curl_multi_wakeup")
    TERN_FIND(multi_info_read, "curl_multi_info_read")
    TERN_FIND(multi_cleanup, "curl_multi_cleanup")
    TERN_FIND(slist_append, "curl_slist_append")
    TERN_FIND(slist_free_all, "curl_slist_free_all")
    TERN_FIND(version, "curl_version")
#undef TERN_FIND
    // Searched in libcurl and what it links: there only, since it is loaded locally.
    *(void **)&curl->ssl_alpn_selected = dlsym(library, "SSL_get0_alpn_selected");
    return 0;
}

int tern_curl_negotiated_http2(const TernCurl *curl, void *easy) {
    // CURLINFO_TLS_SSL_PTR, a struct curl_tlssessioninfo: the TLS library, and its connection
    // object (an SSL * for CURLSSLBACKEND_OPENSSL, 1).
    struct { int backend; void *internals; } *session = NULL;
    if (!curl->ssl_alpn_selected || curl->easy_getinfo(easy, 0x400000 + 45, &session) != 0 || !session) return -1;
    if (session->backend != 1 || !session->internals) return -1;
    const unsigned char *protocol = NULL;
    unsigned int length = 0;
    curl->ssl_alpn_selected(session->internals, &protocol, &length);
    return length == 2 && protocol[0] == 'h' && protocol[1] == '2';
}

int tern_curl_setopt_long(const TernCurl *curl, void *easy, int option, long value) {
    return curl->easy_setopt(easy, option, value);
}

int tern_curl_setopt_offset(const TernCurl *curl, void *easy, int option, int64_t value) {
    return curl->easy_setopt(easy, option, value);
}

int tern_curl_setopt_pointer(const TernCurl *curl, void *easy, int option, const void *value) {
    return curl->easy_setopt(easy, option, value);
}

int tern_curl_setopt_data_callback(const TernCurl *curl, void *easy, int option, tern_curl_data_callback callback) {
    return curl->easy_setopt(easy, option, callback);
}

int tern_curl_setopt_progress_callback(const TernCurl *curl, void *easy, int option, tern_curl_progress_callback callback) {
    return curl->easy_setopt(easy, option, callback);
}

int tern_curl_setopt_prereq_callback(const TernCurl *curl, void *easy, int option, tern_curl_prereq_callback callback) {
    return curl->easy_setopt(easy, option, callback);
}

int tern_curl_setopt_debug_callback(const TernCurl *curl, void *easy, int option, tern_curl_debug_callback callback) {
    return curl->easy_setopt(easy, option, callback);
}

int tern_curl_setopt_seek_callback(const TernCurl *curl, void *easy, int option, tern_curl_seek_callback callback) {
    return curl->easy_setopt(easy, option, callback);
}

int tern_curl_getinfo_socket(const TernCurl *curl, void *easy, int info, int *value) {
    return curl->easy_getinfo(easy, info, value);
}

int tern_socket_has_input(int socket, int localPort) {
    // Peeked first: nothing waiting is the common answer, and it stands whichever socket the
    // number now is (a connection with these ends on another socket is new, with nothing to
    // check). Only a "yes" must come from the connection's own socket, so only then is it asked.
    char byte;
    ssize_t count = recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(socket, (struct sockaddr *)&address, &length) != 0) return -1;
    int port = address.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&address)->sin6_port)
             : address.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&address)->sin_port) : -1;
    if (port != localPort) return -1;
    return 1;   // bytes waiting, the peer hung up, or the socket failed
}

int tern_curl_getinfo_long(const TernCurl *curl, void *easy, int info, long *value) {
    return curl->easy_getinfo(easy, info, value);
}

int tern_curl_getinfo_string(const TernCurl *curl, void *easy, int info, char **value) {
    return curl->easy_getinfo(easy, info, value);
}

int tern_curl_getinfo_offset(const TernCurl *curl, void *easy, int info, int64_t *value) {
    return curl->easy_getinfo(easy, info, value);
}

int tern_curl_multi_setopt_long(const TernCurl *curl, void *multi, int option, long value) {
    return curl->multi_setopt(multi, option, value);
}

/// The layout of libcurl's CURLMsg.
struct TernCurlMessage {
    int kind;
    void *easy;
    union {
        void *whatever;
        int result;
    } data;
};

int tern_curl_message_done(const void *message, void **easy, int *result) {
    const struct TernCurlMessage *m = message;
    if (m->kind != 1) return 0;  // CURLMSG_DONE
    *easy = m->easy;
    *result = m->data.result;
    return 1;
}

typedef struct psl_ctx_st psl_ctx_t;
static const psl_ctx_t *tern_psl;
static int (*tern_psl_acceptable)(const psl_ctx_t *, const char *, const char *);
static int (*tern_psl_public)(const psl_ctx_t *, const char *, int);
static pthread_once_t tern_psl_once = PTHREAD_ONCE_INIT;

static void tern_psl_open(void) {
#if defined(__linux__)
    void *library = dlopen("libpsl.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
    psl_ctx_t *(*latest)(const char *) = (psl_ctx_t *(*)(const char *))dlsym(library, "psl_latest");
    const psl_ctx_t *(*builtin)(void) = (const psl_ctx_t *(*)(void))dlsym(library, "psl_builtin");
    *(void **)&tern_psl_acceptable = dlsym(library, "psl_is_cookie_domain_acceptable");
    *(void **)&tern_psl_public = dlsym(library, "psl_is_public_suffix2");
    if (!tern_psl_acceptable || !tern_psl_public) return;
    // The newer of the list built in and the system's file; kept for the process's life.
    const psl_ctx_t *context = latest ? latest(NULL) : NULL;
    if (!context && builtin) context = builtin();
    tern_psl = context;
#endif
}

int tern_psl_load(void) {
    pthread_once(&tern_psl_once, tern_psl_open);
    return tern_psl != NULL && tern_psl_acceptable != NULL && tern_psl_public != NULL;
}

int tern_psl_is_public_suffix(const char *domain) {
    return tern_psl_public(tern_psl, domain, 0x03);   // PSL_TYPE_ANY, with the "*" rule
}

int tern_psl_cookie_domain_acceptable(const char *host, const char *domain) {
    return tern_psl_acceptable(tern_psl, host, domain);
}

// zlib, loaded at run time as libcurl is: zlib's stream as its ABI lays it out (unchanged since
// 1.0), so that no header is needed to build.
typedef struct {
    const unsigned char *next_in; unsigned avail_in; unsigned long total_in;
    unsigned char *next_out; unsigned avail_out; unsigned long total_out;
    const char *msg; void *state;
    void *zalloc; void *zfree; void *opaque;
    int data_type; unsigned long adler; unsigned long reserved;
} tern_z_stream;

struct tern_inflater { tern_z_stream stream; };

static int (*tern_z_init)(tern_z_stream *, int, const char *, int);
static int (*tern_z_inflate)(tern_z_stream *, int);
static int (*tern_z_reset)(tern_z_stream *, int);
static int (*tern_z_end)(tern_z_stream *);
static const char *(*tern_z_version)(void);
static pthread_once_t tern_zlib_once = PTHREAD_ONCE_INIT;

static void tern_zlib_open(void) {
#if defined(__linux__)
    void *library = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
    *(void **)&tern_z_init = dlsym(library, "inflateInit2_");
    *(void **)&tern_z_inflate = dlsym(library, "inflate");
    *(void **)&tern_z_reset = dlsym(library, "inflateReset2");
    *(void **)&tern_z_end = dlsym(library, "inflateEnd");
    *(void **)&tern_z_version = dlsym(library, "zlibVersion");
#endif
}

int tern_zlib_load(void) {
    pthread_once(&tern_zlib_once, tern_zlib_open);
    return tern_z_init && tern_z_inflate && tern_z_reset && tern_z_end && tern_z_version;
}

tern_inflater *tern_inflater_new(int window_bits) {
    if (!tern_zlib_load()) return NULL;
    tern_inflater *inflater = calloc(1, sizeof(tern_inflater));
    if (!inflater) return NULL;
    if (tern_z_init(&inflater->stream, window_bits, tern_z_version(), (int)sizeof(tern_z_stream)) != 0) {
        free(inflater);
        return NULL;
    }
    return inflater;
}

int tern_inflater_reset(tern_inflater *inflater, int window_bits) {
    return tern_z_reset(&inflater->stream, window_bits);
}

int tern_inflate(tern_inflater *inflater, const void *input, size_t input_count, size_t *consumed,
                 void *output, size_t output_count, size_t *produced) {
    tern_z_stream *stream = &inflater->stream;
    stream->next_in = input;
    stream->avail_in = input_count > 0x40000000 ? 0x40000000 : (unsigned)input_count;
    stream->next_out = output;
    stream->avail_out = output_count > 0x40000000 ? 0x40000000 : (unsigned)output_count;
    unsigned offered_in = stream->avail_in, offered_out = stream->avail_out;
    int result = tern_z_inflate(stream, 0);   // Z_NO_FLUSH
    *consumed = offered_in - stream->avail_in;
    *produced = offered_out - stream->avail_out;
    return result;
}

const char *tern_inflater_message(const tern_inflater *inflater) {
    return inflater ? inflater->stream.msg : NULL;
}

void tern_inflater_free(tern_inflater *inflater) {
    if (!inflater) return;
    tern_z_end(&inflater->stream);
    free(inflater);
}
