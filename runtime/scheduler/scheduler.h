/* The scheduler: cluster events in, scheduling and binding cycles, decisions out. The same
 * code runs against the simulator and (later) the Kubernetes bridge. */
#ifndef KC_SCHED_SCHEDULER_H
#define KC_SCHED_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include <kcycle/kcycle.h>

#include "cache.h"
#include "config.h"
#include "error.h"
#include "framework.h"
#include "group.h"
#include "nominate.h"
#include "queue.h"
#include "remote.h"
#include "simfile.h"
#include "strmap.h"
#include "workers.h"

#define PERMIT_MAX_TIMEOUT_MS (15 * 60 * 1000)
#define CYCLE_MAX_REASONS 64
/* node_rejector values: 0 not rejected, else the plugin's index + 1, with
 * NODE_REJECTOR_UNRESOLVABLE when preemption cannot help there; NODE_REJECTOR_RESTRICTED: left
 * out by a PreFilter's restriction (before every Filter). */
#define NODE_REJECTOR_UNRESOLVABLE 0x100u
#define NODE_REJECTOR_RESTRICTED 0x200u

struct scheduler;

/* An object update a plugin asked for from PreBind (kc_cycle_write_object): a JSON merge patch
 * of kind namespace/name (namespace NULL when cluster-scoped), written before the Binding. */
struct object_write {
    char *kind;
    char *namespace;
    char *name;
    char *patch;
};

/* Where decisions go: the simulator records them, the bridge sends them to the API server. */
struct scheduler_sink {
    void *ctx;
    /* Bind pod to node with the cycle's annotations. 0: bound, the scheduler treats the pod as
     * assigned (a later pod update with spec.nodeName confirms it). 1: sent, the result comes
     * later through scheduler_bind_result (the pod stays assumed and its binding cycle open
     * until then). Negative: the binding failed. */
    int (*bind)(void *ctx, const struct pod *pod, const char *node,
                const struct kv_list *annotations);
    /* The attempt failed: PodScheduled=False with reason "Unschedulable" (no node fits) or
     * "SchedulerError" (a plugin, a plugin host or the binding failed), and the message. */
    void (*unschedulable)(void *ctx, const struct pod *pod, const char *reason,
                          const char *message);
    /* The pod was bound (Scheduled event). */
    void (*bound)(void *ctx, const struct pod *pod, const char *node);
    /* A pod group's status changed (PodGroup status): phase "Pending", "Scheduling",
     * "Scheduled", "Running" or "Failed"; scheduled: members bound; running: of those, the
     * running ones; message: why the group is not placed, or NULL. Optional. */
    void (*group_status)(void *ctx, const char *namespace_name, const char *name, const char *phase,
                         uint32_t scheduled, uint32_t running, const char *message);
    /* An object update of pod's binding cycle, handed over right before the pod's bind: the
     * binder writes it before the Binding, and a failed write fails that binding (the result
     * of bind says so). 0: taken; negative: the binding fails now. NULL: the binder cannot
     * write; the writes stay on the cycle (a plugin host returns them to the scheduler). */
    int (*write_object)(void *ctx, const struct pod *pod, const struct object_write *write);
    /* Preemption (optional; without evict no pod preempts). nominate: set the pod's
     * status.nominatedNodeName to node (NULL clears it). evict: delete victim (with a uid
     * precondition) because preemptor was nominated on node, and record a Preempted event.
     * Both are called at the end of a scheduling cycle and must not call back into the
     * scheduler: the deletion comes back later as a pod delete event. */
    void (*nominate)(void *ctx, const struct pod *pod, const char *node);
    void (*evict)(void *ctx, const struct pod *victim, const struct pod *preemptor,
                  const char *node);
    /* A plugin reported a custom object's status (kc_object_status): status_json, a JSON
     * object, replaces the object's status. The sink keeps the latest per object and writes it
     * at its own pace. Optional; must not call back into the scheduler. */
    void (*object_status)(void *ctx, const char *kind, const char *namespace_name,
                          const char *name, const char *status_json);
};

/* The scheduler clock; the simulator supplies a virtual one. */
struct scheduler_clock {
    void *ctx;
    int64_t (*now_ms)(void *ctx);
};

/* A custom object as last seen, for plugin-host snapshots. */
struct kept_object {
    char *key;
    struct sim_object object;
};

/* A rejection reason and how many nodes gave it in this attempt. */
struct reason_count {
    char *text;
    uint32_t count;
};

struct kc_cycle {
    struct scheduler *sched;
    struct sched_pod *sp;
    struct framework *fw; /* the generation it started on (a reference): its phases run there */
    struct {
        char *key;
        void *data;
        void (*free_fn)(void *);
    } * state;
    uint32_t state_count, state_capacity;
    struct kv_list annotations;
    char *node_name;    /* after Reserve: the chosen node */
    char *message;      /* a cycle-level rejection (PreFilter, Permit, ...) */
    uint64_t rejectors; /* plugins that rejected in this attempt */
    bool bind_pending;  /* the sink sent the binding; scheduler_bind_result ends the cycle */
    bool remote_post_bind_done; /* plugin hosts already ran PostBind (batched binding) */
    /* in a group cycle (group.c): the group, this member's position and the cycle's size */
    const struct pod_group *group;
    uint32_t group_index, group_count, group_needed;
    /* kc_filter_what_if calls since the plugin host's test harness last cleared it (a harness
     * reads how many a PostFilter made: kc_harness_what_if_count) */
    uint32_t what_if_calls;
    /* PreFilter's node restriction (kc_cycle_restrict_nodes, cycle.c): when restricted, the
     * allowed node indices, sorted; label names the restricting plugins for the message;
     * narrowed holds the candidates the restriction leaves (scheduler_evaluate). */
    bool restricted;
    bool in_pre_filter; /* run_pre_filters is running: the only phase that may restrict */
    uint32_t *restricted_nodes, restricted_count;
    char restrict_label[160];
    uint32_t *narrowed;
    /* the restricting names no node has, common to every restriction so far: kube intersects
     * names, not nodes, so an empty intersection of names (not of nodes) fails PreFilter */
    char **restricted_missing;
    uint32_t restricted_missing_count;
    /* object updates asked for in PreBind, handed to the sink before the bind */
    struct object_write *writes;
    uint32_t write_count;
    /* preemption (preempt.c): the PreFilter verdict (KC_SUCCESS when it passed) and skips,
     * what PostFilter said, and the preemption a PostFilter plugin chose */
    kc_status prefilter_status;
    uint64_t filter_skip;
    /* The Filter plugins PreFilter did not skip (filter_skip), in order: built once per
     * evaluation so that Filter does not test every plugin's skip bit on every node */
    struct plugin *filters[64];
    uint32_t filter_count;
    bool filters_ready;
    char *post_filter_message;
    struct preemption *preemption;
    /* plugin hosts: this attempt's id in Evaluate and WhatIf (remote.c; 0 until one is sent) */
    uint64_t remote_attempt;
    /* the plugins (framework index bits) whose PreScore skipped this attempt: a test harness
     * reads them (plugin-host/host.c) */
    uint64_t score_skip;
    /* Added in 1.2 for the plugin test harness (PhaseCall.write_result, kc_harness_fail_writes):
     * a negative errno kc_cycle_write_object answers instead of recording the write; 0 here */
    int write_result;
};

struct kc_waiting_pod {
    struct kc_cycle *cycle;
    uint64_t pending; /* plugins (bit = index) that said Wait and have not allowed */
    int64_t deadline_ms;
    char *wait_plugin; /* the plugin that set the earliest deadline */
    char timeout_text[24];
    bool rejected;
    char *reject_message;
    /* held by the runtime with its committed group until no member waits for a plugin (group.c);
     * no plugin's allow lifts it */
    bool group_hold;
    /* plugin hosts: what was already reported of this mirror (allows, a rejection) */
    uint64_t reported_pending;
    bool reported_rejected;
};

struct scheduler_stats {
    uint64_t attempts;
    uint64_t scheduled;
    uint64_t unschedulable_attempts;
    uint64_t error_attempts;
    uint64_t permit_waits;
    uint64_t permit_timeouts;
    uint64_t bind_failures;
    uint64_t binds_lost;       /* results that never came (the binder restarted): retried */
    uint64_t parallel_filters; /* attempts whose Filter ran on the worker threads */
    uint64_t preemptions;      /* pods nominated after choosing victims */
    uint64_t preemption_victims;
};

/* What one Filter/Score thread accumulates during an attempt; merged by the caller. */
struct worker_state {
    struct reason_count reasons[CYCLE_MAX_REASONS];
    uint32_t reason_count;
    uint64_t rejectors;
};

struct scheduler {
    struct config *cfg;   /* borrowed */
    struct framework *fw; /* the active generation */
    struct cache cache;
    struct queue queue;
    struct scheduler_sink sink;
    struct scheduler_clock clock;
    struct strmap pods;     /* uid -> struct sched_pod: the pending pods we own */
    struct strmap assigned; /* uid -> struct pod: pods with a node (any scheduler) */
    struct strmap objects;  /* "kind/namespace/name" -> struct kept_object */
    kc_host_api host;
    /* per-attempt scratch, sized to the node count, reused: no per-node allocation */
    const struct cache_node **feasible;
    uint8_t *feasible_flag; /* by position from the start index */
    uint16_t *remote_marks; /* by node index: hosts that found the node feasible */
    uint32_t *candidates;   /* node indices sent to plugin hosts */
    int64_t *scores;        /* plugin-major: scores[k * capacity + i] */
    int64_t *totals;
    uint32_t scratch_capacity;
    struct reason_count reasons[CYCLE_MAX_REASONS];
    uint32_t reason_count;
    uint32_t next_start_node;
    uint64_t rng;
    /* Permit */
    struct kc_waiting_pod **waiting;
    uint32_t waiting_count, waiting_capacity;
    /* binding cycles ready to run */
    struct kc_cycle **binding;
    uint32_t binding_count, binding_capacity;
    struct remote remote; /* plugin hosts (isolation: process) */
    /* binding cycles waiting to go to a plugin host's binder together */
    struct strmap binds_in_flight; /* uid -> struct kc_cycle: sent, result not yet known */
    struct kc_cycle **deferred;
    uint32_t deferred_count, deferred_capacity;
    int64_t deferred_since_us;
    struct workers workers;
    struct worker_state *worker_state; /* workers.count + 1 */
    int64_t filter_ns_per_node; /* the estimate of the Filter set sampled last (benchmarks) */
    uint64_t filter_runs;
    /* Filter's cost per node for each of the last few Filter sets (which plugins PreFilter
     * skipped): plain pods and spread or affinity pods cost tens of times apart, and one
     * estimate for both stayed at the cheap cost (scheduler_filter_cost_sample) */
    struct filter_cost {
        uint64_t skip;       /* the attempt's skipped Filter plugins: the set estimated */
        int64_t ns_per_node; /* smoothed least sample of each window; 0: none yet */
        int64_t least;       /* the least sample of the window being taken */
        uint32_t samples;    /* samples in that window */
        bool used;
        uint64_t last_run; /* filter_runs when last asked: the least recent is replaced */
    } filter_costs[4];
    bool force_parallel; /* tests: use the threads whatever the cost */
    struct scheduler_stats stats;
    struct sched_metrics *metrics; /* sched_metrics.c; NULL: metrics off */
    int64_t last_attempt_us;   /* latency of the last attempt, for benchmarks */
    struct group_table groups; /* pod groups (group.c) */
    /* hot reload: replaced generations that cycles still use, closed when the last one ends */
    char *plugin_dir;
    struct framework **retiring;
    uint32_t retiring_count, retiring_capacity;
    uint64_t generations; /* the number of the newest generation loaded */
    uint64_t switches, reload_failures, generations_closed;
    /* the generation of the cycle whose pod the sink is told about (bound), or NULL */
    const struct framework *serving;
    /* preemption (preempt.c): nominated pods; per node index, this attempt's Filter verdict
     * (KC_UNRESOLVABLE or KC_UNSCHEDULABLE) and whether nominated pods count there */
    struct nominations nominations;
    uint8_t *node_status;
    /* by node index, for merging backends in plugin order (remote.c): the first plugin that
     * rejected the node in the last evaluation (NODE_REJECTOR_*), and the merged verdict */
    uint16_t *node_rejector;
    uint16_t *node_winner;
    /* how many leading node indices hold the cleared marks (node_status KC_UNSCHEDULABLE,
     * node_rejector 0): whatever marks a node sets it to 0 (node_marks_clear) */
    uint32_t node_marks_clean;
    /* per node index: where this attempt's counted nominated pods start in nominated_pods
     * (+ 1; 0: none) and how many; filled by preempt_flag_nominated */
    uint32_t *nominated_first;
    uint16_t *nominated_count;
    const struct pod **nominated_pods;
    uint32_t nominated_pods_capacity;
    /* the node indices preempt_flag_nominated flagged last: cleared one by one next time
     * instead of clearing nominated_first for every node on every attempt */
    uint32_t *nominated_flagged;
    uint32_t nominated_flagged_count, nominated_flagged_capacity;
};

/* Create: load the configured plugins (plugin_dir, when not NULL, replaces the config's
 * pluginDir). After a failure, scheduler_close is still safe and resets the state. */
int scheduler_open(struct scheduler *s, struct config *cfg, const char *plugin_dir,
                   const struct scheduler_sink *sink, const struct scheduler_clock *clock,
                   struct kc_error *err);
void scheduler_close(struct scheduler *s);

/* Cluster events. The scheduler takes ownership of node and pod objects. */
int scheduler_node_add(struct scheduler *s, struct node *node);
int scheduler_node_update(struct scheduler *s, struct node *node);
int scheduler_node_delete(struct scheduler *s, const char *name);
/* A pod added or updated: assigned pods are accounted; unassigned pods for this scheduler
 * are queued; others are ignored (freed). */
int scheduler_pod_add(struct scheduler *s, struct pod *pod);
int scheduler_pod_update(struct scheduler *s, struct pod *pod);
int scheduler_pod_delete(struct scheduler *s, const char *uid);
int scheduler_object_event(struct scheduler *s, kc_event_type type, const char *kind,
                           const char *namespace, const char *name, const char *json);
/* A custom object put (added or changed), as KC_EVENT_OBJECT_ADD when the scheduler does not
 * have it yet and KC_EVENT_OBJECT_UPDATE when it does: the one place that tells the two apart
 * for the bridge's changes and a plugin host's replica alike. */
int scheduler_object_put(struct scheduler *s, const char *kind, const char *namespace,
                         const char *name, const char *json);

/* Run one scheduling cycle for the next active pod. Returns 1 if a pod was attempted, 0 if
 * the active queue was empty, or a negative code. */
int scheduler_schedule_one(struct scheduler *s);
/* Housekeeping: backoff and flush timers, Permit timeouts, allowed/rejected waiting pods and
 * the binding cycles ready to run. Returns how many binding cycles completed. */
int scheduler_tick(struct scheduler *s);
/* The result of a binding the sink sent (sink.bind returned 1): rc 0 bound (PostBind runs and
 * the pod counts as assigned), negative failed (Unreserve, the pod is forgotten and backs off
 * with message as its reason). -ENOENT when no binding of that pod is in flight. */
int scheduler_bind_result(struct scheduler *s, const char *uid, int rc, const char *message);
/* The binder restarted and its results are lost: every binding in flight fails with why and
 * is retried after backoff (the API server refuses a second binding of a bound pod). */
void scheduler_bind_results_lost(struct scheduler *s, const char *why);

/* Hot reload: load the plugins again as a new generation, from cfg (which then replaces the
 * scheduler's; NULL: the current configuration) with private copies of the files, check and
 * init them, tell the stateful ones the cluster (nodes, objects, pods, assumed pods, as add
 * events), then make new cycles use it. Cycles already open finish on the generation they
 * started on, which is closed (fini, dlclose) once its last cycle ends. On failure nothing
 * changes and err names the file and why. */
int scheduler_reload(struct scheduler *s, struct config *cfg, struct kc_error *err);
/* Close the replaced generations no cycle uses any more (scheduler_tick calls it). */
void scheduler_reap_generations(struct scheduler *s);

/* Earliest time a timer (backoff, flush, Permit) fires, or INT64_MAX. */
int64_t scheduler_next_due(const struct scheduler *s);
/* Anything left to do right now (active pods, binding cycles, decided waiting pods). */
bool scheduler_busy(const struct scheduler *s);
int64_t scheduler_now(const struct scheduler *s);
/* The total weighted score of the node the last attempt of pending pod uid chose (0 when only
 * one node was feasible). false: no such pending pod. */
bool scheduler_pod_score(const struct scheduler *s, const char *uid, int64_t *score);

/* Where a pod stands: 1 bound (*node set), 0 pending (*reason: the last failure message or
 * NULL), -ENOENT unknown. Strings belong to the scheduler. */
int scheduler_pod_status(const struct scheduler *s, const char *uid, const char **node,
                         const char **reason);

/* The scheduler currently serving host API calls (one per process at a time). */
struct scheduler *scheduler_current(void);
/* Make s the one serving host API calls, before calling a plugin outside the scheduler's own
 * paths (queue_calls.c). */
void scheduler_enter(struct scheduler *s);
void hostapi_fill(kc_host_api *api);

#endif
