#ifndef SPC_HTTP_SHIM_H
#define SPC_HTTP_SHIM_H

/*
 * A small C shim over GNU libmicrohttpd for the HTTPServer module.
 *
 * libmicrohttpd's MHD_start_daemon is variadic, which Swift cannot call, and
 * its access handler is called several times per request. This shim starts the
 * daemon, accumulates each request body up to a limit and calls one handler per
 * complete request with everything it needs; the handler fills a response.
 * Nothing here logs: request bodies and header values never leave the handler.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Success. */
#define SPC_HTTP_OK 0
/** An argument was out of range (status code, empty name, header with CR/LF). */
#define SPC_HTTP_E_INVALID (-1)
/** Memory could not be allocated. */
#define SPC_HTTP_E_MEMORY (-2)
/** MHD_start_daemon failed; the errno it left is reported separately. */
#define SPC_HTTP_E_START (-3)
/** The response already holds the maximum number of extra headers. */
#define SPC_HTTP_E_TOO_MANY_HEADERS (-4)

/** The most request headers passed to the handler; more are answered with 431. */
#define SPC_HTTP_MAX_REQUEST_HEADERS 64
/** The most extra headers a handler may add to one response. */
#define SPC_HTTP_MAX_RESPONSE_HEADERS 16

/** A running server (opaque). */
typedef struct spc_http_server spc_http_server;
/** The response a handler fills (opaque; valid only during the handler call). */
typedef struct spc_http_response spc_http_response;

/**
 * One complete request, valid only for the duration of the handler call.
 * `path` excludes the query string. Header names are as the client sent them.
 */
typedef struct spc_http_request {
    /** The peer's IP address as text ("127.0.0.1", "::1"); "" when unknown. */
    const char *client_address;
    const char *method;
    const char *path;
    size_t header_count;
    const char *const *header_names;
    const char *const *header_values;
    const uint8_t *body;
    size_t body_length;
} spc_http_request;

/**
 * Called once per complete request on one of libmicrohttpd's threads, possibly
 * concurrently with itself. A response the handler leaves unset becomes a 500.
 */
typedef void (*spc_http_handler)(void *context, const spc_http_request *request, spc_http_response *response);

/**
 * An IP network: `prefix_length` leading bits of `address`. An IPv4 network (`ipv6` 0) uses the
 * first 4 bytes of `address` in network byte order and a prefix of 0...32; an IPv6 one all 16
 * bytes and 0...128.
 */
typedef struct spc_http_network {
    uint8_t ipv6;
    uint8_t prefix_length;
    uint8_t address[16];
} spc_http_network;

/** Listening and resource limits. */
typedef struct spc_http_config {
    /** Nonzero: bind the IPv6 address `ipv6_address` (an IPv6-only socket) instead of the IPv4 one. */
    uint8_t ipv6;
    /** IPv6 address to bind when `ipv6` is set, in network byte order. */
    uint8_t ipv6_address[16];
    /** IPv4 address to bind, in network byte order (127.0.0.1 is htonl(0x7f000001)). */
    uint32_t ipv4_address;
    /** Port to bind in host byte order; 0 picks an ephemeral port. */
    uint16_t port;
    /** Largest accepted request body; a larger one is answered with 413. */
    size_t max_body_bytes;
    /** Seconds of inactivity after which a connection is closed (0: never). */
    unsigned int connection_timeout_seconds;
    /** Most simultaneous connections (each gets its own thread). */
    unsigned int connection_limit;
    /** Per-connection memory for the request line and headers (0: libmicrohttpd's default, 32 KiB). */
    size_t connection_memory_limit;
    /**
     * Seconds a connection may take from accept (or from the end of its previous request) to
     * the end of its whole request, request line, headers and body, however it trickles them;
     * then it is shut down (0: no deadline). Against slowloris and slow bodies: an inactivity
     * timeout alone is reset by every byte. Independently of it, with a `connection_limit` of 64
     * or more, a new connection that arrives while all but an eighth of the slots are still
     * waiting for their requests shuts down the one that has waited longest, so slow clients
     * from many addresses cannot hold every slot.
     */
    unsigned int header_deadline_seconds;
    /** Most simultaneous connections from one IP address (0: no per-address limit). */
    unsigned int per_address_connection_limit;
    /**
     * Networks whose connections the per-address limit does not count (reverse proxies, which
     * carry many clients on their own address); copied at start. NULL when `exempt_count` is 0.
     */
    const spc_http_network *exempt_networks;
    /** Entries in `exempt_networks` (at most 256). */
    size_t exempt_count;
} spc_http_config;

/**
 * Starts a daemon: one polling thread accepting connections, one thread per connection.
 *
 * @param config   listening address and limits
 * @param handler  called once per complete request
 * @param context  passed unchanged to the handler; must outlive spc_http_server_stop
 * @param out      receives the server on success, NULL otherwise
 * @param out_errno receives errno when SPC_HTTP_E_START is returned, 0 otherwise
 * @return SPC_HTTP_OK, SPC_HTTP_E_INVALID (zero body or connection limit, more than 256 exempt
 *         networks, a prefix longer than its family allows), SPC_HTTP_E_MEMORY or SPC_HTTP_E_START
 */
int spc_http_server_start(const spc_http_config *config, spc_http_handler handler, void *context,
                          spc_http_server **out, int *out_errno) __attribute__((warn_unused_result, nonnull(1, 2, 4, 5)));

/** The port the server is bound to (the ephemeral one when 0 was configured). */
uint16_t spc_http_server_port(const spc_http_server *server) __attribute__((nonnull));

/** Requests currently between their first header and the end of their response. */
unsigned int spc_http_server_in_flight(const spc_http_server *server) __attribute__((nonnull));

/** Connections open now (libmicrohttpd's count, idle keep-alive ones included). */
unsigned int spc_http_server_open_connections(const spc_http_server *server) __attribute__((nonnull));

/**
 * Stops accepting connections (closing nothing else); responses from now on say
 * `Connection: close`. Idempotent; spc_http_server_stop does it too. Not thread-safe with
 * itself or with spc_http_server_stop on the same server.
 */
void spc_http_server_quiesce(spc_http_server *server) __attribute__((nonnull));

/**
 * Graceful stop: stops accepting connections, waits up to drain_timeout_ms for
 * requests in flight to finish, then stops the daemon (closing idle keep-alive
 * connections and joining every thread) and frees the server.
 *
 * @return the number of requests still in flight when the wait ended (0: all finished)
 */
unsigned int spc_http_server_stop(spc_http_server *server, unsigned int drain_timeout_ms) __attribute__((nonnull));

/**
 * Sets status, content type and body (copied) of the response.
 *
 * @return SPC_HTTP_OK, SPC_HTTP_E_INVALID (status outside 100...599, content type with CR/LF)
 *         or SPC_HTTP_E_MEMORY
 */
int spc_http_response_set(spc_http_response *response, unsigned int status, const char *content_type,
                          const uint8_t *body, size_t body_length) __attribute__((warn_unused_result, nonnull(1, 3)));

/**
 * Adds a header (name and value copied) to the response.
 *
 * @return SPC_HTTP_OK, SPC_HTTP_E_INVALID (empty name, CR/LF or ':' in the name, CR/LF in the value),
 *         SPC_HTTP_E_TOO_MANY_HEADERS or SPC_HTTP_E_MEMORY
 */
int spc_http_response_add_header(spc_http_response *response, const char *name, const char *value)
    __attribute__((warn_unused_result, nonnull));

#ifdef __cplusplus
}
#endif

#endif
