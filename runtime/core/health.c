/* Probe endpoints over plain HTTP/1.0: enough for httpGet probes, nothing more. */
#include "health.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct health_server {
    int fd;
    int port;
    health_check_fn check;
    void *ctx;
    atomic_bool stop;
    pthread_t thread;
};

static void answer(struct health_server *h, int conn)
{
    char request[512];
    size_t got = 0;
    /* the request line is all we need; a slow or silent client gets 1 s */
    while (got < sizeof(request) - 1) {
        struct pollfd p = {.fd = conn, .events = POLLIN};
        if (poll(&p, 1, 1000) <= 0)
            break;
        ssize_t n = recv(conn, request + got, sizeof(request) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        request[got] = '\0';
        if (strstr(request, "\r\n") != NULL || strchr(request, '\n') != NULL)
            break;
    }
    request[got] = '\0';
    char path[64] = "";
    int status = 404;
    if (sscanf(request, "GET %63s", path) == 1) {
        char *query = strchr(path, '?');
        if (query != NULL)
            *query = '\0';
        if (strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0 ||
            strcmp(path, "/readyz") == 0)
            status =
                h->check(h->ctx, strcmp(path, "/readyz") == 0 ? "/readyz" : "/healthz") ? 200 : 503;
    }
    const char *body = status == 200 ? "ok\n" : status == 503 ? "not ready\n" : "not found\n";
    char reply[256];
    int len = snprintf(reply, sizeof(reply),
                       "HTTP/1.0 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                       "Connection: close\r\n\r\n%s",
                       status,
                       status == 200   ? "OK"
                       : status == 503 ? "Service Unavailable"
                                       : "Not Found",
                       strlen(body), body);
    ssize_t sent = send(conn, reply, (size_t)len, MSG_NOSIGNAL);
    (void)sent;
}

static void *serve(void *arg)
{
    struct health_server *h = arg;
    while (!atomic_load(&h->stop)) {
        struct pollfd p = {.fd = h->fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        int conn = accept(h->fd, NULL, NULL);
        if (conn < 0)
            continue;
        answer(h, conn);
        close(conn);
    }
    return NULL;
}

int health_start(struct health_server **out, int port, health_check_fn check, void *ctx,
                 struct kc_error *err)
{
    *out = NULL;
    struct health_server *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    h->check = check;
    h->ctx = ctx;
    h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(h->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(h->fd, 16) < 0) {
        int code = -errno;
        if (h->fd >= 0)
            close(h->fd);
        free(h);
        return kc_error_set(err, code, "cannot serve health probes on port %d: %s", port,
                            strerror(-code));
    }
    socklen_t len = sizeof(addr);
    getsockname(h->fd, (struct sockaddr *)&addr, &len);
    h->port = ntohs(addr.sin_port);
    if (pthread_create(&h->thread, NULL, serve, h) != 0) {
        close(h->fd);
        free(h);
        return kc_error_set(err, -EAGAIN, "cannot start the health probe thread");
    }
    *out = h;
    return 0;
}

int health_port(const struct health_server *h)
{
    return h->port;
}

void health_stop(struct health_server *h)
{
    if (h == NULL)
        return;
    atomic_store(&h->stop, true);
    pthread_join(h->thread, NULL);
    close(h->fd);
    free(h);
}
