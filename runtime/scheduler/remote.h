/* Plugins in kcycle-plugin-host processes (isolation: process): starting and restarting the
 * hosts, the delta journal that keeps their replicas exact, one evaluation round trip per pod
 * per host, and the later phases. The protocol is proto/kcycle/v1/plugin.proto. */
#ifndef KC_SCHED_REMOTE_H
#define KC_SCHED_REMOTE_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <kcycle/kcycle.h>

#include "channel.h"
#include "error.h"
#include "framework.h"
#include "remote_bound.h"

struct scheduler;
struct kc_cycle;
struct pod;
struct node;
struct cache_node;

enum remote_state { REMOTE_DOWN, REMOTE_UP, REMOTE_BROKEN };

struct remote_host {
    char *name;
    struct plugin **plugins; /* framework plugins this host serves, in config order */
    uint32_t plugin_count;
    uint32_t phases; /* union of the plugins' Phase bits */
    enum remote_state state;
    pid_t pid;
    struct channel channel; /* the inherited socketpair to the host; fd -1 while down */
    uint64_t cursor; /* journal sequence number of the next delta to send */
    int64_t generation_offset;
    uint64_t request_id;
    uint32_t starts, restarts, consecutive_failures;
    int64_t next_start_ms;
    char *last_error;
    /* hot reload: each generation of the plugins has hosts of its own; a replaced generation's
     * hosts serve its open cycles (retiring: never restarted) and stop when it closes */
    uint64_t generation;
    bool retiring;
    /* per attempt */
    bool in_evaluation;
    uint64_t evaluate_round_trips;
    uint64_t group_requests; /* requests of group members (EvaluateGroup), up to 64 each */
    /* a group request's size (remote.c group_chunk): the members of the last one and the
     * longest time one member took there, so the next one fits the plugin timeout */
    uint32_t group_chunk_last;
    int64_t group_member_us;
    uint64_t round_trips;
    int64_t sent_ns; /* the last request's send time, for the round-trip metric (0: not timed) */
    uint32_t restarts_published; /* restarts already added to the host name's metric */
};

struct journal_entry {
    uint8_t *data; /* a packed Delta */
    uint32_t len;
};

struct stopping_host {
    pid_t pid;
    int64_t since_ms; /* when it was sent SIGTERM */
};

/* A group cycle's members evaluated by its one evaluating host, up to 64 in a request
 * (remote_group_begin): each member's evaluation is taken in turn by remote_evaluate while the
 * scheduler's own steps match what the host assumed (the journal since the request holds only
 * the assumptions of the members placed before, on the nodes the host chose, and the member's
 * request is the one the host answered). At the first difference the rest is dropped and the
 * members go one round trip each, as without it. */
struct remote_group_batch {
    struct remote_host *host;
    struct Kcycle__V1__Reply *reply; /* the host's EvaluateGroupReply; NULL: no batch */
    const char **uids;               /* the members' uids in order (borrowed from their pods) */
    const struct pod *const *pods;  /* the members' pods in order (into rest_base) */
    uint32_t count;
    uint32_t want;
    uint32_t next;          /* the member whose evaluation is taken next */
    uint32_t placed_before; /* members before `next` the host placed */
    uint32_t assumed;       /* of the host's placements, those the journal recorded, in order */
    uint32_t *placed;       /* the indices of the members the host placed, in order */
    const char **host_nodes; /* per member: the node the host placed it on (borrowed), or NULL */
    uint32_t placed_count;
    /* what the answer was computed with: the host's incarnation (its restarts when it answered:
     * a restarted host's replica is not the one that assumed the members) and, while the
     * members taken so far were picked by the host, the tie-breaking state the next member's
     * pick started from (the scheduler's must be the same) */
    uint32_t restarts;
    uint64_t rng;
    bool rng_known;
    /* the members not asked for yet: a request carries as many as fit well inside the plugin
     * timeout (remote.c group_chunk), the next one goes when these are taken */
    const struct pod **rest_base; /* owned array of the group's pods (borrowed) */
    const struct pod **rest;      /* into rest_base: the first member not asked for yet */
    uint32_t rest_count;
};

/* The evaluating host's choice (EvaluateReply.picked) in the last remote_evaluate. */
struct remote_pick {
    bool valid;
    uint32_t node;  /* cache index of the chosen node */
    uint32_t found; /* feasible nodes */
    uint32_t last;  /* cache index of the last feasible node */
    int64_t total;  /* the chosen node's weighted score */
    uint64_t rng;   /* the tie-breaking state after the choice */
};

struct remote {
    struct remote_host **hosts; /* every live host: the active generation's and retiring ones */
    uint32_t host_count, host_capacity;
    struct journal_entry *journal;
    uint32_t journal_count, journal_capacity;
    uint64_t journal_base; /* sequence number of journal[0] */
    uint64_t attempt_seq;  /* the last kc_cycle.remote_attempt given */
    int64_t timeout_ms;    /* deadline of one request */
    char *host_binary;
    struct stopping_host *stopping; /* hosts asked to stop, not reaped yet */
    uint32_t stopping_count, stopping_capacity;
    /* the merged evaluation's filter round, kept per host of the cycle's generation until the
     * final list is known: a host whose feasible nodes are that list scored it already */
    struct Kcycle__V1__Reply *filter_replies[FRAMEWORK_MAX_PLUGINS];
    int64_t watched_ms; /* when remote_watch last looked for dead hosts (scheduler clock) */
    bool all_candidates; /* the evaluation being checked has every node as a candidate */
    struct remote_group_batch group;
    struct remote_pick pick;
    /* Evaluate.reserve: the evaluating host's Reserve answer that came with the last
     * evaluation, for that cycle's Reserve call once its Assume went out marked as_evaluated
     * as the first delta after the evaluation (remote.c, "Reserve with the evaluation") */
    struct remote_ride {
        struct Kcycle__V1__Reply *reply; /* owned; NULL: none */
        struct remote_host *host;
        uint32_t restarts;                 /* the host's incarnation that answered */
        const struct kc_cycle *cycle;
        const struct pod *pod;
        char *node;           /* owned */
        uint64_t journal_end; /* the journal's end when the answer came */
        bool assumed;         /* the Assume went out, marked */
    } ride;
    uint64_t group_requests, group_members_taken; /* counted for the benchmarks */
    /* a binding batch sent without waiting for its answer (remote.c, "a binding batch in the
     * air") */
    struct remote_flight {
        uint32_t host_count;              /* the binding hosts it went to; 0: none in the air */
        struct remote_host *hosts[FRAMEWORK_MAX_PLUGINS];
        uint32_t restarts[FRAMEWORK_MAX_PLUGINS]; /* each host's incarnation it went to */
        struct Kcycle__V1__Reply *replies[FRAMEWORK_MAX_PLUGINS]; /* owned once received */
        bool received[FRAMEWORK_MAX_PLUGINS];
        struct kc_cycle **cycles;         /* owned array; the cycles are the scheduler's */
        struct remote_binding *results;   /* owned, room for count */
        uint32_t count;
        uint64_t batches;                 /* sent this way, for the benchmarks */
    } flight;
    /* the cycle thread and the host it sends its evaluations to, pinned to one CPU or spread
     * and polling, whichever the last trials found faster (remote.c, "where the evaluating
     * host runs") */
    struct remote_colocation {
        int enabled;        /* 0: not decided yet, 1: on, -1: off */
        bool forced;        /* KCYCLE_HOST_COLOCATE=1: always pinned, no trials */
        bool spreading;     /* the last evaluation went spread (the thread's spin is long) */
        bool run_spread;    /* the placement the last trials chose */
        int phase;          /* trial spread, trial pinned, or run the chosen one */
        uint32_t warming;   /* evaluations left before the first trials */
        int64_t phase_ns;   /* when the phase began (monotonic); 0: before the first */
        int64_t last_ns;    /* the previous evaluation in this phase; 0: none counted */
        int64_t window_ns;  /* the intervals counted in this phase, summed */
        uint32_t window_count;
        int64_t spread_ns, pin_ns; /* the last trials' mean intervals; 0: too few to tell */
        uint64_t decisions, spread_decisions; /* trials compared, and spread chosen */
        uint64_t spread_round_trips; /* evaluations sent spread */
        int cpu;            /* the CPU both run on; -1: not pinned now */
        pid_t pid;          /* the host pinned there; 0: none */
        int64_t since_ms;   /* when pinned, or released (monotonic) */
        int64_t hold_ms;    /* let go at the first evaluation this long after the pin; 0: 1 s */
        cpu_set_t allowed;  /* the cycle thread's mask before */
        uint64_t round_trips; /* evaluations sent to a host on the cycle thread's CPU */
    } colocation;
    /* the pods assumed in the hosts, as the wire carried them: a binding that brings back the
     * assumed object goes as a PodBound (remote_bound.h) */
    struct remote_bound bound;
};

/* Start a host for each group of isolation: process plugins (after framework_open). A required
 * plugin whose host cannot start is an error; others are reported and left out. */
int remote_open(struct scheduler *s, struct kc_error *err);
void remote_close(struct scheduler *s);

/* The cycle thread and the host pinned beside it get their CPUs back (remote.c, "one CPU for
 * the cycle thread and its evaluating host"): when the queue is empty, and before anything
 * that starts threads on the cycle thread (a reload). Nothing when nothing is pinned. */
void remote_colocation_release(struct scheduler *s);

/* The placement rule: spread (mean interval spread_ns between evaluations) is chosen over
 * pinned (pin_ns) when measured and at least 5 % faster; 0 is "too few to tell". */
bool remote_placement_spread_wins(int64_t spread_ns, int64_t pin_ns);

/* Hot reload: start and handshake new hosts for fw's isolation: process plugins beside the
 * serving ones (fw->hosts). Any host or plugin that does not start (a plugin left out before
 * excepted) refuses the reload: the new hosts are stopped and err says why; the serving hosts
 * and their circuit breakers are untouched. */
/* Before a reload loads in-process plugins: load and init them first in a throwaway plugin
 * host, so that a new build which crashes or hangs in init is refused (-EIO, err naming the
 * files) instead of taking the scheduler down. Other failures are left to the real load. */
int remote_trial(struct scheduler *s, const struct config *cfg, const char *plugin_dir,
                 struct kc_error *err);
int remote_build(struct scheduler *s, struct framework *fw, struct kc_error *err);
/* The hosts of a generation no cycle uses any more (or of one refused): ask them to stop
 * (SIGTERM and the end of their channel; remote_reap_stopped reaps them, or kills them after a
 * grace period) and free them. */
void remote_release(struct scheduler *s, struct framework *fw);
/* Reap the hosts remote_release asked to stop (called every tick); wait: until all are gone
 * (at close). */
void remote_reap_stopped(struct scheduler *s, bool wait);
/* A replaced generation's hosts: they serve its open cycles only, and are not restarted. */
void remote_retire(struct framework *fw);

/* Record a cluster change for the hosts (called for every cache change, in order). */
void remote_journal(struct scheduler *s, kc_event_type type, const struct pod *pod,
                    const struct cache_node *node, const char *object_kind,
                    const char *object_namespace, const char *object_name, const char *object_json);

/* A pod entered (put) or left WaitOnPermit: hosts mirror it so their plugins can allow it. */
struct kc_waiting_pod;
/* A group cycle's trial preemption change (POD_DELETE, POD_ADD, POD_ASSUME, POD_FORGET): the
 * hosts' replicas change their caches alike and deliver no event, as in process. */
void remote_journal_trial(struct scheduler *s, kc_event_type type, const struct pod *pod,
                          const char *node);
void remote_journal_waiting(struct scheduler *s, const struct kc_waiting_pod *w, bool put);

/* The evaluation of cycle's pod by every host, on candidates (node indices, in order; NULL:
 * every node from the rotating start, candidate_count being the node count). Results
 * are merged into the scheduler's scratch: s->feasible (intersection, first `want`),
 * s->totals (weighted remote scores), s->reasons, cycle->rejectors. Returns KC_SUCCESS,
 * KC_UNSCHEDULABLE (a host's PreFilter rejected: *message says why) or KC_ERROR. */
kc_status remote_evaluate(struct scheduler *s, struct kc_cycle *cycle, const uint32_t *candidates,
                          uint32_t candidate_count, uint32_t want, uint32_t *found,
                          uint32_t *processed, char **message);

/* After remote_evaluate over every node (candidates NULL) with one host that filters and
 * scores and nothing scoring in process, the host may have picked the node as the scheduler's
 * selection would (plugin.proto's Evaluate.pick): true with *out, and then s->feasible holds
 * only the chosen node, whatever *found said. Taken once. */
bool remote_picked(struct scheduler *s, struct remote_pick *out);

/* Between attempts: a host that died while idle (nothing asked it anything) is noticed, and a
 * down host is started again (and resynced) once its backoff ends, so a host comes back even
 * when no pod needs it yet. */
void remote_watch(struct scheduler *s);
/* When remote_watch next has a host to start (scheduler clock), or INT64_MAX. */
int64_t remote_next_due(const struct scheduler *s);

/* Whether one round trip per host gives the result of one backend running every plugin:
 * no host evaluates, or one does and it is the only backend with Filter or the only one that
 * scores what the others left (an in-process PreFilter's rejection is checked apart with
 * remote_pre_filter_before). Otherwise the cycle merges node by node (the three below). */
bool remote_single_evaluation(const struct framework *fw);

/* A group cycle is about to place `count` pods in this order on cycle generation fw: when one
 * host does all the evaluating (no in-process Filter or Score, no Reserve or Permit in that
 * host), ask it for them, up to 64 a round trip (plugin.proto's EvaluateGroup); remote_evaluate
 * then takes each member's evaluation from the answer. Nothing happens otherwise, or when the
 * request fails (the members then go one by one). remote_group_end drops what is left. */
void remote_group_begin(struct scheduler *s, const struct framework *fw,
                        const struct pod *const *pods, uint32_t count);
void remote_group_end(struct scheduler *s);

/* Whether a plugin in a host with PreFilter comes before plugin (an index of fw) in the
 * configuration: its PreFilter's rejection would be the attempt's, not plugin's. */
bool remote_pre_filter_before(const struct framework *fw, uint32_t plugin);

/* Every host with PreFilter or Filter evaluates every node (rotated from start) and answers
 * which of its plugins rejected each; merged into s->node_winner (which holds the in-process
 * verdicts) so each node keeps the rejection of the plugin first in the configuration. A
 * host's PreFilter rejection replaces *pre_filter_plugin, *pre_filter_status and
 * *pre_filter_message (owned by the caller) when its plugin comes earlier. Returns KC_SUCCESS
 * or KC_ERROR with *message (the caller frees it). */
kc_status remote_filter_merged(struct scheduler *s, struct kc_cycle *cycle, uint32_t start,
                               uint32_t *pre_filter_plugin, kc_status *pre_filter_status,
                               char **pre_filter_message, char **message);

/* No node fits: each host re-evaluates the nodes whose verdict is its own, and its reasons are
 * added to s->reasons. Returns KC_SUCCESS or KC_ERROR with *message. */
kc_status remote_merged_reasons(struct scheduler *s, struct kc_cycle *cycle, char **message);

/* The hosts with score plugins score the final list s->feasible[0..found): weighted scores
 * added to s->totals. Returns KC_SUCCESS or KC_ERROR with *message. */
kc_status remote_merged_scores(struct scheduler *s, struct kc_cycle *cycle, uint32_t found,
                               char **message);

/* A new pluginTimeout (a configuration reload): the deadline of each later request; <= 0: the
 * default. */
void remote_set_timeout(struct scheduler *s, int64_t timeout_ms);

/* For fuzz targets and tests: start every plugin host with fn instead of the host program.
 * fn gets the host's end of the channel (it owns the fd from then on) and returns 0 or a
 * negative code; closing the scheduler's end is the only way the scheduler stops such a host.
 * NULL restores the program. Process-wide; not thread-safe. */
typedef int (*remote_spawn_fn)(void *ctx, const char *name, int fd);
void remote_set_spawn_hook(remote_spawn_fn fn, void *ctx);

/* A later phase on every host that implements it. Same contract as scheduler_phase; Bind also
 * reports whether a remote Bind plugin asked for the binding (*bind_requested). */
kc_status remote_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                       const char *node, uint32_t *failed, uint32_t *timeout_ms, uint64_t *waiting,
                       bool *bind_requested);

/* Binding cycles of several pods in one request per host (PreBind, Bind, PostBind in each
 * host, stopping at a failure). results[i]: KC_SUCCESS (a host's Bind bound it; requested: it
 * asked the scheduler's binder), KC_SKIP (no host bound it) or KC_ERROR (failed names the
 * plugin). */
struct remote_binding {
    kc_status status;
    uint32_t failed;
    bool requested;
};
bool remote_binds(const struct framework *fw);
void remote_bind_batch(struct scheduler *s, struct kc_cycle **cycles, uint32_t count,
                       struct remote_binding *results);

/* The same batch sent without waiting (its binding hosts up, its cycles of one generation and
 * no group cycle's, a scheduler on the monotonic clock, none in the air already): true when sent, the cycles array
 * then owned until remote_bind_collect hands it back; false when the caller must bind with
 * remote_bind_batch. */
bool remote_bind_send(struct scheduler *s, struct kc_cycle **cycles, uint32_t count);

/* The batch in the air, answered (or failed), with its results as remote_bind_batch gives
 * them: 1 with *cycles and *results (both malloc'd, the caller's now) and *count; 0 when none
 * is in the air, or (wait false) its answer has not come yet; wait true waits for it (up to
 * the host deadline). */
int remote_bind_collect(struct scheduler *s, bool wait, struct kc_cycle ***cycles,
                        uint32_t *count, struct remote_binding **results);
bool remote_bind_in_flight(const struct scheduler *s);

/* Closing: the batch in the air forgotten, its cycles handed back (*cycles NULL, *count 0 when
 * none); its answer, if one comes, goes with the host. */
void remote_bind_drop(struct scheduler *s, struct kc_cycle ***cycles, uint32_t *count);

/* Send the journal to the hosts once it is large (called between cycles). */
void remote_sync_if_large(struct scheduler *s);

/* The median time of an empty request (sync, no deltas) to the first live host: the raw cost
 * of one round trip, for benchmarks. */
int remote_round_trip_us(struct scheduler *s, uint32_t samples, double *p50_us);

/* Preemption's what-if Filter (kc_filter_what_if) on the hosts of cycle's generation that
 * serve a Filter plugin before plugin `before` (a framework index; UINT32_MAX: every one), one
 * round trip per host for both passes: node without removed and with added counted (pass 0),
 * and, when passes is 2, without added (pass 1). The hosts reuse their evaluation of the pod.
 * out[p] (set by the caller to no refusal) keeps per pass the refusal of the hosted plugin
 * first in the configuration, with its reasons. Returns KC_SUCCESS, or KC_ERROR with *message
 * (the caller frees it) when a host whose plugins fail pods could not answer. */
struct what_if_verdict;
kc_status remote_what_if(struct scheduler *s, struct kc_cycle *cycle, const struct cache_node *node,
                         const struct pod *const *removed, uint32_t removed_count,
                         const struct pod *const *added, uint32_t added_count, uint32_t passes,
                         uint32_t before, struct what_if_verdict *out, char **message);

#endif
