/* The scheduler's side of kcycle-kube-bridge: cluster changes in over nng, bindings, pod
 * conditions and events out (proto/kcycle/v1/bridge.proto). The scheduler schedules only
 * while its bridge holds the lease. */
#ifndef KC_SCHED_BRIDGE_CLIENT_H
#define KC_SCHED_BRIDGE_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

#include "bridge.pb-c.h"
#include "config.h"
#include "error.h"
#include "ipc_peer.h"
#include "metrics.h"
#include "reload.h"
#include "scheduler.h"
#include "strmap.h"

struct bridge_client_options {
    const char *url;         /* the bridge's listen URL; NULL: the config's bridge.address */
    const char *config_path; /* NULL: defaults */
    const char *plugin_dir;
    bool watch_plugins; /* hot reload of changed plugin files */
    bool watch_config;  /* hot reload of a changed config file (SIGHUP always reloads) */
};

/* A binding sent and not yet answered. */
struct bridge_bind {
    char *uid;
    uint64_t id;
    int64_t sent_ms;
};

struct bridge_client {
    struct config cfg;
    char *config_path; /* for reloads */
    struct scheduler sched;
    bool sched_open;
    struct reloader reload;
    nng_socket sock;
    bool sock_open;
    nng_dialer dialer;          /* redialed while the bridge stays unreachable (check_dialer) */
    char *url;                  /* the bridge's address */
    int64_t down_since_ms;      /* not connected since (0: connected) */
    int64_t dialed_ms;          /* the last dial */
    int64_t redial_logged_ms;   /* the last time a redial was logged */
    struct ipc_peer_guard peer; /* only this uid's bridge gets through */
    atomic_uint pipe_adds, pipe_removes; /* counted by nng's pipe callback */
    unsigned pipe_events_seen;           /* adds + removes when last looked at */
    bool connected;                      /* a pipe to the bridge is up */
    bool synced;                         /* the bridge's full state arrived since the last hello */
    bool leader;                         /* the bridge holds the lease */
    /* during a sync: the keys restated since sync_begin (owned copies) */
    bool syncing;
    bool sync_onto_empty; /* the sync began with nothing kept: nothing to delete, no seen set */
    struct strmap seen;
    char **seen_keys;
    uint32_t seen_count, seen_capacity;
    /* commands gathered during a loop turn, sent together */
    Kcycle__V1__ToBridge out;
    Kcycle__V1__Binding **bindings;
    Kcycle__V1__Unschedulable **unschedulable;
    Kcycle__V1__Scheduled **scheduled;
    Kcycle__V1__GroupStatus **group_status;
    uint32_t binding_capacity, unschedulable_capacity, scheduled_capacity, group_status_capacity;
    Kcycle__V1__ObjectWrite **object_writes; /* each sent with its pod's binding */
    uint32_t object_write_capacity;
    /* preemption */
    Kcycle__V1__Nomination **nominations;
    Kcycle__V1__Eviction **evictions;
    uint32_t nomination_capacity, eviction_capacity;
    /* plugins' object status (kc_object_status): the latest per object not sent yet, sent at
     * most once a second (the bridge writes each object's latest) */
    Kcycle__V1__ObjectStatus **status_pending, **object_status;
    uint32_t status_pending_count, status_pending_capacity, object_status_capacity;
    int64_t status_sent_ms;
    /* bridge_client_feed: what flush would send, packed here instead (malloc'd) */
    bool feeding;
    uint8_t *fed;
    size_t fed_len;
    int fed_rc; /* the first failure to pack it, or 0 */
    uint64_t next_bind_id; /* random high half: unique across restarts */
    uint64_t session;      /* sent with the last hello; other messages are stale */
    int64_t hello_sent_ms; /* when the last hello left, until a message of its session came */
    int64_t hello_first_ms; /* the first hello of this connection */
    bool hello_warned;      /* unanswered for HELLO_WARN_MS on this connection: warned once */
    struct strmap binds;   /* uid -> struct bridge_bind: the answer we wait for */
    int64_t next_expiry_check_ms;
    _Atomic int64_t last_loop_ms; /* for the liveness probe */
    atomic_bool ready;            /* connected and in sync, for the readiness probe */
    struct metric_gauge *leader_metric; /* kcycle_leader, or NULL */
    struct bridge_client_stats {
        uint64_t messages, changes, syncs, bind_results, bind_failures, decode_errors,
            stale_messages, stale_results, bind_timeouts, evictions, eviction_failures;
    } stats;
};

/* Load the config and plugins, open the scheduler and dial the bridge (the dialer reconnects
 * by itself). After a failure bridge_client_close is still safe. */
int bridge_client_open(struct bridge_client *b, const struct bridge_client_options *opt,
                       struct kc_error *err);
/* Run until *stop: apply changes, schedule while leader, send decisions. 0 when stopped. */
int bridge_client_run(struct bridge_client *b, const atomic_bool *stop);
void bridge_client_close(struct bridge_client *b);

/* For fuzz targets and the soak test, in place of the bridge: one loop turn without nng. The
 * bridge counts as connected; the reloader is polled, one packed ToScheduler applied as if
 * received, then, as bridge_client_run does and only when in sync and leader, up to max_cycles
 * scheduling cycles with their ticks. What would be sent to the bridge is packed and checked to
 * decode (several sends of the turn one after the other, which read as one merged ToBridge);
 * with out non-NULL it is handed over (malloc'd, the caller frees it; its bindings wait for the
 * BindResult the caller feeds back), else dropped. *out_len (may be NULL) gets its size. 0,
 * -ENOMEM, or -EPROTO when the ToBridge the scheduler built does not decode; then its bindings
 * fail as unsent ones do. */
int bridge_client_feed(struct bridge_client *b, const uint8_t *data, size_t len,
                       uint32_t max_cycles, uint8_t **out, size_t *out_len);
/* For the same callers: as if the connection to the bridge dropped and came back, with this
 * session (the one the fed messages carry) and binding ids counting on from next_bind_id: what
 * waited for an answer is failed, and the scheduler is neither in sync nor leader until fed
 * messages say so. */
void bridge_client_feed_connect(struct bridge_client *b, uint64_t session, uint64_t next_bind_id);
/* Record the scheduler's metrics (sched_metrics.h) and the leader state into registry (borrowed,
 * outlives b), after a successful open. 0 or -ENOMEM. */
int bridge_client_metrics(struct bridge_client *b, struct metrics *registry);

/* For the health endpoints: the loop turned within the last 30 s; synced and connected. */
bool bridge_client_alive(const struct bridge_client *b, int64_t now_ms);
bool bridge_client_ready(const struct bridge_client *b);

#endif
