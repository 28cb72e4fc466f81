#define _POSIX_C_SOURCE 200809L

#include "http_shim.h"

#include <errno.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

/* Once a body is known to be too large, this many more bytes are read and
 * dropped (so the client can still read its 413) before the connection is cut. */
#define SPC_HTTP_DISCARD_LIMIT ((size_t)1 << 20)

/* One open connection, tracked for the request deadline. */
struct tracked_connection {
    struct tracked_connection *prev, *next;
    int fd;
    struct timespec waiting_since; /* accept, or the end of the previous request */
    bool in_request;               /* headers and body complete, handler running or answer queued */
    bool cut;                      /* shut down by the watchdog or to make room */
    bool peer_known;               /* `peer` holds the connection's address */
    spc_http_network peer;         /* the peer's address (prefix length unused) */
};

struct spc_http_server {
    struct MHD_Daemon *daemon;
    spc_http_handler handler;
    void *context;
    size_t max_body_bytes;
    uint16_t port;
    atomic_uint in_flight;
    atomic_bool stopping;
    bool quiesced;           /* spc_http_server_quiesce ran: `listener` is the socket to close */
    MHD_socket listener;
    /* Request deadline: every open connection, and a watchdog thread that shuts down those
     * whose request (headers and body) is still arriving past the deadline. All fields below
     * are under `lock`. */
    unsigned int header_deadline_seconds;
    /* A new connection arriving while this many connections are still waiting for their
     * request shuts the longest-waiting one down, so slow clients from many addresses cannot
     * hold every slot until the deadline (0: never). */
    unsigned int waiting_limit;
    unsigned int waiting_count;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t watchdog;
    bool watchdog_running;
    bool watchdog_stop;
    struct tracked_connection *connections;
    /* With exempt networks the shim counts the per-address limit itself (libmicrohttpd's option
     * cannot exempt anyone): the accept policy counts the tracked connections from the new
     * peer's address, under `lock`. */
    unsigned int per_address_limit;
    size_t exempt_count;
    spc_http_network *exempt_networks;
};

struct spc_http_response {
    unsigned int status;
    char *content_type;
    uint8_t *body;
    size_t body_length;
    size_t header_count;
    char *header_names[SPC_HTTP_MAX_RESPONSE_HEADERS];
    char *header_values[SPC_HTTP_MAX_RESPONSE_HEADERS];
};

/* Per-request state kept by libmicrohttpd between calls of the access handler. */
struct request_state {
    uint8_t *body;
    size_t length;
    size_t capacity;
    size_t discarded;
    bool too_large;
};

struct header_list {
    size_t count;
    bool overflow;
    const char *names[SPC_HTTP_MAX_REQUEST_HEADERS];
    const char *values[SPC_HTTP_MAX_REQUEST_HEADERS];
};

static bool has_line_break(const char *text) { return strpbrk(text, "\r\n") != NULL; }

/* The address of a socket as a network entry; false for a family other than IPv4 and IPv6. */
static bool peer_of(const struct sockaddr *sa, spc_http_network *out) {
    memset(out, 0, sizeof *out);
    if (sa == NULL) return false;
    if (sa->sa_family == AF_INET) {
        memcpy(out->address, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        out->prefix_length = 32;
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        out->ipv6 = 1;
        memcpy(out->address, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        out->prefix_length = 128;
        return true;
    }
    return false;
}

static bool same_address(const spc_http_network *a, const spc_http_network *b) {
    return a->ipv6 == b->ipv6 && memcmp(a->address, b->address, a->ipv6 ? 16 : 4) == 0;
}

/* Whether `address` lies in `network` (same family, first prefix_length bits equal). */
static bool network_contains(const spc_http_network *network, const spc_http_network *address) {
    if (network->ipv6 != address->ipv6) return false;
    unsigned int whole = network->prefix_length / 8, rest = network->prefix_length % 8;
    if (memcmp(network->address, address->address, whole) != 0) return false;
    if (rest == 0) return true;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (network->address[whole] & mask) == (address->address[whole] & mask);
}

/* The accept policy when the shim counts the per-address limit: refuses a peer outside every
 * exempt network that already holds `per_address_limit` connections. */
static enum MHD_Result admit_peer(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    (void)addrlen;
    spc_http_server *server = cls;
    spc_http_network peer;
    if (!peer_of(addr, &peer)) return MHD_YES;
    for (size_t i = 0; i < server->exempt_count; i++) {
        if (network_contains(&server->exempt_networks[i], &peer)) return MHD_YES;
    }
    unsigned int count = 0;
    pthread_mutex_lock(&server->lock);
    for (struct tracked_connection *c = server->connections; c != NULL && count < server->per_address_limit;
         c = c->next) {
        if (c->peer_known && same_address(&c->peer, &peer)) count++;
    }
    pthread_mutex_unlock(&server->lock);
    return count < server->per_address_limit ? MHD_YES : MHD_NO;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes %HH in the URL and its arguments in place, except %00: a NUL would
 * end the C string the handler routes on, so "/admin/x%00junk" would route as
 * "/admin/x". It is left as the three characters "%00", which no route has. */
static size_t unescape_keeping_nul(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    char *out = text;
    for (const char *in = text; *in != '\0'; out++) {
        int high = in[0] == '%' ? hex_value(in[1]) : -1;
        int low = high >= 0 ? hex_value(in[2]) : -1;
        if (low >= 0 && (high | low) != 0) {
            *out = (char)(high * 16 + low);
            in += 3;
        } else {
            *out = *in++;
        }
    }
    *out = '\0';
    return (size_t)(out - text);
}

static void response_clear(struct spc_http_response *response) {
    free(response->content_type);
    free(response->body);
    for (size_t i = 0; i < response->header_count; i++) {
        free(response->header_names[i]);
        free(response->header_values[i]);
    }
    memset(response, 0, sizeof *response);
}

/* Queues a response and hands it to libmicrohttpd; takes ownership of the body. */
static enum MHD_Result queue(spc_http_server *server, struct MHD_Connection *connection,
                             struct spc_http_response *response) {
    struct MHD_Response *mhd;
    if (response->body_length == 0) {
        mhd = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        mhd = MHD_create_response_from_buffer(response->body_length, response->body, MHD_RESPMEM_MUST_FREE);
        if (mhd != NULL) response->body = NULL; /* now owned by libmicrohttpd */
    }
    if (mhd == NULL) return MHD_NO;
    bool ok = MHD_add_response_header(mhd, MHD_HTTP_HEADER_CONTENT_TYPE, response->content_type) == MHD_YES;
    for (size_t i = 0; ok && i < response->header_count; i++) {
        ok = MHD_add_response_header(mhd, response->header_names[i], response->header_values[i]) == MHD_YES;
    }
    /* While stopping, tell keep-alive clients not to send another request here. */
    if (ok && atomic_load(&server->stopping)) {
        ok = MHD_add_response_header(mhd, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES;
    }
    enum MHD_Result result = ok ? MHD_queue_response(connection, response->status, mhd) : MHD_NO;
    MHD_destroy_response(mhd);
    return result;
}

/* A short plain-text answer produced by the shim itself (413, 431, 500). */
static enum MHD_Result queue_plain(spc_http_server *server, struct MHD_Connection *connection, unsigned int status,
                                   const char *text) {
    struct spc_http_response response = {0};
    enum MHD_Result result = MHD_NO;
    if (spc_http_response_set(&response, status, "text/plain; charset=utf-8", (const uint8_t *)text, strlen(text)) ==
        SPC_HTTP_OK) {
        result = queue(server, connection, &response);
    }
    response_clear(&response);
    return result;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    struct header_list *list = cls;
    if (list->count == SPC_HTTP_MAX_REQUEST_HEADERS) {
        list->overflow = true;
        return MHD_NO;
    }
    list->names[list->count] = key;
    list->values[list->count] = value != NULL ? value : "";
    list->count++;
    return MHD_YES;
}

/* Appends a body fragment, or marks the request too large without buffering more. */
static void accept_body(spc_http_server *server, struct request_state *state, const char *data, size_t size) {
    if (!state->too_large && size > server->max_body_bytes - state->length) {
        state->too_large = true;
        free(state->body);
        state->body = NULL;
        state->length = state->capacity = 0;
    }
    if (state->too_large) {
        state->discarded += size;
        return;
    }
    if (state->length + size > state->capacity) {
        size_t capacity = state->capacity == 0 ? 1024 : state->capacity * 2;
        if (capacity < state->length + size) capacity = state->length + size;
        if (capacity > server->max_body_bytes) capacity = server->max_body_bytes;
        uint8_t *grown = realloc(state->body, capacity);
        if (grown == NULL) { /* treat like an oversized body: answered, never half-stored */
            state->too_large = true;
            free(state->body);
            state->body = NULL;
            state->length = state->capacity = 0;
            return;
        }
        state->body = grown;
        state->capacity = capacity;
    }
    memcpy(state->body + state->length, data, size);
    state->length += size;
}

static double seconds_since(const struct timespec *then) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - then->tv_sec) + (double)(now.tv_nsec - then->tv_nsec) / 1e9;
}

static struct tracked_connection *tracked(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != NULL ? info->socket_context : NULL;
}

/* Request complete and about to be answered (entering = true), or finished (false): the
 * deadline applies between requests and while the request line, headers and body arrive. */
static void mark_request(spc_http_server *server, struct MHD_Connection *connection, bool entering) {
    struct tracked_connection *record = tracked(connection);
    if (record == NULL) return;
    pthread_mutex_lock(&server->lock);
    if (record->in_request != entering) {
        record->in_request = entering;
        if (entering) server->waiting_count--;
        else server->waiting_count++;
    }
    if (!entering) clock_gettime(CLOCK_MONOTONIC, &record->waiting_since);
    pthread_mutex_unlock(&server->lock);
}

/* Under `lock`: shuts down the connection that has waited longest for its request (not one
 * being answered, not one already cut). The list is newest first, so that is the last match. */
static void cut_longest_waiting(spc_http_server *server) {
    struct tracked_connection *oldest = NULL;
    for (struct tracked_connection *c = server->connections; c != NULL; c = c->next) {
        if (!c->in_request && !c->cut) oldest = c;
    }
    if (oldest != NULL) {
        oldest->cut = true;
        (void)shutdown(oldest->fd, SHUT_RDWR);
    }
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    spc_http_server *server = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct tracked_connection *record = calloc(1, sizeof *record);
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (record == NULL || info == NULL) {
            /* Untracked: the inactivity timeout still applies. */
            free(record);
            *socket_context = NULL;
            return;
        }
        record->fd = info->connect_fd;
        const union MHD_ConnectionInfo *peer = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        record->peer_known = peer != NULL && peer_of(peer->client_addr, &record->peer);
        clock_gettime(CLOCK_MONOTONIC, &record->waiting_since);
        pthread_mutex_lock(&server->lock);
        /* Room for this one: the connection that has waited longest for its request goes. */
        if (server->waiting_limit > 0 && server->waiting_count >= server->waiting_limit) cut_longest_waiting(server);
        server->waiting_count++;
        record->next = server->connections;
        if (server->connections != NULL) server->connections->prev = record;
        server->connections = record;
        pthread_mutex_unlock(&server->lock);
        *socket_context = record;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct tracked_connection *record = *socket_context;
        if (record == NULL) return;
        pthread_mutex_lock(&server->lock);
        if (!record->in_request) server->waiting_count--;
        if (record->prev != NULL) record->prev->next = record->next;
        else server->connections = record->next;
        if (record->next != NULL) record->next->prev = record->prev;
        pthread_mutex_unlock(&server->lock);
        free(record);
        *socket_context = NULL;
    }
}

/* Every 250 ms: shut down (not close: the descriptor stays libmicrohttpd's, so it cannot be
 * reused under it) each connection whose request has not fully arrived by the deadline, body
 * included. Its thread then sees the end of the stream and closes it. */
static void *watchdog(void *cls) {
    spc_http_server *server = cls;
    pthread_mutex_lock(&server->lock);
    while (!server->watchdog_stop) {
        for (struct tracked_connection *c = server->connections; c != NULL; c = c->next) {
            if (!c->in_request && !c->cut && seconds_since(&c->waiting_since) >= server->header_deadline_seconds) {
                c->cut = true;
                (void)shutdown(c->fd, SHUT_RDWR);
            }
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000L;
        }
        (void)pthread_cond_timedwait(&server->wake, &server->lock, &until);
    }
    pthread_mutex_unlock(&server->lock);
    return NULL;
}

static enum MHD_Result dispatch(spc_http_server *server, struct MHD_Connection *connection, const char *url,
                                const char *method, const struct request_state *state) {
    struct header_list headers = {0};
    MHD_get_connection_values(connection, MHD_HEADER_KIND, collect_header, &headers);
    if (headers.overflow) {
        return queue_plain(server, connection, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, "too many header fields\n");
    }
    /* The peer's address as text, for per-address limits above the shim (IPv4 dotted, IPv6 colon form). */
    char address[INET6_ADDRSTRLEN] = "";
    const union MHD_ConnectionInfo *peer = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (peer != NULL && peer->client_addr != NULL) {
        const struct sockaddr *sa = peer->client_addr;
        const void *raw = sa->sa_family == AF_INET    ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                          : sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                                                      : NULL;
        if (raw == NULL || inet_ntop(sa->sa_family, raw, address, sizeof address) == NULL) address[0] = '\0';
    }
    const spc_http_request request = {
        .client_address = address,
        .method = method,
        .path = url,
        .header_count = headers.count,
        .header_names = headers.names,
        .header_values = headers.values,
        .body = state->body,
        .body_length = state->length,
    };
    struct spc_http_response response = {0};
    server->handler(server->context, &request, &response);
    enum MHD_Result result;
    if (response.status == 0 || response.content_type == NULL) {
        result = queue_plain(server, connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "no response\n");
    } else {
        result = queue(server, connection, &response);
    }
    response_clear(&response);
    return result;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
    (void)version;
    spc_http_server *server = cls;
    struct request_state *state = *req_cls;
    if (state == NULL) { /* first call: headers are in */
        state = calloc(1, sizeof *state);
        if (state == NULL) return MHD_NO;
        *req_cls = state;
        atomic_fetch_add(&server->in_flight, 1);
        const char *declared = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (declared != NULL) {
            errno = 0;
            char *end = NULL;
            unsigned long long length = strtoull(declared, &end, 10);
            if (errno == ERANGE || (end != declared && length > server->max_body_bytes)) {
                state->too_large = true; /* answered before a byte of the body is read */
                mark_request(server, connection, true);
                return queue_plain(server, connection, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");
            }
        }
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        accept_body(server, state, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return state->discarded > SPC_HTTP_DISCARD_LIMIT ? MHD_NO : MHD_YES;
    }
    /* The whole request is in: from here on the deadline no longer applies (the handler may
     * take its time), until the request finishes and the connection waits again. */
    mark_request(server, connection, true);
    if (state->too_large) {
        return queue_plain(server, connection, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");
    }
    return dispatch(server, connection, url, method, state);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                         enum MHD_RequestTerminationCode code) {
    (void)code;
    spc_http_server *server = cls;
    struct request_state *state = *req_cls;
    if (state == NULL) return;
    mark_request(server, connection, false);
    free(state->body);
    free(state);
    *req_cls = NULL;
    atomic_fetch_sub(&server->in_flight, 1);
}

int spc_http_server_start(const spc_http_config *config, spc_http_handler handler, void *context,
                          spc_http_server **out, int *out_errno) {
    *out = NULL;
    *out_errno = 0;
    if (config->max_body_bytes == 0 || config->connection_limit == 0 || config->exempt_count > 256 ||
        (config->exempt_count > 0 && config->exempt_networks == NULL)) {
        return SPC_HTTP_E_INVALID;
    }
    for (size_t i = 0; i < config->exempt_count; i++) {
        if (config->exempt_networks[i].prefix_length > (config->exempt_networks[i].ipv6 ? 128 : 32)) {
            return SPC_HTTP_E_INVALID;
        }
    }
    spc_http_server *server = calloc(1, sizeof *server);
    if (server == NULL) return SPC_HTTP_E_MEMORY;
    /* The shim counts per address only when someone is exempt; otherwise libmicrohttpd does. */
    bool own_limit = config->exempt_count > 0 && config->per_address_connection_limit > 0;
    if (own_limit) {
        server->exempt_networks = calloc(config->exempt_count, sizeof *server->exempt_networks);
        if (server->exempt_networks == NULL) {
            free(server);
            return SPC_HTTP_E_MEMORY;
        }
        memcpy(server->exempt_networks, config->exempt_networks, config->exempt_count * sizeof(spc_http_network));
        server->exempt_count = config->exempt_count;
        server->per_address_limit = config->per_address_connection_limit;
    }
    server->handler = handler;
    server->context = context;
    server->max_body_bytes = config->max_body_bytes;
    atomic_init(&server->in_flight, 0);
    atomic_init(&server->stopping, false);
    server->header_deadline_seconds = config->header_deadline_seconds;
    /* An eighth of the slots stays free for new connections; a server with fewer than 64 slots
     * (a test's, or one deliberately this small) keeps plain refusal at the limit. */
    server->waiting_limit = config->connection_limit >= 64 ? config->connection_limit - config->connection_limit / 8 : 0;
    if (pthread_mutex_init(&server->lock, NULL) != 0) {
        free(server->exempt_networks);
        free(server);
        return SPC_HTTP_E_MEMORY;
    }
    if (pthread_cond_init(&server->wake, NULL) != 0) {
        pthread_mutex_destroy(&server->lock);
        free(server->exempt_networks);
        free(server);
        return SPC_HTTP_E_MEMORY;
    }

    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(config->port);
    address.sin_addr.s_addr = config->ipv4_address;
    struct sockaddr_in6 address6;
    memset(&address6, 0, sizeof address6);
    address6.sin6_family = AF_INET6;
    address6.sin6_port = htons(config->port);
    memcpy(&address6.sin6_addr, config->ipv6_address, 16);
    size_t memory = config->connection_memory_limit != 0 ? config->connection_memory_limit : 32 * 1024;

    /* MHD_USE_ITC is what makes MHD_quiesce_daemon (stop accepting) available. */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC;
    /* MHD_USE_IPv6 without MHD_USE_DUAL_STACK sets IPV6_V6ONLY: an IPv6 listener takes no IPv4. */
    if (config->ipv6) flags |= MHD_USE_IPv6;
    struct sockaddr *bind_address = config->ipv6 ? (struct sockaddr *)&address6 : (struct sockaddr *)&address;
    errno = 0;
    server->daemon = MHD_start_daemon(
        flags, config->port, own_limit ? admit_peer : NULL, own_limit ? server : NULL, on_request, server,
        MHD_OPTION_SOCK_ADDR, bind_address,
        MHD_OPTION_CONNECTION_TIMEOUT, config->connection_timeout_seconds, MHD_OPTION_CONNECTION_LIMIT,
        config->connection_limit, MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, server, MHD_OPTION_UNESCAPE_CALLBACK, unescape_keeping_nul, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, server, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        own_limit ? 0u : config->per_address_connection_limit, MHD_OPTION_END);
    if (server->daemon == NULL) {
        *out_errno = errno;
        pthread_cond_destroy(&server->wake);
        pthread_mutex_destroy(&server->lock);
        free(server->exempt_networks);
        free(server);
        return SPC_HTTP_E_START;
    }
    if (server->header_deadline_seconds > 0) {
        if (pthread_create(&server->watchdog, NULL, watchdog, server) != 0) {
            MHD_stop_daemon(server->daemon);
            pthread_cond_destroy(&server->wake);
            pthread_mutex_destroy(&server->lock);
            free(server->exempt_networks);
            free(server);
            return SPC_HTTP_E_MEMORY;
        }
        server->watchdog_running = true;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
    server->port = info != NULL ? info->port : config->port;
    *out = server;
    return SPC_HTTP_OK;
}

uint16_t spc_http_server_port(const spc_http_server *server) { return server->port; }

unsigned int spc_http_server_in_flight(const spc_http_server *server) {
    return atomic_load((atomic_uint *)&server->in_flight);
}

unsigned int spc_http_server_open_connections(const spc_http_server *server) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info != NULL ? info->num_connections : 0;
}

void spc_http_server_quiesce(spc_http_server *server) {
    if (server->quiesced) return;
    atomic_store(&server->stopping, true);
    server->listener = MHD_quiesce_daemon(server->daemon);
    server->quiesced = true;
}

unsigned int spc_http_server_stop(spc_http_server *server, unsigned int drain_timeout_ms) {
    spc_http_server_quiesce(server);
    MHD_socket listener = server->listener;
    const struct timespec step = {.tv_sec = 0, .tv_nsec = 5 * 1000 * 1000};
    for (unsigned int waited = 0; atomic_load(&server->in_flight) > 0 && waited < drain_timeout_ms; waited += 5) {
        nanosleep(&step, NULL);
    }
    unsigned int remaining = atomic_load(&server->in_flight);
    MHD_stop_daemon(server->daemon); /* every connection closed: the list is empty */
    if (listener != MHD_INVALID_SOCKET) close(listener);
    if (server->watchdog_running) {
        pthread_mutex_lock(&server->lock);
        server->watchdog_stop = true;
        pthread_cond_signal(&server->wake);
        pthread_mutex_unlock(&server->lock);
        pthread_join(server->watchdog, NULL);
    }
    pthread_cond_destroy(&server->wake);
    pthread_mutex_destroy(&server->lock);
    free(server->exempt_networks);
    free(server);
    return remaining;
}

int spc_http_response_set(spc_http_response *response, unsigned int status, const char *content_type,
                          const uint8_t *body, size_t body_length) {
    if (status < 100 || status > 599 || has_line_break(content_type)) return SPC_HTTP_E_INVALID;
    char *type = strdup(content_type);
    uint8_t *copy = body_length > 0 ? malloc(body_length) : NULL;
    if (type == NULL || (body_length > 0 && copy == NULL)) {
        free(type);
        free(copy);
        return SPC_HTTP_E_MEMORY;
    }
    if (body_length > 0) memcpy(copy, body, body_length);
    free(response->content_type);
    free(response->body);
    response->status = status;
    response->content_type = type;
    response->body = copy;
    response->body_length = body_length;
    return SPC_HTTP_OK;
}

int spc_http_response_add_header(spc_http_response *response, const char *name, const char *value) {
    if (name[0] == '\0' || has_line_break(name) || strchr(name, ':') != NULL || has_line_break(value)) {
        return SPC_HTTP_E_INVALID;
    }
    if (response->header_count == SPC_HTTP_MAX_RESPONSE_HEADERS) return SPC_HTTP_E_TOO_MANY_HEADERS;
    char *name_copy = strdup(name);
    char *value_copy = strdup(value);
    if (name_copy == NULL || value_copy == NULL) {
        free(name_copy);
        free(value_copy);
        return SPC_HTTP_E_MEMORY;
    }
    response->header_names[response->header_count] = name_copy;
    response->header_values[response->header_count] = value_copy;
    response->header_count++;
    return SPC_HTTP_OK;
}
