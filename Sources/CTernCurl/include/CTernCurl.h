// libcurl, loaded at run time: the functions Tern calls, and non-variadic doors to the variadic
// ones. libcurl's option numbers and these prototypes are its stable ABI; declaring them here
// spares Tern the curl headers (and a -dev package) at build time.
#ifndef CTERN_CURL_H
#define CTERN_CURL_H

#include <stddef.h>
#include <stdint.h>

/// What a write, header or read callback looks like.
typedef size_t (*tern_curl_data_callback)(char *buffer, size_t size, size_t count, void *context);
/// What a transfer-progress callback looks like; non-zero aborts the transfer.
typedef int (*tern_curl_progress_callback)(void *context, int64_t downloadTotal, int64_t downloaded, int64_t uploadTotal, int64_t uploaded);

/// What a pre-request callback looks like (CURLOPT_PREREQFUNCTION): called once a connection is
/// chosen, before the request is written to it; non-zero aborts the transfer.
typedef int (*tern_curl_prereq_callback)(void *context, char *primaryIP, char *localIP, int primaryPort, int localPort);

/// What a debug callback looks like (CURLOPT_DEBUGFUNCTION): `kind` is a curl_infotype.
typedef int (*tern_curl_debug_callback)(void *easy, int kind, char *data, size_t size, void *context);

/// What a seek callback looks like (CURLOPT_SEEKFUNCTION): moves the body to `offset` from
/// `origin` (SEEK_SET, …); returns 0 when it did, 1 on failure, 2 when it cannot.
typedef int (*tern_curl_seek_callback)(void *context, int64_t offset, int origin);

/// libcurl's entry points, found with dlsym.
typedef struct TernCurl {
    void *library;
    int (*global_init)(long flags);
    void *(*easy_init)(void);
    void (*easy_cleanup)(void *easy);
    void (*easy_reset)(void *easy);
    int (*easy_setopt)(void *easy, int option, ...);
    int (*easy_getinfo)(void *easy, int info, ...);
    int (*easy_pause)(void *easy, int bitmask);
    const char *(*easy_strerror)(int code);
    void *(*multi_init)(void);
    int (*multi_setopt)(void *multi, int option, ...);
    int (*multi_add_handle)(void *multi, void *easy);
    int (*multi_remove_handle)(void *multi, void *easy);
    int (*multi_perform)(void *multi, int *running);
    int (*multi_poll)(void *multi, void *extra, unsigned count, int timeout, int *ready);
    int (*multi_wakeup)(void *multi);
    void *(*multi_info_read)(void *multi, int *queued);
    int (*multi_cleanup)(void *multi);
    void *(*slist_append)(void *list, const char *text);
    void (*slist_free_all)(void *list);
    const char *(*version)(void);
    /// OpenSSL's SSL_get0_alpn_selected, from the libssl libcurl links, when it links one;
    /// NULL otherwise.
    void (*ssl_alpn_selected)(const void *ssl, const unsigned char **protocol, unsigned int *length);
} TernCurl;

/// Opens `path` (such as "libcurl.so.4") and finds every entry point; returns 0 on success,
/// -1 with `error` set to the loader's message when the library cannot be opened, or -2 with
/// `error` set to the name of an entry point it lacks.
int tern_curl_load(TernCurl *curl, const char *path, const char **error);

int tern_curl_setopt_long(const TernCurl *curl, void *easy, int option, long value);
int tern_curl_setopt_offset(const TernCurl *curl, void *easy, int option, int64_t value);
int tern_curl_setopt_pointer(const TernCurl *curl, void *easy, int option, const void *value);
int tern_curl_setopt_data_callback(const TernCurl *curl, void *easy, int option, tern_curl_data_callback callback);
int tern_curl_setopt_progress_callback(const TernCurl *curl, void *easy, int option, tern_curl_progress_callback callback);
int tern_curl_setopt_prereq_callback(const TernCurl *curl, void *easy, int option, tern_curl_prereq_callback callback);
int tern_curl_setopt_debug_callback(const TernCurl *curl, void *easy, int option, tern_curl_debug_callback callback);
int tern_curl_setopt_seek_callback(const TernCurl *curl, void *easy, int option, tern_curl_seek_callback callback);
/// What one exchange's handle writes besides its transfer: libcurl's words for what went wrong
/// (CURLOPT_ERRORBUFFER, CURL_ERROR_SIZE bytes), and, when its socket callback could make no
/// socket for want of a descriptor, why (EMFILE or ENFILE; 0 otherwise).
typedef struct tern_exchange_notes {
    char error[256];
    int lacked_a_descriptor;
} tern_exchange_notes;

/// Has libcurl open the handle's sockets close-on-exec (CURLOPT_OPENSOCKETFUNCTION, passed as
/// `option`, its data as `dataOption`), so that a process the app starts does not inherit
/// them: one that did held the connection open after libcurl closed its descriptor, until it
/// ended. No socket is made in the reserve (see `tern_descriptor_is_reserved`): libcurl hears
/// that none could be made, and `notes` why.
int tern_curl_setopt_sockets_closed_on_exec(const TernCurl *curl, void *easy, int option, int dataOption, tern_exchange_notes *notes);
/// The descriptors a socket leaves free below the process's limit, for the rest of the
/// process: libdispatch stops the process when its thread pool's monitor cannot open a file
/// under /proc, so a process whose sockets took every descriptor could crash.
#define TERN_DESCRIPTOR_RESERVE 16
/// Whether `descriptor` is within `TERN_DESCRIPTOR_RESERVE` of the process's limit: given the
/// lowest free number (as socket(2) and dup(2) give), whether every descriptor outside the
/// reserve is taken.
int tern_descriptor_is_reserved(int descriptor);
int tern_curl_getinfo_socket(const TernCurl *curl, void *easy, int info, int *value);
int tern_curl_getinfo_long(const TernCurl *curl, void *easy, int info, long *value);
int tern_curl_getinfo_string(const TernCurl *curl, void *easy, int info, char **value);
int tern_curl_getinfo_offset(const TernCurl *curl, void *easy, int info, int64_t *value);
int tern_curl_multi_setopt_long(const TernCurl *curl, void *multi, int option, long value);

/// The PEM of certificate `index` of the chain the server of `easy`'s last transfer showed
/// (0 its own), as libcurl gathered it (with `CURLOPT_CERTINFO`); NULL past the chain's end or
/// when nothing was gathered. Valid until the handle's next transfer.
const char *tern_curl_certificate_pem(const TernCurl *curl, void *easy, int index);

/// Whether the TLS connection `easy` is about to use (asked from its pre-request callback)
/// chose HTTP/2 with ALPN: 1 if so, 0 if it chose another protocol or none, -1 if it cannot be
/// told (no TLS, or a TLS library other than OpenSSL).
int tern_curl_negotiated_http2(const TernCurl *curl, void *easy);

/// Whether `socket` is connected to local port `localPort` and has input waiting to be read (or
/// its peer has closed it): 1 if so, 0 if it is idle, -1 if it is not that connection. Nothing
/// waiting is answered 0 without asking which connection the socket is.
int tern_socket_has_input(int socket, int localPort);

/// Whether `socket` is still a socket bound to local port `localPort`: 0 once it is closed, or
/// its number is another socket's or file's.
int tern_socket_is_bound_to(int socket, int localPort);

/// The public suffix list from the system's libpsl ("libpsl.so.5", which libcurl links where
/// it has PSL), loaded once: 1 if it is there, 0 if not.
int tern_psl_load(void);

/// Whether a cookie from `host` may be set for `domain` (both lower-case ASCII, the domain
/// without a leading dot): 1 if so, 0 if not: `domain` is a public suffix, or not `host` nor a
/// parent of it, or `host` is an IP address and `domain` another. Call only after
/// tern_psl_load returned 1.
int tern_psl_cookie_domain_acceptable(const char *host, const char *domain);

/// Whether `domain` (lower-case ASCII) is a public suffix, such as "com", "co.uk" or a name the
/// list does not know ("example", "localhost"): 1 if so. Call only after tern_psl_load returned 1.
int tern_psl_is_public_suffix(const char *domain);

/// Marks the calling thread as about to call libcurl, which may call OpenSSL, until
/// tern_curl_leave: the process's exit waits for it to leave (two seconds at most) before
/// OpenSSL's exit handler, if one was registered before libcurl's first use, frees what the
/// thread would touch. Nests on one thread.
void tern_curl_enter(void);

/// Ends what tern_curl_enter began.
void tern_curl_leave(void);

/// Makes the process's exit wait for the threads in libcurl (see tern_curl_enter); once
/// libcurl is initialized, so that it runs before any OpenSSL exit handler registered so far.
void tern_curl_wait_at_exit(void);

/// Names the calling thread as the system shows it (15 characters at most on Linux).
void tern_name_this_thread(const char *name);

/// Marks the calling thread as the one that runs `loop` (an opaque owner, or NULL).
void tern_mark_thread_loop(const void *loop);

/// What tern_mark_thread_loop last marked the calling thread with: NULL on other threads.
const void *tern_thread_loop(void);

/// Reads a message of curl_multi_info_read: 1 with the finished handle and its result when the
/// message says a transfer is done, 0 otherwise.
int tern_curl_message_done(const void *message, void **easy, int *result);

/// The content codings Tern can undo, with the libraries libcurl links (zlib, brotli's decoder,
/// zstd), each loaded at run time if it is there.
enum {
    TERN_CODING_GZIP = 0,
    /// HTTP's "deflate": zlib's framing.
    TERN_CODING_ZLIB = 1,
    /// "deflate" as some servers send it, without zlib's framing.
    TERN_CODING_RAW_DEFLATE = 2,
    TERN_CODING_BROTLI = 3,
    TERN_CODING_ZSTD = 4,
};

/// Whether `coding` can be undone: its library loaded (once, on first asking).
int tern_coding_available(int coding);

/// One stream's decoder; NULL when its library is missing or memory is.
typedef struct tern_decoder tern_decoder;
tern_decoder *tern_decoder_new(int coding);

/// Starts a zlib decoder over, for the next gzip member or the other deflate framing; -1 for
/// brotli and zstd, which go on by themselves.
int tern_decoder_restart(tern_decoder *decoder, int coding);

/// Decodes what it can of `input` into `output`, saying how much of each it used: 0 going on,
/// 1 at a stream's (a gzip member's, a zstd frame's) end, 2 when nothing more can be made until
/// more input comes, -1 when the input is not the coding.
int tern_decode(tern_decoder *decoder, const void *input, size_t input_count, size_t *consumed,
                void *output, size_t output_count, size_t *produced);

/// The library's words for the decoder's last error, or NULL.
const char *tern_decoder_message(const tern_decoder *decoder);

/// Frees the decoder; NULL is ignored.
void tern_decoder_free(tern_decoder *decoder);

#endif
