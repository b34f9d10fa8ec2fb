// The floor, as a library: libcurl's multi interface driven directly from C, as Tern's
// CurlTransport drives it (one multi handle, keep-alive, decompression on, each body kept in
// memory), with nothing above it. `RawCurl` measures it alone; `ClientsAB` hands each body to
// JSONDecoder, for the floor of a decoded request.
#ifndef RAW_CURL_H
#define RAW_CURL_H
#include <stddef.h>

/// Takes one whole body answered 200; returns nonzero when it was what was expected.
typedef int (*raw_curl_body)(const char *bytes, size_t count, void *context);

/// `width` easy handles for `url` on one multi handle.
typedef struct raw_curl raw_curl;

/// Loads libcurl (as Tern does, at run time) and makes the handles; exits when it cannot.
raw_curl *raw_curl_open(const char *url, int width);

/// From now on each request gets a new easy handle, set up as the first was, and frees it after:
/// what Tern must do with a libcurl older than 8.1.0 (see `CurlLibrary.resetHandlesAreSafe`).
void raw_curl_use_fresh_handles(raw_curl *raw);

/// Over HTTPS, trusts only the certificate authorities in the PEM file `authorities` (a test CA),
/// and lets requests share an HTTP/2 connection as CurlTransport does.
void raw_curl_trust(raw_curl *raw, const char *authorities);

/// Sends `count` GETs, `width` at a time, handing each 200's body to `body` when it is not
/// NULL; returns how many were answered 200 (and, with `body`, taken by it).
int raw_curl_round(raw_curl *raw, int count, raw_curl_body body, void *context);

#endif
