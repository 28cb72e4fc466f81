#ifndef SPC_HTTP_CLIENT_SHIM_H
#define SPC_HTTP_CLIENT_SHIM_H

/*
 * A small C shim over libcurl for the HTTPClient module.
 *
 * curl_easy_setopt is variadic, which Swift cannot call. This shim performs one whole request
 * (blocking, on the caller's thread) with exactly the options the client allows (libcurl sends
 * no User-Agent of its own: only a header line given here sends one): http and https
 * only, no redirects, no cookies, TLS 1.2 or later, certificate and host-name checks on unless
 * the caller turns both off, an optional CA file and optional pinned public keys. Nothing here
 * logs; request and response bodies stay in the buffers given and returned.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The exchange completed: `status` and the body are set (any status, 5xx included). */
#define SPC_CURL_OK 0
/** A request field was unusable (no URL or method, a header with CR or LF). */
#define SPC_CURL_E_INVALID (-1)
/** Memory could not be allocated, or libcurl could not be initialized. */
#define SPC_CURL_E_MEMORY (-2)
/** No connection: refused, or the host unreachable. */
#define SPC_CURL_E_CONNECT (-3)
/** The host name did not resolve. */
#define SPC_CURL_E_RESOLVE (-4)
/** The whole exchange took longer than `timeout_ms`. */
#define SPC_CURL_E_TIMEOUT (-5)
/** The server's certificate failed validation (chain, expiry or host name); `message` says why. */
#define SPC_CURL_E_TLS_CERTIFICATE (-6)
/** The certificate validated but its public key matched none of `pinned_keys`. */
#define SPC_CURL_E_TLS_PIN (-7)
/** The CA file could not be read or holds no certificate. */
#define SPC_CURL_E_CA_FILE (-8)
/** The TLS handshake failed otherwise (no common version or cipher, a server not speaking TLS). */
#define SPC_CURL_E_TLS (-9)
/** `cancel` became nonzero during the exchange. */
#define SPC_CURL_E_CANCELLED (-10)
/** The response body exceeded `max_response_bytes`. */
#define SPC_CURL_E_TOO_LARGE (-11)
/** The peer's answer was not HTTP, or the connection broke mid-exchange. */
#define SPC_CURL_E_PROTOCOL (-12)
/** Any other libcurl failure; `curl_code` and `message` say which. */
#define SPC_CURL_E_OTHER (-13)

/** One request. Every pointer must stay valid for the duration of spc_curl_perform. */
typedef struct spc_curl_request {
    /** The absolute URL, http or https (anything else is refused by libcurl). */
    const char *url;
    /** The method, for example "POST". */
    const char *method;
    /** Header lines "Name: value", `header_count` of them (no CR or LF). */
    const char *const *headers;
    size_t header_count;
    /** The body; sent when `has_body` is nonzero (with its exact length, even 0). */
    const uint8_t *body;
    size_t body_length;
    int has_body;
    /** The limit for the whole exchange, connecting included, in milliseconds (at least 1). */
    long timeout_ms;
    /** Nonzero: check the certificate chain and the host name (the only safe setting). */
    int verify;
    /** A PEM file of CA certificates to trust instead of the system store; NULL: the system store. */
    const char *ca_file;
    /** Pinned keys in libcurl's form "sha256//BASE64;sha256//BASE64", checked after validation; NULL: none. */
    const char *pinned_keys;
    /** The largest response body accepted (at least 1). */
    size_t max_response_bytes;
    /** Polled during the exchange (an atomic load); nonzero aborts it. Set it with
     *  spc_curl_cancel from another thread. May be NULL. */
    const int *cancel;
} spc_curl_request;

/** What came back. Free with spc_curl_response_free whatever spc_curl_perform returned. */
typedef struct spc_curl_response {
    /** The HTTP status of the final response (0 when none arrived). */
    long status;
    /** The response body (malloc'ed; NULL when empty). */
    uint8_t *body;
    size_t body_length;
    /** libcurl's result code (CURLE_OK is 0). */
    int curl_code;
    /** libcurl's description of a failure ("" on success); never holds request data. */
    char message[256];
} spc_curl_response;

/**
 * Performs one request and waits for it to finish.
 *
 * @param request  what to send and how to check the server
 * @param response receives status, body and failure details; zeroed first
 * @return SPC_CURL_OK or one of the SPC_CURL_E_ codes
 */
int spc_curl_perform(const spc_curl_request *request, spc_curl_response *response)
    __attribute__((warn_unused_result, nonnull));

/** Sets a cancel flag (an atomic store), from any thread. */
void spc_curl_cancel(int *flag) __attribute__((nonnull));

/** Frees the body of a response and zeroes it. */
void spc_curl_response_free(spc_curl_response *response) __attribute__((nonnull));

/** The libcurl version text, for example "libcurl/7.88.1 OpenSSL/3.0.17 …". */
const char *spc_curl_version(void);

#ifdef __cplusplus
}
#endif

#endif
