/* A tiny plain-HTTP server for the kubelet's probes: GET /healthz and /readyz answer 200 "ok"
 * or 503 from a callback. One thread, one connection at a time; nothing else is served. */
#ifndef KC_CORE_HEALTH_H
#define KC_CORE_HEALTH_H

#include <stdbool.h>

#include "error.h"

struct health_server;

/* path is "/healthz" or "/readyz"; true answers 200. Called from the server's thread. */
typedef bool (*health_check_fn)(void *ctx, const char *path);

/* Listen on 0.0.0.0:port (port 0 picks one: see health_port). -errno with err naming the port
 * when it cannot listen. */
int health_start(struct health_server **out, int port, health_check_fn check, void *ctx,
                 struct kc_error *err);
int health_port(const struct health_server *h);
/* Stops the thread and closes the socket; NULL is fine. */
void health_stop(struct health_server *h);

#endif
