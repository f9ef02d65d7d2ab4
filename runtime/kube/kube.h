/* The Kubernetes client library: connection config (kubeconfig or in-cluster), HTTP requests
 * over libcurl with keep-alive, a streaming JSON splitter for watch bodies, and a reflector
 * that lists then watches one resource and turns relists into add/update/delete diffs. Only
 * the bridge links it; the scheduler never speaks HTTP. */
#ifndef KC_KUBE_KUBE_H
#define KC_KUBE_KUBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strmap.h"

struct tree;

/* ---- configuration ---- */

/* Where the API server is and how to prove who we are. Every string is malloc'd or NULL. */
struct kube_config {
    char *server;           /* "https://host:port" (no trailing slash) */
    char *ca_file;          /* PEM file to verify the server, or NULL */
    char *ca_data;          /* PEM text (certificate-authority-data, decoded), or NULL */
    char *token;            /* a fixed bearer token, or NULL */
    char *token_file;       /* bearer token read from this file (re-read: tokens rotate) */
    char *client_cert_file; /* client certificate (PEM) */
    char *client_key_file;
    char *client_cert_data; /* decoded client-certificate-data / client-key-data */
    char *client_key_data;
    char *namespace; /* the namespace this process runs in ("default" when unknown) */
    bool insecure;   /* insecure-skip-tls-verify: true in the kubeconfig; never by default */
};

/* kubeconfig (YAML): clusters[].cluster.{server, certificate-authority(-data),
 * insecure-skip-tls-verify}, users[].user.{token, tokenFile, client-certificate(-data),
 * client-key(-data)}, contexts[].context.{cluster, user, namespace}, current-context.
 * context NULL means current-context. Relative file paths are relative to the kubeconfig's
 * folder. Errors name file:line:column. */
int kube_config_from_kubeconfig(const char *path, const char *context, struct kube_config *out,
                                struct kc_error *err);
/* In-cluster: $KUBERNETES_SERVICE_HOST/PORT, the service account's ca.crt and token file under
 * root (NULL: /var/run/secrets/kubernetes.io/serviceaccount), namespace from $POD_NAMESPACE or
 * the namespace file. -ENOENT with a message when not in a cluster. */
int kube_config_in_cluster(const char *root, struct kube_config *out, struct kc_error *err);
void kube_config_free(struct kube_config *c);

/* ---- requests ---- */

/* One connection (a curl easy handle, kept alive, HTTP/2 when the server offers it). Not
 * thread-safe: one per thread. */
struct kube_client;

/* user_agent: e.g. "kcycle-kube-bridge/1.0.0 (replica-a)". The client copies what it needs
 * from cfg. */
int kube_client_new(const struct kube_config *cfg, const char *user_agent,
                    struct kube_client **out, struct kc_error *err);
void kube_client_free(struct kube_client *c);

/* How much one response may bring, counted in decoded bytes (after gzip or any other content
 * encoding curl undoes), so a small compressed body cannot expand without bound. A request or
 * list body over response_bytes, or one watch event over event_bytes, ends the transfer with
 * -EFBIG and a message naming the request and the limit; the caller backs off as after any
 * failure. A new client has the defaults. */
#define KUBE_DEFAULT_MAX_RESPONSE_BYTES ((size_t)256 << 20)
#define KUBE_DEFAULT_MAX_EVENT_BYTES ((size_t)16 << 20)
struct kube_limits {
    size_t response_bytes; /* a whole response (a list page, a GET); 0: the default */
    size_t event_bytes;    /* one JSON value of a watch stream; 0: the default */
    /* all the pages of one list together (a server may hand out continue tokens forever);
     * 0: the default, KUBE_LIST_BYTES_FACTOR x response_bytes */
    size_t list_bytes;
};
#define KUBE_LIST_BYTES_FACTOR 4
void kube_client_set_limits(struct kube_client *c, const struct kube_limits *limits);
/* The limits in force (defaults filled in). */
const struct kube_limits *kube_client_limits(const struct kube_client *c);

/* Bound this client's requests (kube_request) by a stop flag, so that a process stopping is
 * not held by the API server for a request's whole timeout: a request in flight when *stop
 * becomes true gets grace_ms more to finish (a write the server is answering is not cut
 * half-way for nothing), and one started after the grace fails at once, -ECANCELED. The grace
 * counts once per client, from the first request that saw the stop. stop NULL (the default):
 * requests run to their timeout. stop must outlive the client. Streams take their own stop. */
void kube_client_set_stop(struct kube_client *c, const atomic_bool *stop, long grace_ms);

/* A finished request: status is the HTTP status (0 when no response came); body is
 * NUL-terminated, malloc'd. */
struct kube_response {
    long status;
    char *body;
    size_t len;
};
void kube_response_free(struct kube_response *r);

/* Send one request and wait for the whole response. path starts with "/" and is appended to
 * the server; body may be NULL. timeout_ms 0 means none. A 401 re-reads the token file and
 * retries once. Returns 0 when a response arrived (whatever its status), or a negative code
 * with err naming the method, path and what failed (connection refused, TLS, timeout;
 * -ECANCELED: abandoned after the stop of kube_client_set_stop). */
int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len, long timeout_ms,
                 struct kube_response *out, struct kc_error *err);

/* Each complete JSON value of a stream, in order. Return 0 to go on, non-zero to stop. */
typedef int (*kube_value_fn)(void *ctx, const char *json, size_t len);

/* What a stream is, for its limits: a list's body is one value bounded by the response limit;
 * a watch runs for minutes with any number of events, each bounded by the event limit. */
enum kube_stream_kind { KUBE_STREAM_LIST, KUBE_STREAM_WATCH };

/* GET path and hand every top-level JSON value of the body to fn as it completes (a watch).
 * Returns when the server closes the stream, fn returns non-zero, *stop becomes true (checked
 * at least every 200 ms) or after timeout_ms of silence (0: none). *status gets the HTTP
 * status. When the status is not 200 the body is not split: it is returned in *error_body
 * (malloc'd, NUL-terminated, may be NULL). 0 on a clean end, negative on a transport error,
 * -EFBIG over a limit (see kube_client_set_limits). */
int kube_stream(struct kube_client *c, const char *path, enum kube_stream_kind kind,
                long idle_timeout_ms, const atomic_bool *stop, kube_value_fn fn, void *ctx,
                long *status, char **error_body, struct kc_error *err);

/* Splits a byte stream into top-level JSON values (objects, arrays, strings, numbers,
 * literals) whatever the chunking: a value may arrive in many pieces and one piece may hold
 * many values. Whitespace between values is skipped. */
struct json_splitter {
    char *buf;
    size_t len, capacity;
    size_t scanned; /* bytes of buf already scanned */
    size_t start;   /* where the current value starts */
    int depth;
    bool in_value, in_string, escape;
    size_t max_value; /* a longer value fails the feed with -EFBIG; 0: no limit */
};
/* Feed bytes; fn gets each completed value. Returns 0, -ENOMEM, -EPROTO on a byte that cannot
 * start or continue a value (e.g. a stray '}' at depth 0), -EFBIG when a value (complete or
 * not) passes max_value, or fn's non-zero return. */
int json_splitter_feed(struct json_splitter *s, const char *data, size_t len, kube_value_fn fn,
                       void *ctx);
/* (added) The stream ended: hand fn a top-level number or literal still waiting for the byte
 * that ends it. 0 (nothing pending or delivered), -EPROTO when a string, object or array is
 * unfinished, or fn's non-zero return. The value fn gets from either function is
 * NUL-terminated during the call. A zeroed struct is an empty splitter. */
int json_splitter_finish(struct json_splitter *s, kube_value_fn fn, void *ctx);
void json_splitter_free(struct json_splitter *s);

/* Build a query string value: percent-encodes everything but unreserved characters. Writes at
 * most size bytes including the NUL; returns the length it needed. */
size_t kube_url_encode(char *out, size_t size, const char *in);

/* Check a namespace (label true: a DNS-1123 label) or an object name (a DNS-1123 subdomain)
 * before it goes into an API path: 0, or -EINVAL with why ("WHAT \"VALUE\" is not a valid
 * ...") in at most size bytes. What passes holds no '/', '%', '?', '#' or "..". */
int kube_check_name(const char *what, const char *value, bool label, char *why, size_t size);

/* ---- reflector: list + watch one resource ---- */

enum kube_event_type { KUBE_ADDED, KUBE_MODIFIED, KUBE_DELETED };

struct kube_resource {
    const char *kind;           /* "Pod": for messages */
    const char *path;           /* "/api/v1/pods", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups" */
    const char *field_selector; /* NULL or "status.phase!=Succeeded,status.phase!=Failed" */
    uint32_t page_size;         /* list limit; 0: 500 */
};

struct kube_reflector_ops {
    void *ctx;
    /* An object changed. object is the parsed object ({metadata, spec, status} as struct
     * tree), valid only during the call; NULL for a delete that a relist discovered (the
     * object is gone from the list). namespace is "" for cluster-scoped objects. Called from
     * the reflector's thread, in resourceVersion order per resource. */
    void (*event)(void *ctx, enum kube_event_type type, const char *namespace, const char *name,
                  const char *uid, const struct tree *object);
    /* The first list (or a relist after 410 or a reconnect) has been delivered in full. */
    void (*synced)(void *ctx);
    /* Optional: a problem worth logging was handled (reconnecting, relisting, a bad object
     * skipped). The text names the resource and object. */
    void (*warn)(void *ctx, const char *message);
    /* Optional: the list answered 404, the server does not serve this resource (a CRD that is
     * not installed; discovery would say the same; a watch's 404 leads to such a list). Every
     * object the store held has been reported deleted first. The reflector keeps listing with
     * backoff, so a resource served later is picked up; the next synced() says so. When set,
     * a 404 is not also passed to warn. */
    void (*not_served)(void *ctx);
};

/* What the reflector remembers of each object: enough to diff a relist and name deletes. */
struct kube_store_item {
    char *key; /* "namespace/name" or "name" */
    char *namespace;
    char *name;
    char *uid;
    char *resource_version;
    bool seen; /* during a relist */
};

struct kube_reflector {
    const struct kube_resource *resource;
    struct kube_reflector_ops ops;
    struct kube_client *client;   /* owned by the caller, used only by the reflector's thread */
    struct strmap store;          /* key -> struct kube_store_item */
    char *resource_version;       /* the last list or watch RV we can resume from */
    const atomic_bool *stop;      /* the caller's stop flag */
    uint32_t watch_timeout_s;     /* asked of the server; 0: random 300..600 */
    int64_t backoff_ms;           /* current reconnect backoff: 200 ms .. 30 s, with jitter */
    /* counters for tests and benchmarks */
    uint64_t lists, watches, relists_after_expired, events, bookmarks, bad_objects;
};

/* Prepare (no I/O). The client and stop flag are borrowed. */
int kube_reflector_init(struct kube_reflector *r, const struct kube_resource *resource,
                        const struct kube_reflector_ops *ops, struct kube_client *client,
                        const atomic_bool *stop);
/* List (paged), diff against the store, then watch from the list's RV with bookmarks; on a
 * 410 (HTTP or an ERROR event) relist; on a cut stream resume from the last RV; on errors back
 * off with jitter. Runs until *stop. Never emits an event twice or loses one: a relist emits
 * ADDED for new keys, MODIFIED for a changed RV (or uid: then DELETED + ADDED), DELETED for keys
 * gone. Returns 0 when stopped. */
int kube_reflector_run(struct kube_reflector *r);
void kube_reflector_free(struct kube_reflector *r);

/* For fuzz targets and tests, without a server: one list response body (a page; the store is
 * diffed against it unless it carries a continue token) or a watch response body (its events
 * in order, up to an ERROR event), handed to the ops as kube_reflector_run would. 0, -EPROTO
 * for a body that is not a list or not a stream of JSON values, -ENOMEM. */
int kube_reflector_feed_list(struct kube_reflector *r, const char *body, size_t len);
int kube_reflector_feed_watch(struct kube_reflector *r, const char *stream, size_t len);

/* Parse a Status body ({"kind":"Status",...}) into reason and message for logs; "" if none. */
void kube_status_text(const char *body, char *out, size_t size);

#endif
