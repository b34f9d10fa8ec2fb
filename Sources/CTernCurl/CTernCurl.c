#define _GNU_SOURCE
#include "CTernCurl.h"
#include <dlfcn.h>
#include <pthread.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
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

/// libcurl's struct curl_sockaddr: what socket(2) is asked for, and the address.
struct tern_curl_sockaddr {
    int family;
    int socktype;
    int protocol;
    unsigned int addrlen;
    struct sockaddr addr;
};

int tern_descriptor_is_reserved(int descriptor) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
    return (rlim_t)descriptor + TERN_DESCRIPTOR_RESERVE >= limit.rlim_cur;
}

/// A socket kept out of the reserve: one the kernel numbered there (the lowest free number, so
/// every one below it is taken) is closed, and libcurl told none could be made (EMFILE).
static int kept_out_of_reserve(int made) {
    if (made < 0 || !tern_descriptor_is_reserved(made)) return made;
    close(made);
    errno = EMFILE;
    return -1;
}

/// libcurl's own socket(2) (7.88 passes no SOCK_CLOEXEC), close-on-exec and out of the
/// descriptors' reserve; -1 (CURL_SOCKET_BAD) with errno set when none can be made, and the
/// exchange's notes told when that was for want of a descriptor.
static int open_socket_closed_on_exec(void *context, int purpose, struct tern_curl_sockaddr *address) {
    (void)purpose;
    int made = -1;
#if defined(SOCK_CLOEXEC)
    made = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (made < 0 && errno == EINVAL)
#endif
    {
        // A kernel without SOCK_CLOEXEC: marked at once after, which a fork in between would miss.
        made = socket(address->family, address->socktype, address->protocol);
        if (made >= 0) fcntl(made, F_SETFD, FD_CLOEXEC);
    }
    made = kept_out_of_reserve(made);
    if (made < 0 && (errno == EMFILE || errno == ENFILE) && context != NULL) {
        ((tern_exchange_notes *)context)->lacked_a_descriptor = errno;
    }
    return made;
}

int tern_curl_setopt_sockets_closed_on_exec(const TernCurl *curl, void *easy, int option, int dataOption, tern_exchange_notes *notes) {
    int result = curl->easy_setopt(easy, option, open_socket_closed_on_exec);
    return result != 0 ? result : curl->easy_setopt(easy, dataOption, (void *)notes);
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
    if (!tern_socket_is_bound_to(socket, localPort)) return -1;
    return 1;   // bytes waiting, the peer hung up, or the socket failed
}

int tern_socket_is_bound_to(int socket, int localPort) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(socket, (struct sockaddr *)&address, &length) != 0) return 0;
    int port = address.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&address)->sin6_port)
             : address.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&address)->sin_port) : -1;
    return port == localPort;
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

/// The layouts of libcurl's curl_slist and curl_certinfo.
struct tern_slist { char *data; struct tern_slist *next; };
struct tern_certinfo { int num_of_certs; struct tern_slist **certinfo; };
#define TERN_CURLINFO_CERTINFO (0x400000 + 34)

const char *tern_curl_certificate_pem(const TernCurl *curl, void *easy, int index) {
    struct tern_certinfo *chain = NULL;
    if (curl->easy_getinfo(easy, TERN_CURLINFO_CERTINFO, &chain) != 0 || chain == NULL) return NULL;
    if (index < 0 || index >= chain->num_of_certs || chain->certinfo == NULL) return NULL;
    for (struct tern_slist *field = chain->certinfo[index]; field != NULL; field = field->next) {
        if (field->data != NULL && strncmp(field->data, "Cert:", 5) == 0) return field->data + 5;
    }
    return NULL;
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

// The decompressors libcurl links, loaded at run time as libcurl is: zlib (its stream laid out
// as its ABI has had it since 1.0), brotli's decoder and zstd, each optional. No header is
// needed to build.
typedef struct {
    const unsigned char *next_in; unsigned avail_in; unsigned long total_in;
    unsigned char *next_out; unsigned avail_out; unsigned long total_out;
    const char *msg; void *state;
    void *zalloc; void *zfree; void *opaque;
    int data_type; unsigned long adler; unsigned long reserved;
} tern_z_stream;

typedef struct { const void *src; size_t size; size_t pos; } tern_zstd_in;
typedef struct { void *dst; size_t size; size_t pos; } tern_zstd_out;

static struct {
    int (*init)(tern_z_stream *, int, const char *, int);
    int (*inflate)(tern_z_stream *, int);
    int (*reset)(tern_z_stream *, int);
    int (*end)(tern_z_stream *);
    const char *(*version)(void);
} tern_zlib;

static struct {
    void *(*create)(void *, void *, void *);
    void (*destroy)(void *);
    int (*decompress)(void *, size_t *, const uint8_t **, size_t *, uint8_t **, size_t *);
    int (*error_code)(const void *);
    const char *(*error_string)(int);
} tern_brotli;

static struct {
    void *(*create)(void);
    size_t (*free)(void *);
    size_t (*decompress)(void *, tern_zstd_out *, tern_zstd_in *);
    size_t (*set_parameter)(void *, int, int);
    unsigned (*is_error)(size_t);
    const char *(*error_name)(size_t);
} tern_zstd;

static pthread_once_t tern_decoders_once = PTHREAD_ONCE_INIT;

/// Fills `table` from `library`, `count` symbols by name; clears it unless every one is found.
static void tern_find_all(void *library, void **table, const char *const *names, int count) {
    for (int index = 0; library && index < count; index++) {
        if (!(table[index] = dlsym(library, names[index]))) break;
        if (index == count - 1) return;
    }
    for (int index = 0; index < count; index++) table[index] = NULL;
}

static void tern_decoders_open(void) {
#if defined(__linux__)
    static const char *const zlib[] = {"inflateInit2_", "inflate", "inflateReset2", "inflateEnd", "zlibVersion"};
    tern_find_all(dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL), (void **)&tern_zlib, zlib, 5);
    static const char *const brotli[] = {"BrotliDecoderCreateInstance", "BrotliDecoderDestroyInstance",
        "BrotliDecoderDecompressStream", "BrotliDecoderGetErrorCode", "BrotliDecoderErrorString"};
    tern_find_all(dlopen("libbrotlidec.so.1", RTLD_NOW | RTLD_LOCAL), (void **)&tern_brotli, brotli, 5);
    static const char *const zstd[] = {"ZSTD_createDStream", "ZSTD_freeDStream", "ZSTD_decompressStream",
        "ZSTD_DCtx_setParameter", "ZSTD_isError", "ZSTD_getErrorName"};
    tern_find_all(dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL), (void **)&tern_zstd, zstd, 6);
#endif
}

int tern_coding_available(int coding) {
    pthread_once(&tern_decoders_once, tern_decoders_open);
    switch (coding) {
    case TERN_CODING_GZIP: case TERN_CODING_ZLIB: case TERN_CODING_RAW_DEFLATE: return tern_zlib.init != NULL;
    case TERN_CODING_BROTLI: return tern_brotli.create != NULL;
    case TERN_CODING_ZSTD: return tern_zstd.create != NULL;
    default: return 0;
    }
}

struct tern_decoder {
    int coding;
    tern_z_stream zlib;     // zlib's codings
    void *state;            // brotli's or zstd's; NULL for zlib's
    int zlib_started;
    size_t zstd_error;
};

static int tern_z_window(int coding) {
    return coding == TERN_CODING_GZIP ? 31 : coding == TERN_CODING_ZLIB ? 15 : -15;
}

tern_decoder *tern_decoder_new(int coding) {
    if (!tern_coding_available(coding)) return NULL;
    tern_decoder *decoder = calloc(1, sizeof(tern_decoder));
    if (!decoder) return NULL;
    decoder->coding = coding;
    if (coding == TERN_CODING_BROTLI) {
        decoder->state = tern_brotli.create(NULL, NULL, NULL);
    } else if (coding == TERN_CODING_ZSTD) {
        decoder->state = tern_zstd.create();
        // At most an 8 MiB window (2^23), as browsers hold HTTP's zstd to (RFC 8878): a frame
        // may ask for 2 GiB, and the default let one response take 128 MiB. No decoder at all
        // rather than one without the cap.
        if (decoder->state && tern_zstd.is_error(tern_zstd.set_parameter(decoder->state, 100, 23))) {   // ZSTD_d_windowLogMax
            tern_zstd.free(decoder->state);
            decoder->state = NULL;
        }
    } else if (tern_zlib.init(&decoder->zlib, tern_z_window(coding), tern_zlib.version(), (int)sizeof(tern_z_stream)) == 0) {
        decoder->zlib_started = 1;
    }
    if (!decoder->state && !decoder->zlib_started) {
        free(decoder);
        return NULL;
    }
    return decoder;
}

int tern_decoder_restart(tern_decoder *decoder, int coding) {
    if (!decoder->zlib_started || coding == TERN_CODING_BROTLI || coding == TERN_CODING_ZSTD) return -1;
    decoder->coding = coding;
    return tern_zlib.reset(&decoder->zlib, tern_z_window(coding)) == 0 ? 0 : -1;
}

int tern_decode(tern_decoder *decoder, const void *input, size_t input_count, size_t *consumed,
                void *output, size_t output_count, size_t *produced) {
    *consumed = 0;
    *produced = 0;
    if (decoder->coding == TERN_CODING_BROTLI) {
        size_t available_in = input_count, available_out = output_count;
        const uint8_t *next_in = input;
        uint8_t *next_out = output;
        int result = tern_brotli.decompress(decoder->state, &available_in, &next_in, &available_out, &next_out, NULL);
        *consumed = input_count - available_in;
        *produced = output_count - available_out;
        return result == 1 ? 1 : result == 0 ? -1 : 0;   // SUCCESS, ERROR, or more input or output wanted
    }
    if (decoder->coding == TERN_CODING_ZSTD) {
        tern_zstd_in in = {input, input_count, 0};
        tern_zstd_out out = {output, output_count, 0};
        size_t result = tern_zstd.decompress(decoder->state, &out, &in);
        *consumed = in.pos;
        *produced = out.pos;
        if (tern_zstd.is_error(result)) {
            decoder->zstd_error = result;
            return -1;
        }
        return result == 0 ? 1 : 0;   // 0: a frame decoded and flushed whole
    }
    tern_z_stream *stream = &decoder->zlib;
    stream->next_in = input;
    stream->avail_in = input_count > 0x40000000 ? 0x40000000 : (unsigned)input_count;
    stream->next_out = output;
    stream->avail_out = output_count > 0x40000000 ? 0x40000000 : (unsigned)output_count;
    unsigned offered_in = stream->avail_in, offered_out = stream->avail_out;
    int result = tern_zlib.inflate(stream, 0);   // Z_NO_FLUSH
    *consumed = offered_in - stream->avail_in;
    *produced = offered_out - stream->avail_out;
    return result == 0 ? 0 : result == 1 ? 1 : result == -5 ? 2 : -1;   // Z_OK, Z_STREAM_END, Z_BUF_ERROR
}

const char *tern_decoder_message(const tern_decoder *decoder) {
    if (!decoder) return NULL;
    if (decoder->coding == TERN_CODING_BROTLI) return tern_brotli.error_string(tern_brotli.error_code(decoder->state));
    if (decoder->coding == TERN_CODING_ZSTD) return decoder->zstd_error ? tern_zstd.error_name(decoder->zstd_error) : NULL;
    return decoder->zlib.msg;
}

void tern_decoder_free(tern_decoder *decoder) {
    if (!decoder) return;
    if (decoder->coding == TERN_CODING_BROTLI) tern_brotli.destroy(decoder->state);
    else if (decoder->coding == TERN_CODING_ZSTD) tern_zstd.free(decoder->state);
    else tern_zlib.end(&decoder->zlib);
    free(decoder);
}
