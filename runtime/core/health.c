/* Probe and metrics endpoints over libmicrohttpd (see health.h). The library owns the HTTP
 * parsing, keep-alive and timeouts; this file only maps paths to answers and bounds what a
 * client may cost: a few connections, a small request buffer, a short idle timeout. */
#include "health.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics.h"

/* A probe or a scrape needs one connection; a few spare ones cover a slow client. */
#define HEALTH_MAX_CONNECTIONS 16
/* Request line and headers of a probe or a scrape fit in a few KiB; more is refused (431). */
#define HEALTH_REQUEST_MEMORY (16 * 1024)
#define HEALTH_IDLE_TIMEOUT_S 5

struct health_server {
    struct MHD_Daemon *daemon;
    int port;
    struct health_options opt;
};

static enum MHD_Result reply(struct MHD_Connection *connection, unsigned int status,
                             const char *content_type, char *body, size_t length, bool owned)
{
    struct MHD_Response *response = MHD_create_response_from_buffer(
        length, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (response == NULL) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    enum MHD_Result rc = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *connection, unsigned int status,
                                  const char *text)
{
    return reply(connection, status, "text/plain; charset=utf-8", (char *)text, strlen(text),
                 false);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **request_state)
{
    static int headers_seen;
    struct health_server *h = cls;
    bool get =
        strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (*request_state == NULL) {
        /* the first call has the headers only: refuse another method now, before its body is
         * read (the library then closes the connection); answer the rest once complete */
        if (!get)
            return reply_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
        *request_state = &headers_seen;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0; /* a body is never wanted: drop it */
        return MHD_YES;
    }
    if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0 || strcmp(url, "/readyz") == 0) {
        bool ok = h->opt.check(h->opt.ctx, strcmp(url, "/readyz") == 0 ? "/readyz" : "/healthz");
        return ok ? reply_text(connection, MHD_HTTP_OK, "ok\n")
                  : reply_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
    }
    if (strcmp(url, "/metrics") == 0 && h->opt.metrics != NULL) {
        size_t length = 0;
        char *text = metrics_render(h->opt.metrics, &length);
        if (text == NULL)
            return reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
        return reply(connection, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
                     length, true);
    }
    return reply_text(connection, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* Why port cannot be bound, as the library does not always keep errno: bind it once more
 * the way the library does (SO_REUSEADDR, all addresses). -errno, or -EIO when it binds. */
static int bind_error(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_ANY)};
    int code = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ? -errno : -EIO;
    close(fd);
    return code;
}

/* --health-port-file: the bound port, written whole (a reader polling for the file never sees
 * half of it). 0 or -errno. */
static int write_port_file(const char *path, int port)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -errno;
    int rc = fprintf(f, "%d\n", port) < 0 ? -EIO : 0;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int health_start(struct health_server **out, const struct health_options *opt, struct kc_error *err)
{
    *out = NULL;
    struct health_server *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    h->opt = *opt;
    errno = 0;
    /* poll, not select: no FD_SETSIZE limit on the descriptors a busy process already holds */
    h->daemon =
        MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD, (uint16_t)opt->port, NULL, NULL, answer, h,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HEALTH_MAX_CONNECTIONS,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEALTH_REQUEST_MEMORY,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HEALTH_IDLE_TIMEOUT_S,
                         MHD_OPTION_END);
    /* no MHD_OPTION_LISTENING_ADDRESS_REUSE: it sets SO_REUSEPORT, with which a second process
     * on the same port would share it silently; the library's default (SO_REUSEADDR) lets a
     * restarted process rebind at once and still makes a taken port an error */
    if (h->daemon == NULL) {
        int saved = errno;
        int code = bind_error(opt->port); /* the port's own answer first: errno may be stale */
        if (code == -EIO && saved != 0)
            code = -saved;
        free(h);
        return kc_error_set(err, code,
                            "cannot serve /healthz, /readyz and /metrics on port %d: %s (choose "
                            "another with --health-port)",
                            opt->port, strerror(-code));
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info != NULL ? info->port : opt->port;
    int rc = opt->port_file != NULL ? write_port_file(opt->port_file, h->port) : 0;
    if (rc < 0) {
        health_stop(h);
        return kc_error_set(err, rc, "cannot write the port served to %s: %s", opt->port_file,
                            strerror(-rc));
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
    MHD_stop_daemon(h->daemon);
    free(h);
}
