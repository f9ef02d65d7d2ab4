/* The scheduler's and the bridge's HTTP endpoints, served by libmicrohttpd on its own thread:
 * GET /healthz and /livez (liveness), /readyz (readiness) answer 200 "ok" or 503 from a
 * callback; GET /metrics answers the registry's Prometheus text. Nothing else is served. */
#ifndef KC_CORE_HEALTH_H
#define KC_CORE_HEALTH_H

#include <stdbool.h>

#include "error.h"

struct health_server;
struct metrics;

/* path is "/healthz" (for /livez too) or "/readyz"; true answers 200. Called from the server's
 * thread, so it reads only what is safe to read from another thread. */
typedef bool (*health_check_fn)(void *ctx, const char *path);

struct health_options {
    int port; /* 0 picks a free one: see health_port */
    health_check_fn check;
    void *ctx;
    struct metrics *metrics; /* borrowed, outlives the server; NULL: /metrics is 404 */
    const char *port_file;   /* NULL, or a file the bound port is written to (one line) */
};

/* Listen on 0.0.0.0:port, then write port_file whole (renamed into place: a reader polling
 * for it never sees half). -errno with err naming the port, or the file, on failure. */
int health_start(struct health_server **out, const struct health_options *opt,
                 struct kc_error *err);
int health_port(const struct health_server *h);
/* Stops the thread and closes the socket; NULL is fine. */
void health_stop(struct health_server *h);

#endif
