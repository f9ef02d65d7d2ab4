/* kcycle-kube-bridge: the only process that talks to the Kubernetes API. It lists and watches
 * the cluster and streams it to the scheduler over nng (proto/kcycle/v1/bridge.proto), and
 * carries out the scheduler's decisions: bindings, pod conditions, events. With leader
 * election on, it binds only while it holds the Lease and tells its scheduler when it does. */
#ifndef KC_BRIDGE_BRIDGE_H
#define KC_BRIDGE_BRIDGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

#include "error.h"
#include "ipc_peer.h"
#include "kube.h"
#include "metrics.h"
#include "strmap.h"

struct bridge_options {
    const char *listen_url; /* "ipc:///run/kcycle/bridge.sock" */
    const char *kubeconfig; /* NULL: in-cluster, then $KUBECONFIG */
    const char *context;    /* NULL: current-context */
    const char *scheduler_name;
    bool leader_elect;
    const char *lease_name;
    const char *lease_namespace; /* NULL: the namespace we run in */
    const char *identity;
    int64_t lease_duration_ms, renew_deadline_ms, retry_period_ms;
    uint32_t workers; /* API writers */
    int health_port;  /* -1: off; 0: a free port (with health_port_file) */
    const char *health_port_file; /* NULL, or where the port served is written */
    struct kube_limits limits; /* every API client's; zeros: the defaults */
};

/* One listed and watched resource, with what was last sent of each object. */
struct bridge_watch {
    struct bridge *bridge;
    struct kube_resource resource;
    char kind;     /* 'p' pods, 'n' nodes, 'o' custom objects */
    bool required; /* readiness waits for its first list */
    struct kube_client *client;
    struct kube_reflector reflector;
    struct strmap items; /* key ("ns/name" or "name") -> struct bridge_item */
    atomic_bool synced;
    atomic_bool not_served; /* the list answered 404: readiness does not wait for it */
    int64_t last_warn_ms;   /* the reflector's thread only */
    struct metric_counter *events_metric, *lists_metric; /* bridge_metrics.c; NULL: off */
    pthread_t thread;
    bool started;
};

/* The packed ClusterChange (a put) last seen of an object, restated in every sync. */
struct bridge_item {
    char *key;
    uint8_t *change;
    size_t len;
};

/* A binding this bridge sent: in flight, or accepted and not yet seen in the watch. A second
 * binding of the pod is refused here, and a sync shows the pod bound meanwhile. */
struct bridge_binding {
    char *key; /* "namespace/name", as the pods' items */
    char *uid;
    char *node;
    bool landed; /* 201: the API server set spec.nodeName */
    bool seen;   /* the watch showed it bound: kept a while for decisions made before that */
    int64_t landed_ms;
};

/* After the stop, an API request in flight gets this long to finish before it is abandoned;
 * every thread of the bridge ends within about this long of SIGTERM. */
#define BRIDGE_STOP_GRACE_MS 1000

/* Lists and watches the bridge keeps: nodes, pods and the custom objects plugins read. */
#define BRIDGE_MAX_WATCHES 32

/* The status of a PodGroup still to write. */
struct bridge_group_status {
    char *key;  /* "kind/namespace/name" (PodGroups and plugins' custom objects) */
    char *json; /* the latest status object not yet written; NULL when none */
    bool queued, writing;
};

/* Work for the API writers. */
struct bridge_work {
    enum {
        WORK_BIND,
        WORK_UNSCHEDULABLE,
        WORK_SCHEDULED,
        WORK_GROUP_STATUS,
        WORK_NOMINATE, /* preemption: node ("" clears) */
        WORK_EVICT     /* preemption: node, and the preemptor in related_* */
    } type;
    uint64_t id;
    uint64_t session; /* the scheduler session that asked: work of an ended one is dropped */
    char *namespace, *name, *uid, *node, *reason, *message;
    char *annotations_json; /* bindings: {"k":"v",...}; group status: the status object */
    /* bindings: the object updates to write first, [{"kind","namespace","name","patch"}] */
    char *writes_json;
    char *related_namespace, *related_name, *related_uid; /* evictions: the preemptor */
    char *kind; /* status writes: the object's kind (PodGroup, CapacityQueue) */
    struct bridge_work *next;
};

struct bridge_stats {
    _Atomic uint64_t changes_sent, messages_sent, syncs, bindings, binding_failures, conditions,
        events, api_errors, leader_changes, skipped_objects, bindings_refused, group_statuses,
        object_writes, nominations, evictions, eviction_failures, object_statuses;
    /* Start-up, in ms (-1 until it happened): what an operator waits for after a restart or a
     * failover before pods are scheduled again. */
    _Atomic int64_t start_to_first_sync_ms, first_sync_to_first_binding_ms;
};

/* The bridge's series (bridge_metrics.c), served on the health port's /metrics. */
struct bridge_metrics {
    struct metrics *registry; /* NULL while the HTTP endpoints are off */
    struct metric_counter *bindings[3], *api_errors, *syncs, *leader_changes, *events_written;
    struct metric_gauge *leader;
};

struct bridge {
    struct bridge_options opt;
    struct kube_config kube;
    char user_agent[256];
    atomic_bool stop;
    nng_socket sock;
    bool sock_open;
    struct ipc_peer_guard peer; /* only the scheduler of this uid gets through */
    /* everything below up to `cond` is guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct bridge_watch watches[BRIDGE_MAX_WATCHES];
    uint32_t watch_count;
    nng_msg **out; /* queued ToScheduler messages; the last one is still being filled */
    uint32_t out_count, out_capacity;
    size_t out_bytes;
    bool session_active;           /* the scheduler asked (hello) and got its sync */
    bool hello_pending;            /* asked before the first lists were done */
    int64_t hello_ms;              /* monotonic: the first hello before the first sync, then the last */
    int64_t lists_done_ms;         /* monotonic: the required lists were first all done; 0 before */
    _Atomic int64_t first_sync_ms; /* monotonic; 0 before */
    uint64_t session;
    nng_pipe pipe;
    bool leadership_dirty;
    /* leader election */
    atomic_bool leader;
    _Atomic int64_t leader_until_ms; /* monotonic: bindings allowed until then */
    char holder[256];                /* the lease holder last seen */
    pthread_t leader_thread;
    bool leader_started;
    /* API writers */
    pthread_mutex_t work_lock;
    pthread_cond_t work_cond;
    struct bridge_work *work_head, *work_tail;
    uint32_t work_count;
    pthread_t *writers;
    uint32_t writer_count;
    atomic_bool writers_joined; /* set by bridge_close: the lease is released after them */
    pthread_mutex_t binding_lock; /* taken after lock, never before it */
    struct strmap bindings;       /* key -> struct bridge_binding */
    int64_t bindings_swept_ms;
    pthread_mutex_t reported_lock;
    struct strmap reported; /* uid -> last unschedulable message sent (owned, key inside) */
    /* PodGroup statuses: the latest per group, one write at a time per group (the writers run
     * in parallel and would otherwise let an older status land last) */
    pthread_mutex_t group_status_lock;
    struct strmap group_status; /* "ns/name" -> struct bridge_group_status */
    pthread_t receiver;
    bool receiver_started;
    struct health_server *health;
    struct bridge_metrics metrics;
    int64_t start_ms;
    struct bridge_stats stats;
};

/* Read the kube config, open the socket, start nothing yet. After a failure bridge_close is
 * still safe. */
int bridge_open(struct bridge *b, const struct bridge_options *opt, struct kc_error *err);
/* Start the watches, writers, leader election and probes; send until stop. 0 when stopped. */
int bridge_run(struct bridge *b);
/* Ask bridge_run to return (signal-safe: only stores a flag). */
void bridge_stop(struct bridge *b);
void bridge_close(struct bridge *b);

/* The pieces bridge_run starts, for benchmarks that feed events without watches: the thread
 * that answers the scheduler's hello, and the loop that sends queued messages until stop. */
int bridge_start_receiver(struct bridge *b, struct kc_error *err);
void bridge_send_loop(struct bridge *b);
/* A reflector's event callback; ctx is the struct bridge_watch. */
void bridge_watch_event(void *ctx, enum kube_event_type type, const char *namespace,
                        const char *name, const char *uid, const struct tree *object);

bool bridge_alive(struct bridge *b);
bool bridge_ready(struct bridge *b);

/* Leader election (leader.c), run on its own thread by bridge_run. */
void *bridge_leader_main(void *arg);
/* Bindings are allowed: leader election off, or the lease renewed within the renew deadline. */
bool bridge_may_bind(struct bridge *b);
/* Queue a Leadership message for the scheduler (lock held by the caller). */
void bridge_note_leadership(struct bridge *b);

int64_t bridge_monotonic_ms(void);
/* RFC 3339 with microseconds, UTC: "2026-11-29T10:00:00.000000Z". */
void bridge_format_time(char *out, size_t size);

/* /metrics (bridge_metrics.c): make the registry and the series once the watches are set up.
 * 0 or -ENOMEM; close is safe after a failed or no open. */
int bridge_metrics_open(struct bridge *b);
void bridge_metrics_close(struct bridge *b);

#endif
