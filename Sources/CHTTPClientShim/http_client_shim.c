#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* explicit_bzero */

#include "http_client_shim.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result = CURLE_FAILED_INIT;

static void global_init(void) { global_result = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Response body under construction, bounded. */
struct sink {
    uint8_t *bytes;
    size_t length;
    size_t capacity;
    size_t limit;
    bool too_large;
};

static size_t on_data(char *data, size_t size, size_t count, void *cls) {
    struct sink *sink = cls;
    size_t n = size * count;
    if (n > sink->limit - sink->length) {
        sink->too_large = true;
        return 0; /* libcurl stops with CURLE_WRITE_ERROR */
    }
    if (sink->length + n > sink->capacity) {
        size_t capacity = sink->capacity == 0 ? 4096 : sink->capacity * 2;
        if (capacity < sink->length + n) capacity = sink->length + n;
        if (capacity > sink->limit) capacity = sink->limit;
        uint8_t *grown = realloc(sink->bytes, capacity);
        if (grown == NULL) return 0;
        sink->bytes = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->bytes + sink->length, data, n);
    sink->length += n;
    return n;
}

static int on_progress(void *cls, curl_off_t down_total, curl_off_t down_now, curl_off_t up_total,
                       curl_off_t up_now) {
    (void)down_total;
    (void)down_now;
    (void)up_total;
    (void)up_now;
    const int *cancel = cls;
    return cancel != NULL && __atomic_load_n(cancel, __ATOMIC_ACQUIRE) != 0 ? 1 : 0;
}

static int classify(CURLcode code, bool too_large) {
    switch (code) {
    case CURLE_OK: return SPC_CURL_OK;
    case CURLE_COULDNT_CONNECT: return SPC_CURL_E_CONNECT;
    case CURLE_COULDNT_RESOLVE_HOST: return SPC_CURL_E_RESOLVE;
    case CURLE_OPERATION_TIMEDOUT: return SPC_CURL_E_TIMEOUT;
    case CURLE_PEER_FAILED_VERIFICATION: return SPC_CURL_E_TLS_CERTIFICATE;
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH: return SPC_CURL_E_TLS_PIN;
    case CURLE_SSL_CACERT_BADFILE: return SPC_CURL_E_CA_FILE;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_USE_SSL_FAILED: return SPC_CURL_E_TLS;
    case CURLE_ABORTED_BY_CALLBACK: return SPC_CURL_E_CANCELLED;
    case CURLE_WRITE_ERROR: return too_large ? SPC_CURL_E_TOO_LARGE : SPC_CURL_E_MEMORY;
    case CURLE_OUT_OF_MEMORY: return SPC_CURL_E_MEMORY;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return SPC_CURL_E_PROTOCOL;
    default: return SPC_CURL_E_OTHER;
    }
}

/* Each setopt is checked: an option this libcurl refuses must not be silently skipped. */
#define SET(handle, option, value)                                                                                     \
    do {                                                                                                               \
        if (curl_easy_setopt((handle), (option), (value)) != CURLE_OK) goto refused;                                  \
    } while (0)

int spc_curl_perform(const spc_curl_request *request, spc_curl_response *response) {
    memset(response, 0, sizeof *response);
    if (request->url == NULL || request->method == NULL || request->method[0] == '\0' || request->timeout_ms < 1 ||
        request->max_response_bytes == 0 || (request->header_count > 0 && request->headers == NULL)) {
        return SPC_CURL_E_INVALID;
    }
    for (size_t i = 0; i < request->header_count; i++) {
        if (request->headers[i] == NULL || strpbrk(request->headers[i], "\r\n") != NULL) return SPC_CURL_E_INVALID;
    }
    if (strpbrk(request->method, "\r\n ") != NULL) return SPC_CURL_E_INVALID;
    pthread_once(&global_once, global_init);
    if (global_result != CURLE_OK) return SPC_CURL_E_MEMORY;

    CURL *handle = curl_easy_init();
    if (handle == NULL) return SPC_CURL_E_MEMORY;
    struct curl_slist *headers = NULL;
    struct sink sink = {.limit = request->max_response_bytes};
    int result = SPC_CURL_E_MEMORY;

    /* No "Expect: 100-continue" round trip; the caller's headers after it. */
    struct curl_slist *grown = curl_slist_append(headers, "Expect:");
    if (grown == NULL) goto done;
    headers = grown;
    for (size_t i = 0; i < request->header_count; i++) {
        grown = curl_slist_append(headers, request->headers[i]);
        if (grown == NULL) goto done;
        headers = grown;
    }

    SET(handle, CURLOPT_ERRORBUFFER, response->message);
    SET(handle, CURLOPT_URL, request->url);
    SET(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    SET(handle, CURLOPT_FOLLOWLOCATION, 0L);
    SET(handle, CURLOPT_NOSIGNAL, 1L); /* called from many threads: no SIGALRM for timeouts */
    SET(handle, CURLOPT_TIMEOUT_MS, request->timeout_ms);
    SET(handle, CURLOPT_CONNECTTIMEOUT_MS, request->timeout_ms);
    SET(handle, CURLOPT_HTTPHEADER, headers);
    SET(handle, CURLOPT_WRITEFUNCTION, on_data);
    SET(handle, CURLOPT_WRITEDATA, &sink);
    SET(handle, CURLOPT_NOPROGRESS, 0L);
    SET(handle, CURLOPT_XFERINFOFUNCTION, on_progress);
    SET(handle, CURLOPT_XFERINFODATA, (void *)request->cancel);
    SET(handle, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    SET(handle, CURLOPT_SSL_VERIFYPEER, request->verify ? 1L : 0L);
    SET(handle, CURLOPT_SSL_VERIFYHOST, request->verify ? 2L : 0L);
    if (request->ca_file != NULL) {
        SET(handle, CURLOPT_CAINFO, request->ca_file);
        SET(handle, CURLOPT_CAPATH, (char *)NULL); /* the file alone, not the system directory too */
    }
    if (request->pinned_keys != NULL) SET(handle, CURLOPT_PINNEDPUBLICKEY, request->pinned_keys);
    if (strcmp(request->method, "GET") == 0 && !request->has_body) {
        SET(handle, CURLOPT_HTTPGET, 1L);
    } else {
        if (request->has_body) {
            SET(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_length);
            SET(handle, CURLOPT_POSTFIELDS, request->body_length > 0 ? (const char *)request->body : "");
        }
        SET(handle, CURLOPT_CUSTOMREQUEST, request->method);
    }

    CURLcode code = curl_easy_perform(handle);
    response->curl_code = (int)code;
    result = classify(code, sink.too_large);
    if (result == SPC_CURL_OK) {
        long status = 0;
        if (curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status < 100) {
            result = SPC_CURL_E_PROTOCOL;
        } else {
            response->status = status;
            response->body = sink.bytes;
            response->body_length = sink.length;
            sink.bytes = NULL;
        }
    }
    goto done;
refused:
    result = SPC_CURL_E_OTHER;
    strncpy(response->message, "libcurl refused an option", sizeof response->message - 1);
done:
    free(sink.bytes);
    /* libcurl's copies of the header lines: one may carry a credential (an admin token). */
    for (struct curl_slist *item = headers; item != NULL; item = item->next) {
        if (item->data != NULL) explicit_bzero(item->data, strlen(item->data));
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(handle);
    return result;
}

void spc_curl_cancel(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELEASE); }

void spc_curl_response_free(spc_curl_response *response) {
    free(response->body);
    response->body = NULL;
    response->body_length = 0;
}

const char *spc_curl_version(void) { return curl_version(); }
