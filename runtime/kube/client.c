/* HTTP to the API server over libcurl: one easy handle per client driven through its own multi
 * handle (so the connection is kept alive between requests, a stream can be stopped within
 * 100 ms and a request within its grace after a stop), bearer tokens re-read as they rotate,
 * and watch bodies split into JSON values. */
#include "kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CONNECT_TIMEOUT_MS 5000
#define TOKEN_REREAD_S 60
#define TOKEN_MAX (64 * 1024)
/* A non-200 stream body is kept for the message, up to this much. */
#define ERROR_BODY_MAX (64 * 1024)
/* How often a running transfer looks at the stop flag. */
#define POLL_SLICE_MS 100

struct kube_client {
    CURL *curl;
    CURLM *multi;
    char *server;
    char *user_agent;
    char *ca_file;
    char *ca_data;
    char *client_cert_file;
    char *client_key_file;
    char *client_cert_data;
    char *client_key_data;
    bool insecure;
    char *fixed_token;
    char *token_file;
    char *token;       /* what the Authorization header carries now; NULL: none */
    time_t token_read; /* monotonic seconds of the last read of token_file */
    struct kube_limits limits;
    /* kube_client_set_stop: requests end within stop_grace_ms of *stop becoming true, counted
     * from when this client first saw it (stop_seen_ms, monotonic; 0 before) */
    const atomic_bool *stop;
    long stop_grace_ms;
    int64_t stop_seen_ms;
    char errbuf[CURL_ERROR_SIZE];
};

/* ---- process-wide setup ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result;

static void global_init(void)
{
    global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- tokens ---- */

static time_t monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The token file's text without surrounding whitespace; NULL when unreadable or empty. */
static char *read_token_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = malloc(TOKEN_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        return NULL;
    }
    size_t n = fread(buf, 1, TOKEN_MAX, f);
    fclose(f);
    buf[n] = '\0';
    size_t start = strspn(buf, " \t\r\n");
    while (n > start && strchr(" \t\r\n", buf[n - 1]) != NULL)
        buf[--n] = '\0';
    if (n == start) {
        free(buf);
        return NULL;
    }
    memmove(buf, buf + start, n - start + 1);
    return buf;
}

/* Re-read the token file when forced (after a 401) or when the last read is a minute old.
 * A file that cannot be read keeps the token we have: a rotation may be half done. Returns
 * true when the token changed. */
static bool refresh_token(struct kube_client *c, bool force)
{
    if (c->token_file == NULL)
        return false;
    time_t now = monotonic_s();
    if (!force && c->token != NULL && now - c->token_read < TOKEN_REREAD_S)
        return false;
    c->token_read = now;
    char *token = read_token_file(c->token_file);
    if (token == NULL)
        return false;
    if (c->token != NULL && strcmp(c->token, token) == 0) {
        free(token);
        return false;
    }
    if (c->token != c->fixed_token)
        free(c->token);
    c->token = token;
    return true;
}

/* ---- client ---- */

static int dup_optional(const char *in, char **out)
{
    *out = NULL;
    if (in == NULL)
        return 0;
    *out = strdup(in);
    return *out == NULL ? -ENOMEM : 0;
}

void kube_client_free(struct kube_client *c)
{
    if (c == NULL)
        return;
    if (c->multi != NULL)
        curl_multi_cleanup(c->multi);
    if (c->curl != NULL)
        curl_easy_cleanup(c->curl);
    if (c->token != c->fixed_token)
        free(c->token);
    free(c->fixed_token);
    free(c->token_file);
    free(c->server);
    free(c->user_agent);
    free(c->ca_file);
    free(c->ca_data);
    free(c->client_cert_file);
    free(c->client_key_file);
    free(c->client_cert_data);
    free(c->client_key_data);
    free(c);
}

void kube_client_set_limits(struct kube_client *c, const struct kube_limits *limits)
{
    struct kube_limits l = limits != NULL ? *limits : (struct kube_limits){0};
    c->limits.response_bytes =
        l.response_bytes != 0 ? l.response_bytes : KUBE_DEFAULT_MAX_RESPONSE_BYTES;
    c->limits.event_bytes = l.event_bytes != 0 ? l.event_bytes : KUBE_DEFAULT_MAX_EVENT_BYTES;
    size_t pages = c->limits.response_bytes <= SIZE_MAX / KUBE_LIST_BYTES_FACTOR
                       ? c->limits.response_bytes * KUBE_LIST_BYTES_FACTOR
                       : SIZE_MAX;
    c->limits.list_bytes = l.list_bytes != 0 ? l.list_bytes : pages;
}

const struct kube_limits *kube_client_limits(const struct kube_client *c)
{
    return &c->limits;
}

void kube_client_set_stop(struct kube_client *c, const atomic_bool *stop, long grace_ms)
{
    c->stop = stop;
    c->stop_grace_ms = grace_ms > 0 ? grace_ms : 0;
    c->stop_seen_ms = 0;
}

int kube_client_new(const struct kube_config *cfg, const char *user_agent, struct kube_client **out,
                    struct kc_error *err)
{
    *out = NULL;
    if (cfg->server == NULL ||
        (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0))
        return kc_error_set(err, -EINVAL,
                            "API server '%s' is not a URL; expected https://host:port",
                            cfg->server != NULL ? cfg->server : "");
    pthread_once(&global_once, global_init);
    if (global_result != CURLE_OK)
        return kc_error_set(err, -ENOMEM, "cannot initialise libcurl: %s",
                            curl_easy_strerror(global_result));
    struct kube_client *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return kc_error_set(err, -ENOMEM, "kube client: out of memory");
    kube_client_set_limits(c, NULL);
    int rc = 0;
    if ((rc = dup_optional(cfg->server, &c->server)) != 0 ||
        (rc = dup_optional(user_agent != NULL ? user_agent : "kcycle", &c->user_agent)) != 0 ||
        (rc = dup_optional(cfg->ca_file, &c->ca_file)) != 0 ||
        (rc = dup_optional(cfg->ca_data, &c->ca_data)) != 0 ||
        (rc = dup_optional(cfg->client_cert_file, &c->client_cert_file)) != 0 ||
        (rc = dup_optional(cfg->client_key_file, &c->client_key_file)) != 0 ||
        (rc = dup_optional(cfg->client_cert_data, &c->client_cert_data)) != 0 ||
        (rc = dup_optional(cfg->client_key_data, &c->client_key_data)) != 0 ||
        (rc = dup_optional(cfg->token, &c->fixed_token)) != 0 ||
        (rc = dup_optional(cfg->token_file, &c->token_file)) != 0) {
        kube_client_free(c);
        return kc_error_set(err, rc, "kube client: out of memory");
    }
    size_t len = strlen(c->server);
    while (len > 0 && c->server[len - 1] == '/')
        c->server[--len] = '\0';
    c->insecure = cfg->insecure;
    c->token = c->fixed_token;
    refresh_token(c, true);
    if (c->token_file != NULL && c->token == NULL) {
        kube_client_free(c);
        return kc_error_set(err, -ENOENT,
                            "cannot read the bearer token file %s; check that it exists and "
                            "is readable",
                            cfg->token_file);
    }
    c->curl = curl_easy_init();
    c->multi = curl_multi_init();
    if (c->curl == NULL || c->multi == NULL) {
        kube_client_free(c);
        return kc_error_set(err, -ENOMEM, "kube client: cannot create a curl handle");
    }
    *out = c;
    return 0;
}

static void set_blob(CURL *curl, CURLoption option, const char *pem)
{
    struct curl_blob blob = {.data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY};
    curl_easy_setopt(curl, option, &blob);
}

/* Options every request carries. curl_easy_reset keeps the live connections, so the options of
 * the previous request never leak into the next and the connection is still reused. */
static void set_common_options(struct kube_client *c, const char *url)
{
    CURL *curl = c->curl;
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, c->errbuf);
    /* Large lists come gzip'd when the server offers it; watches are never compressed. */
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
    c->errbuf[0] = '\0';
    if (c->ca_file != NULL)
        curl_easy_setopt(curl, CURLOPT_CAINFO, c->ca_file);
    if (c->ca_data != NULL)
        set_blob(curl, CURLOPT_CAINFO_BLOB, c->ca_data);
    if (c->client_cert_file != NULL)
        curl_easy_setopt(curl, CURLOPT_SSLCERT, c->client_cert_file);
    if (c->client_cert_data != NULL)
        set_blob(curl, CURLOPT_SSLCERT_BLOB, c->client_cert_data);
    if (c->client_cert_file != NULL || c->client_cert_data != NULL)
        curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    if (c->client_key_file != NULL)
        curl_easy_setopt(curl, CURLOPT_SSLKEY, c->client_key_file);
    if (c->client_key_data != NULL)
        set_blob(curl, CURLOPT_SSLKEY_BLOB, c->client_key_data);
    if (c->client_key_file != NULL || c->client_key_data != NULL)
        curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    if (c->insecure) {
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

/* Append one header; on failure the whole list is freed and NULL returned. */
static struct curl_slist *add_header(struct curl_slist *headers, const char *line)
{
    struct curl_slist *next = curl_slist_append(headers, line);
    if (next == NULL)
        curl_slist_free_all(headers);
    return next;
}

/* The request's headers, or NULL when out of memory (never a list without the token). */
static struct curl_slist *build_headers(const struct kube_client *c, const char *content_type)
{
    struct curl_slist *headers = add_header(NULL, "Accept: application/json");
    /* No 100-continue round trip before bodies. */
    if (headers != NULL)
        headers = add_header(headers, "Expect:");
    if (headers != NULL && content_type != NULL) {
        char line[256];
        snprintf(line, sizeof(line), "Content-Type: %s", content_type);
        headers = add_header(headers, line);
    }
    if (headers != NULL && c->token != NULL) {
        size_t len = strlen(c->token) + 32;
        char *auth = malloc(len);
        if (auth == NULL) {
            curl_slist_free_all(headers);
            return NULL;
        }
        snprintf(auth, len, "Authorization: Bearer %s", c->token);
        headers = add_header(headers, auth);
        free(auth);
    }
    return headers;
}

static char *make_url(const struct kube_client *c, const char *path)
{
    size_t len = strlen(c->server) + strlen(path) + 1;
    char *url = malloc(len);
    if (url != NULL)
        snprintf(url, len, "%s%s", c->server, path);
    return url;
}

/* Whether a transfer under stop (NULL: none) with grace_ms to finish after it is over now. The
 * grace counts from the first time this client saw the stop, so that a caller's later requests
 * share it rather than each getting its own. */
static bool past_stop(struct kube_client *c, const atomic_bool *stop, long grace_ms)
{
    if (stop == NULL || !atomic_load(stop))
        return false;
    int64_t now = monotonic_ms();
    if (c->stop_seen_ms == 0)
        c->stop_seen_ms = now;
    return now - c->stop_seen_ms >= grace_ms;
}

/* Run the transfer set up on c->curl to its end, or until grace_ms after *stop (stop may be
 * NULL). A transfer not started yet when the grace is over is not started at all. */
static CURLcode perform(struct kube_client *c, const atomic_bool *stop, long grace_ms,
                        bool *stopped)
{
    *stopped = past_stop(c, stop, grace_ms);
    if (*stopped)
        return CURLE_ABORTED_BY_CALLBACK;
    if (curl_multi_add_handle(c->multi, c->curl) != CURLM_OK)
        return CURLE_OUT_OF_MEMORY;
    CURLcode result = CURLE_OK;
    for (;;) {
        int running = 0;
        if (curl_multi_perform(c->multi, &running) != CURLM_OK) {
            result = CURLE_OUT_OF_MEMORY;
            break;
        }
        CURLMsg *msg;
        int queued;
        bool done = false;
        while ((msg = curl_multi_info_read(c->multi, &queued)) != NULL) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->curl) {
                result = msg->data.result;
                done = true;
            }
        }
        if (done || running == 0)
            break;
        if (past_stop(c, stop, grace_ms)) {
            *stopped = true;
            break;
        }
        curl_multi_poll(c->multi, NULL, 0, POLL_SLICE_MS, NULL);
    }
#if LIBCURL_VERSION_NUM >= 0x075700
    /* Stopped while the server's name is still being resolved: removing the transfer would
     * wait for the resolver thread's getaddrinfo (seconds per DNS server and search domain);
     * the thread is left to end on its own instead. */
    if (*stopped)
        curl_easy_setopt(c->curl, CURLOPT_QUICK_EXIT, 1L);
#endif
    /* Removing an unfinished transfer closes its connection; a finished one stays cached. */
    curl_multi_remove_handle(c->multi, c->curl);
    return result;
}

static int curl_code_to_errno(CURLcode code)
{
    switch (code) {
    case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return -EHOSTUNREACH;
    case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
    case CURLE_OUT_OF_MEMORY: return -ENOMEM;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED: return -EPROTO;
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return -ECONNRESET;
    default: return -EIO;
    }
}

static const char *curl_code_hint(CURLcode code)
{
    switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST: return "; check the server address and that it is up";
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CONNECT_ERROR: return "; check the CA and client certificates";
    default: return "";
    }
}

static int transfer_error(struct kube_client *c, const char *method, const char *path,
                          CURLcode code, struct kc_error *err)
{
    return kc_error_set(err, curl_code_to_errno(code), "%s %s%s: %s%s%s%s%s", method, c->server,
                        path, curl_easy_strerror(code), c->errbuf[0] != '\0' ? " (" : "", c->errbuf,
                        c->errbuf[0] != '\0' ? ")" : "", curl_code_hint(code));
}

/* A response over a limit: name the request, the limit and the flag that raises it. */
static int too_large_error(struct kube_client *c, const char *method, const char *path,
                           const char *what, size_t limit, const char *flag, struct kc_error *err)
{
    return kc_error_set(err, -EFBIG,
                        "%s %s%s: %s is larger than the limit of %zu bytes (%.1f MiB, decoded); "
                        "if the cluster really needs more, raise %s",
                        method, c->server, path, what, limit, (double)limit / (1 << 20), flag);
}

/* ---- whole responses ---- */

struct body_buffer {
    char *data;
    size_t len, capacity;
    size_t max;       /* 0: no limit; beyond it bytes are dropped, or refused when refuse_over */
    bool refuse_over; /* a body over max fails the transfer (too_large) instead of being cut */
    bool failed;
    bool too_large;
};

static bool body_append(struct body_buffer *b, const char *data, size_t len)
{
    if (b->max != 0 && b->len + len > b->max) {
        if (b->refuse_over) {
            b->too_large = true;
            return false;
        }
        len = b->len < b->max ? b->max - b->len : 0;
    }
    if (b->len + len + 1 > b->capacity) {
        size_t capacity = b->capacity < 4096 ? 4096 : b->capacity;
        while (capacity < b->len + len + 1)
            capacity *= 2;
        /* never more than the limit allows: doubling past it would only reserve memory */
        if (b->max != 0 && capacity > b->max + 1 && b->len + len + 1 <= b->max + 1)
            capacity = b->max + 1;
        char *grown = realloc(b->data, capacity);
        if (grown == NULL) {
            b->failed = true;
            return false;
        }
        b->data = grown;
        b->capacity = capacity;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return true;
}

static size_t write_body(char *data, size_t size, size_t count, void *userdata)
{
    struct body_buffer *b = userdata;
    return body_append(b, data, size * count) ? size * count : 0;
}

void kube_response_free(struct kube_response *r)
{
    if (r == NULL)
        return;
    free(r->body);
    r->body = NULL;
    r->len = 0;
    r->status = 0;
}

static int request_once(struct kube_client *c, const char *method, const char *path,
                        const char *url, const char *content_type, const char *body,
                        size_t body_len, long timeout_ms, struct kube_response *out,
                        struct kc_error *err)
{
    set_common_options(c, url);
    struct curl_slist *headers = build_headers(c, content_type);
    if (headers == NULL)
        return kc_error_set(err, -ENOMEM, "%s %s: out of memory", method, path);
    struct body_buffer response = {.max = c->limits.response_bytes, .refuse_over = true};
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &response);
    if (timeout_ms > 0)
        curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
    } else {
        if (body != NULL || strcmp(method, "POST") == 0) {
            curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
            curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body != NULL ? body : "");
        }
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    }
    bool stopped;
    CURLcode code = perform(c, c->stop, c->stop_grace_ms, &stopped);
    curl_slist_free_all(headers);
    if (stopped) {
        free(response.data);
        return kc_error_set(err, -ECANCELED, "%s %s%s: abandoned: the client is stopping",
                            method, c->server, path);
    }
    if (code == CURLE_WRITE_ERROR && response.failed)
        code = CURLE_OUT_OF_MEMORY;
    if (code == CURLE_WRITE_ERROR && response.too_large) {
        free(response.data);
        return too_large_error(c, method, path, "the response", c->limits.response_bytes,
                               "--max-response-bytes", err);
    }
    if (code != CURLE_OK) {
        free(response.data);
        return transfer_error(c, method, path, code, err);
    }
    if (response.data == NULL && (response.data = calloc(1, 1)) == NULL)
        return kc_error_set(err, -ENOMEM, "%s %s: out of memory", method, path);
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = response.data;
    out->len = response.len;
    return 0;
}

int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len, long timeout_ms,
                 struct kube_response *out, struct kc_error *err)
{
    memset(out, 0, sizeof(*out));
    char *url = make_url(c, path);
    if (url == NULL)
        return kc_error_set(err, -ENOMEM, "%s %s: out of memory", method, path);
    refresh_token(c, false);
    int rc = request_once(c, method, path, url, content_type, body, body_len, timeout_ms, out, err);
    if (rc == 0 && out->status == 401 && c->token_file != NULL) {
        refresh_token(c, true);
        kube_response_free(out);
        rc = request_once(c, method, path, url, content_type, body, body_len, timeout_ms, out, err);
    }
    free(url);
    return rc;
}

/* ---- streams ---- */

struct stream_state {
    struct kube_client *c;
    enum kube_stream_kind kind;
    size_t received; /* decoded bytes of a 200 body so far */
    bool too_large;  /* a list body over the response limit */
    const atomic_bool *stop;
    kube_value_fn fn;
    void *ctx;
    struct json_splitter splitter;
    struct body_buffer error_body;
    long status;
    int fn_result;    /* fn's non-zero return: a clean stop */
    int split_result; /* the splitter's error (-EPROTO, -ENOMEM) */
};

static int forward_value(void *ctx, const char *json, size_t len)
{
    struct stream_state *s = ctx;
    int rc = s->fn(s->ctx, json, len);
    if (rc != 0)
        s->fn_result = rc;
    return rc;
}

static size_t write_stream(char *data, size_t size, size_t count, void *userdata)
{
    struct stream_state *s = userdata;
    size_t len = size * count;
    if (s->status == 0)
        curl_easy_getinfo(s->c->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status != 200)
        return body_append(&s->error_body, data, len) ? len : 0;
    /* Counted here, after curl decoded the body, so a compressed one is bounded by what it
     * expands to. A watch's events are bounded one by one by the splitter instead. */
    s->received += len;
    if (s->kind == KUBE_STREAM_LIST && s->received > s->c->limits.response_bytes) {
        s->too_large = true;
        return 0;
    }
    int rc = json_splitter_feed(&s->splitter, data, len, forward_value, s);
    if (rc != 0 && s->fn_result == 0)
        s->split_result = rc;
    return rc == 0 ? len : 0;
}

static int stream_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    const struct stream_state *s = userdata;
    return s->stop != NULL && atomic_load(s->stop) ? 1 : 0;
}

static int stream_once(struct kube_client *c, const char *path, const char *url,
                       long idle_timeout_ms, struct stream_state *s, struct kc_error *err)
{
    set_common_options(c, url);
    struct curl_slist *headers = build_headers(c, NULL);
    if (headers == NULL)
        return kc_error_set(err, -ENOMEM, "GET %s: out of memory", path);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_stream);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, stream_progress);
    curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, s);
    if (idle_timeout_ms > 0) {
        /* Less than a byte a second for that long: the connection is dead. */
        curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, (idle_timeout_ms + 999) / 1000);
    }
    bool stopped;
    CURLcode code = perform(c, s->stop, 0, &stopped);
    curl_slist_free_all(headers);
    /* a transfer never started has no status (the handle's is the previous transfer's) */
    if (s->status == 0 && !(stopped && code == CURLE_ABORTED_BY_CALLBACK))
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (stopped || code == CURLE_ABORTED_BY_CALLBACK)
        return 0;
    if (code == CURLE_WRITE_ERROR && s->fn_result != 0)
        return 0;
    if (code == CURLE_WRITE_ERROR && s->too_large)
        return too_large_error(c, "GET", path, "the list", c->limits.response_bytes,
                               "--max-response-bytes", err);
    if (code == CURLE_WRITE_ERROR && s->split_result == -EFBIG)
        return s->kind == KUBE_STREAM_LIST
                   ? too_large_error(c, "GET", path, "the list", c->limits.response_bytes,
                                     "--max-response-bytes", err)
                   : too_large_error(c, "GET", path, "one watch event", c->limits.event_bytes,
                                     "--max-event-bytes", err);
    if (code == CURLE_WRITE_ERROR && s->split_result == -EPROTO)
        return kc_error_set(err, -EPROTO,
                            "GET %s%s: the server sent something that is not a stream of JSON "
                            "values",
                            c->server, path);
    if (code == CURLE_WRITE_ERROR && (s->split_result == -ENOMEM || s->error_body.failed))
        code = CURLE_OUT_OF_MEMORY;
    if (code == CURLE_OPERATION_TIMEDOUT && idle_timeout_ms > 0)
        return kc_error_set(err, -ETIMEDOUT, "GET %s%s: nothing received for %ld ms", c->server,
                            path, idle_timeout_ms);
    if (code != CURLE_OK)
        return transfer_error(c, "GET", path, code, err);
    return 0;
}

int kube_stream(struct kube_client *c, const char *path, enum kube_stream_kind kind,
                long idle_timeout_ms, const atomic_bool *stop, kube_value_fn fn, void *ctx,
                long *status, char **error_body, struct kc_error *err)
{
    *status = 0;
    if (error_body != NULL)
        *error_body = NULL;
    char *url = make_url(c, path);
    if (url == NULL)
        return kc_error_set(err, -ENOMEM, "GET %s: out of memory", path);
    refresh_token(c, false);
    struct stream_state s = {.c = c, .kind = kind, .stop = stop, .fn = fn, .ctx = ctx};
    s.error_body.max = ERROR_BODY_MAX;
    s.splitter.max_value =
        kind == KUBE_STREAM_LIST ? c->limits.response_bytes : c->limits.event_bytes;
    int rc = stream_once(c, path, url, idle_timeout_ms, &s, err);
    if (rc == 0 && s.status == 401 && c->token_file != NULL && !(stop && atomic_load(stop))) {
        refresh_token(c, true);
        free(s.error_body.data);
        s.error_body = (struct body_buffer){.max = ERROR_BODY_MAX};
        s.status = 0;
        s.received = 0;
        rc = stream_once(c, path, url, idle_timeout_ms, &s, err);
    }
    free(url);
    json_splitter_free(&s.splitter);
    *status = s.status;
    if (error_body != NULL && s.status != 200 && s.error_body.data != NULL)
        *error_body = s.error_body.data;
    else
        free(s.error_body.data);
    return rc;
}

/* ---- helpers ---- */

size_t kube_url_encode(char *out, size_t size, const char *in)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t needed = 0;
    size_t written = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p != '\0'; p++) {
        bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        size_t width = plain ? 1 : 3;
        /* Never split a %XX: write a character only when all of it fits with the NUL. */
        if (written == needed && size > 0 && written + width < size) {
            if (plain) {
                out[written] = (char)*p;
            } else {
                out[written] = '%';
                out[written + 1] = hex[*p >> 4];
                out[written + 2] = hex[*p & 15];
            }
            written += width;
        }
        needed += width;
    }
    if (size > 0)
        out[written] = '\0';
    return needed;
}

void kube_status_text(const char *body, char *out, size_t size)
{
    if (size == 0)
        return;
    out[0] = '\0';
    if (body == NULL)
        return;
    json_t *root = json_loads(body, 0, NULL);
    if (root == NULL)
        return;
    const char *reason = json_string_value(json_object_get(root, "reason"));
    const char *message = json_string_value(json_object_get(root, "message"));
    if (reason != NULL && reason[0] == '\0')
        reason = NULL;
    if (message != NULL && message[0] == '\0')
        message = NULL;
    if (reason != NULL && message != NULL)
        snprintf(out, size, "%s: %s", reason, message);
    else if (reason != NULL || message != NULL)
        snprintf(out, size, "%s", reason != NULL ? reason : message);
    json_decref(root);
}
