/* libkcycle-plugintest (pkg-config kcycle-plugintest): unit-test a plugin without the
 * scheduler. Load the plugin's .so into a harness with a small cluster (a simulation file),
 * call its phases for a pod, and check statuses, reasons, scores, logs and cycle state. The
 * same test runs in both isolation modes: in this process, or in a kcycle-plugin-host child
 * exactly as the scheduler runs isolation: process plugins. Guide: docs/plugin-testing.md. */
#ifndef KCYCLE_PLUGINTEST_H
#define KCYCLE_PLUGINTEST_H

#include <stddef.h>
#include <stdint.h>

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kc_harness_mode {
    KC_HARNESS_IN_PROCESS = 0, /* the plugin runs in the test's process (isolation: inprocess) */
    KC_HARNESS_PROCESS = 1     /* in a kcycle-plugin-host child (isolation: process) */
} kc_harness_mode;

/* The phases after Filter and Score, for kc_harness_call, on the pod's cycle from kc_harness_evaluate. */
typedef enum kc_harness_phase {
    KC_HARNESS_RESERVE = 1,
    KC_HARNESS_UNRESERVE = 2,
    KC_HARNESS_PERMIT = 3,
    KC_HARNESS_PRE_BIND = 4,
    KC_HARNESS_BIND = 5,
    KC_HARNESS_POST_BIND = 6
} kc_harness_phase;

typedef struct kc_harness_options {
    uint32_t struct_size; /* sizeof(kc_harness_options) */
    kc_harness_mode mode;
    const char *plugin;    /* the plugin's .so */
    const char *args_json; /* its args; NULL: "{}" */
    /* The cluster, as a simulation file (docs/simulation.md): its nodes, its pods with a
     * nodeName (placed on their nodes) and its custom objects. Its other pods and its workload
     * are the pods a test evaluates, by "namespace/name" (or "name" in "default"). One of: */
    const char *cluster_file;
    const char *cluster_yaml; /* the same, as text */
    /* KC_HARNESS_PROCESS: the kcycle-plugin-host program; NULL: $KCYCLE_PLUGIN_HOST, else the
     * one installed with this library, else the PATH's */
    const char *host_binary;
    /* More plugins loaded beside the one under test, in the same host or process and after
     * it, as the scheduler would run them together: e.g. the Filter plugins a PostFilter's
     * kc_filter_what_if needs (noderesources for a preemption). A NULL-terminated list of .so
     * paths, or NULL; more_args_json[i] their args (NULL or a NULL entry: "{}"). Scores are
     * still those of the plugin under test; reasons and log lines are those of all. As in the
     * scheduler, kc_harness_less asks the one plugin loaded that implements QueueSort (two
     * refuse the open), kc_harness_group_of the first plugin, in load order, that places the
     * pod in a group, and kc_harness_pre_enqueue each plugin with PreEnqueue in load order. */
    const char *const *more_plugins;
    const char *const *more_args_json;
    /* ---- Added in 1.2 (each read only when struct_size covers it) ----
     * Nonzero: the cluster's pods without a node reach the plugins as pending pods, as the
     * scheduler's cache delivers the pods it will schedule (KC_EVENT_POD_ADD without a node,
     * KC_EVENT_POD_UPDATE when kc_harness_update changes one, KC_EVENT_POD_DELETE when
     * kc_harness_delete_pod removes one). 0: only pods with a node are cluster events. */
    int pending_pods_as_events;
    /* The plugins (by their own names) whose QueueSort is left out, as `queueSort: false` in
     * the scheduler's configuration: e.g. coscheduling declaring groups beside a plugin that
     * sorts the queue. A NULL-terminated list, or NULL. */
    const char *const *queue_sort_off;
    /* Added in 1.2: run Filter on this many threads at once in every evaluation, as the
     * scheduler's parallelism does over a large cluster, so that a test sees the plugin's
     * Filter called concurrently for one cycle (0 or 1: one thread). Read only when
     * struct_size covers it. */
    uint32_t filter_threads;
} kc_harness_options;

typedef struct kc_harness kc_harness;

/* Load the plugin (its init runs) with the cluster. 0 with *out set, or a negative errno with
 * *out NULL and error saying why (a bad file, a plugin that failed to load or init). */
KC_API int kc_harness_open(const kc_harness_options *options, kc_harness **out, char *error,
                           size_t error_size);
/* Unload the plugin (fini) and stop its host. NULL is a no-op. */
KC_API void kc_harness_close(kc_harness *harness);

/* Change the cluster as the scheduler's cache would, and tell the plugin (on_event): the
 * nodes of cluster_yaml (a simulation file's text) are added or replace those of the same
 * name, its pods with a nodeName are added or replaced on their nodes, its objects are put;
 * its other pods become pods a test may evaluate. 0, or a negative errno with
 * kc_harness_error() saying why. */
KC_API int kc_harness_update(kc_harness *harness, const char *cluster_yaml);
/* Remove a node, or a pod by "namespace/name", from the cluster. 0, -ENOENT (-2) when the
 * harness does not know it, or another negative errno. */
KC_API int kc_harness_delete_node(kc_harness *harness, const char *node);
KC_API int kc_harness_delete_pod(kc_harness *harness, const char *pod);

/* PreFilter and Filter for pod on node alone. KC_SUCCESS when the node passes; else the
 * status, with kc_harness_message() the reason (PreFilter's message, or Filter's reasons). */
KC_API kc_status kc_harness_filter(kc_harness *harness, const char *pod, const char *node);
/* A whole evaluation of pod: PreFilter, Filter on every node, then PreScore, Score and
 * NormalizeScore on the feasible nodes. KC_SUCCESS when a node is feasible; when none is,
 * KC_UNSCHEDULABLE, or KC_UNRESOLVABLE when Filter found every node unresolvable (reasons:
 * kc_harness_reason_count); or PreFilter's status. The pod's cycle
 * stays open for kc_harness_call. */
KC_API kc_status kc_harness_evaluate(kc_harness *harness, const char *pod);
/* After kc_harness_evaluate: 1 when node passed Filter, else 0. */
KC_API int kc_harness_feasible(kc_harness *harness, const char *node);
/* After kc_harness_evaluate: the plugin's normalized score of node, or -1 when the node was not
 * scored (infeasible, the plugin does not score, or, as in the scheduler, only one node was
 * feasible). */
KC_API int64_t kc_harness_score(kc_harness *harness, const char *node);
/* After kc_harness_evaluate: how many nodes Filter rejected with reason. */
KC_API uint32_t kc_harness_reason_count(kc_harness *harness, const char *reason);

/* Call a later phase on the pod's cycle (the node the test chose; NULL for Unreserve).
 * Permit's KC_WAIT is returned as is. */
KC_API kc_status kc_harness_call(kc_harness *harness, const char *pod, kc_harness_phase phase,
                                 const char *node);
/* The message of the last call ("" when none). Lives until the next call. */
KC_API const char *kc_harness_message(kc_harness *harness);
/* 1 when, in the last kc_harness_call, the plugin asked the runtime to bind the pod
 * (kc_bind from Bind), else 0. */
KC_API int kc_harness_bind_requested(kc_harness *harness);
/* The object writes (kc_cycle_write_object) the last kc_harness_call (PreBind) asked for, in
 * order, each as "Kind namespace/name PATCH" (namespace empty for cluster-scoped kinds), or
 * NULL out of range; the runtime would make them before the pod's Binding. */
KC_API uint32_t kc_harness_write_count(kc_harness *harness);
KC_API const char *kc_harness_write_at(kc_harness *harness, uint32_t index);
/* A binding annotation the plugin set in the last phase call, or NULL. */
KC_API const char *kc_harness_annotation(kc_harness *harness, const char *key);
/* 1 when the pod's open cycle holds key (kc_cycle_set and not deleted), 0 when not, -1 when
 * the pod has no open cycle (never evaluated, or ended by PostBind or Unreserve). */
KC_API int kc_harness_cycle_has(kc_harness *harness, const char *pod, const char *key);

/* The plugin's log lines since open (or the last kc_harness_clear_logs), oldest first, as
 * "LEVEL plugin: message" with LEVEL one of ERROR WARN INFO DEBUG. In KC_HARNESS_IN_PROCESS
 * the lines of a process go to its latest open harness only: open one at a time. */
KC_API uint32_t kc_harness_log_count(kc_harness *harness);
KC_API const char *kc_harness_log_at(kc_harness *harness, uint32_t index);
/* 1 when a line contains text. */
KC_API int kc_harness_logged(kc_harness *harness, const char *text);
KC_API void kc_harness_clear_logs(kc_harness *harness);

/* ---- PostFilter, the queue's phases and object statuses ----
 * The scheduler runs these in process only (a plugin host is refused a plugin with QueueSort,
 * PreEnqueue or group_of, or PostFilter without Filter); the harness's own host serves them so
 * that such a plugin is tested in both modes alike. */

/* PostFilter for pod after kc_harness_evaluate found no node (its cycle and Filter's verdicts
 * per node: kc_cycle_node_status; kc_filter_what_if runs the Filter plugins loaded here). The
 * plugins' status, with kc_harness_message() the rejection ("preemption: ..."). */
KC_API kc_status kc_harness_post_filter(kc_harness *harness, const char *pod);
/* After kc_harness_post_filter: the node a plugin chose with kc_preempt, or NULL when none was
 * chosen (or it cleared the nomination). Lives until the next phase call. */
KC_API const char *kc_harness_nominated_node(kc_harness *harness);
/* The victims of that preemption (kc_preempt's, then kc_preempt_more's) as "namespace/name",
 * in the plugin's order, or NULL out of range. Nothing is evicted. */
KC_API uint32_t kc_harness_victim_count(kc_harness *harness);
KC_API const char *kc_harness_victim_at(kc_harness *harness, uint32_t index);

/* QueueSort: 1 when pod_a goes before pod_b in the active queue, 0 when not, -1 when the call
 * could not be made (no QueueSort plugin, an unknown pod: kc_harness_error()). */
KC_API int kc_harness_less(kc_harness *harness, const char *pod_a, const char *pod_b);
/* PreEnqueue of the plugins in order: KC_SUCCESS when the pod may enter the queue, else the
 * first refusal, with kc_harness_message() naming the plugin that held it ("held by PreEnqueue
 * plugin NAME", the pod's pending reason in the scheduler) and kc_harness_error() "". KC_ERROR
 * with kc_harness_error() not "" (and kc_harness_message() "") is a call that could not be
 * made (an unknown pod, a host that died), not a plugin's answer. */
KC_API kc_status kc_harness_pre_enqueue(kc_harness *harness, const char *pod);
/* group_of: KC_SUCCESS when a plugin placed the pod in a pod group (kc_harness_group_name,
 * kc_harness_group_min_member), KC_SKIP when none did, KC_ERROR when the call failed. */
KC_API kc_status kc_harness_group_of(kc_harness *harness, const char *pod);
/* The last kc_harness_group_of's group as "namespace/name" (NULL: none) and its quorum. */
KC_API const char *kc_harness_group_name(kc_harness *harness);
KC_API uint32_t kc_harness_group_min_member(kc_harness *harness);

/* The latest status a plugin reported for a custom object with kc_object_status, as JSON, or
 * NULL when none was; object is "namespace/name", or "name" for a cluster-scoped kind. Lives
 * until the object's next status or kc_harness_close. */
KC_API const char *kc_harness_object_status(kc_harness *harness, const char *kind,
                                            const char *object);

/* Why the last call failed without a plugin status (an unknown pod or node, a host that
 * died); "" when it did not. */
KC_API const char *kc_harness_error(kc_harness *harness);

/* ---- Added in 1.2 (docs/plugin-testing.md): what a plugin's tests used to need the fake host
 * or the scheduler for. Each works the same in both isolation modes, through the plugin
 * host. ---- */

/* What the scheduler's queue, binder and waiting list do around a plugin. */

/* The queue timestamp of pod (kc_pod_enqueue_ms: when the scheduler's queue took it), which the
 * queue calls (kc_harness_less, kc_harness_pre_enqueue, kc_harness_group_of) pass from now on;
 * 0 until set. 0, or -ENOENT when the harness does not know the pod. */
KC_API int kc_harness_set_enqueue_ms(kc_harness *harness, const char *pod, int64_t enqueue_ms);
/* The last kc_harness_group_of's whole kc_group_info (flags, timeouts, creation): the members
 * out->struct_size covers are written (strings live until the next group_of). 1 when a plugin
 * placed the pod in a group, 0 when none did (out zeroed but its struct_size). */
KC_API int kc_harness_group_info(kc_harness *harness, kc_group_info *out);
/* kc_harness_evaluate for pod as member index of a group cycle of count members, needed of
 * which must be placed: kc_cycle_group answers that position and the group the plugins' group_of
 * declare. The later kc_harness_call phases run on that cycle. KC_ERROR with kc_harness_error()
 * when no plugin places the pod in a group or the position is impossible. */
KC_API kc_status kc_harness_evaluate_in_group(kc_harness *harness, const char *pod, uint32_t index,
                                              uint32_t count, uint32_t needed);
/* Hold pod in Permit on node, waiting for the plugin under test, as the scheduler does when it
 * answered KC_WAIT: kc_waiting_pod_count/at/get find it. The pod must have an open cycle or be
 * assumed: -ENOENT (-2) otherwise, with kc_harness_error() saying so. 0, or a negative errno
 * with kc_harness_error(). */
KC_API int kc_harness_wait(kc_harness *harness, const char *pod, const char *node);
/* What plugins did to waiting pod since the open: how many times one allowed it
 * (kc_waiting_pod_allow), how many times one rejected it (kc_waiting_pod_reject; once per
 * kc_harness_wait, as the runtime takes the first rejection), and the last rejection's message
 * as the runtime words it ("rejected in Permit by plugin NAME: message"), or NULL. */
KC_API uint32_t kc_harness_waiting_allowed(kc_harness *harness, const char *pod);
KC_API uint32_t kc_harness_waiting_rejected(kc_harness *harness, const char *pod);
KC_API const char *kc_harness_waiting_message(kc_harness *harness, const char *pod);
/* What the runtime's binder answers kc_bind in the following phase calls: 0 (the default) binds,
 * a negative errno fails the bind (kc_bind returns it; kc_harness_bind_requested stays 0). */
KC_API void kc_harness_set_bind_result(kc_harness *harness, int result);
/* After kc_harness_post_filter: how many kc_filter_what_if calls the plugins made, and 1 when a
 * plugin called kc_preempt (a node chosen, or the nomination cleared: kc_harness_nominated_node
 * NULL), 0 when none did. */
KC_API uint32_t kc_harness_what_if_count(kc_harness *harness);
KC_API int kc_harness_preempt_called(kc_harness *harness);
/* How many statuses plugins reported for the object with kc_object_status since the open. */
KC_API uint32_t kc_harness_object_status_count(kc_harness *harness, const char *kind,
                                               const char *object);
/* After a kc_harness_call of Permit that answered KC_WAIT: the shortest wait a plugin asked for
 * (its *timeout_ms), in ms; 0 after any other call. */
KC_API uint32_t kc_harness_permit_timeout_ms(kc_harness *harness);

/* The scheduler clock, what a pod's cycle holds, and PreFilter's and PreScore's skips. */

/* Added in 1.2. From now on the scheduler clock the plugin reads (kc_now_ms, kc_cycle_now_ms)
 * says now_ms, until the next call; before the first call it is the monotonic clock. The
 * events of later updates happen at that time. 0, or a negative errno with kc_harness_error(). */
KC_API int kc_harness_set_clock(kc_harness *harness, int64_t now_ms);
/* Added in 1.2. The data the pod's open cycle holds under key, read as a NUL-terminated
 * string (a contract between plugins, such as numaalign's "kcycle.io/numa-zones" that gpushare
 * reads), or NULL when the cycle does not hold key (or the pod has no open cycle). Only for
 * keys whose data is a string: at most 4096 bytes are read, and data without a NUL within them
 * answers NULL. Lives until the next call on the harness. */
KC_API const char *kc_harness_cycle_string(kc_harness *harness, const char *pod,
                                           const char *key);
/* Added in 1.2. After kc_harness_filter or kc_harness_evaluate: 1 when the plugin under
 * test's PreFilter answered KC_SKIP for the pod (its Filter was not called), else 0. */
KC_API int kc_harness_pre_filter_skipped(kc_harness *harness);
/* Added in 1.2. After kc_harness_evaluate: 1 when the plugin under test's PreScore answered
 * KC_SKIP (its Score was not called), else 0. */
KC_API int kc_harness_pre_score_skipped(kc_harness *harness);
/* Added in 1.2. kc_harness_update, with the pods of cluster_yaml that have a nodeName sent
 * before its nodes: the plugin hears of bound pods before their node (a node it does not know
 * yet), as after a restart when the pods' list arrives before the nodes'. */
KC_API int kc_harness_update_pods_first(kc_harness *harness, const char *cluster_yaml);

/* Nominated and assumed pods, object deletes, what-if views, the plugin's requeue events and
 * failing writes. */

/* Count pod (a pending pod of the cluster, "namespace/name") as nominated on node in the
 * evaluations that follow (kc_harness_filter, kc_harness_evaluate), as the scheduler counts a
 * pod an earlier preemption nominated there: only for a pod evaluated that is not it and
 * whose priority is at most the nominated pod's, and Filter runs on that node with it counted
 * and, when that passes, without it. A pod has one nomination (found by its uid, also after an
 * update redefined it): node NULL takes it back. The plugin hears of
 * no event. 0; -ENOENT (-2) for a pod or node the harness does not know. Added in 1.2. */
KC_API int kc_harness_nominate(kc_harness *harness, const char *pod, const char *node);
/* Assume pod (a pending pod of the cluster) on node as the scheduler's cache does after
 * Reserve (the plugin gets KC_EVENT_POD_ASSUME and the pod counts on the node), or forget an
 * assumed pod (KC_EVENT_POD_FORGET: it counts no more). 0; -ENOENT (-2) for a pod or node the
 * harness does not know; -EEXIST (-17) for a pod placed by the cluster or assumed and not
 * forgotten (kc_harness_delete_pod, and an update that binds the pod, end the assumption);
 * -EIO (-5) when the host failed: see kc_harness_error(). Added in 1.2. */
KC_API int kc_harness_assume(kc_harness *harness, const char *pod, const char *node);
KC_API int kc_harness_forget(kc_harness *harness, const char *pod);
/* Delete a custom object of the cluster (KC_EVENT_OBJECT_DELETE with the object's latest
 * content): object is "namespace/name", or "name" for a cluster-scoped kind. 0; -ENOENT (-2)
 * when no cluster file or update held it; -EIO (-5) when the host failed. Added in 1.2. */
KC_API int kc_harness_delete_object(kc_harness *harness, const char *kind, const char *object);
/* Preemption's what-if Filter (kc_filter_what_if) for pod on a view of node: the pods of
 * removed (placed pods, "namespace/name", NULL-terminated, or NULL) taken off it and the
 * pending pods of added (likewise) counted on it. It reuses the PreFilter state of the pod's
 * last evaluation (or runs PreFilter when there was none). The Filter plugins' status, with
 * kc_harness_message() the refusing plugin's reasons joined with "; "; KC_ERROR with
 * kc_harness_error() set when the call could not be made. Added in 1.2. */
KC_API kc_status kc_harness_what_if(kc_harness *harness, const char *pod, const char *node,
                                    const char *const *removed, const char *const *added);
/* The plugin under test's requeue_events (KC_EVENT_MASK bits), as its host reported them at
 * open. Added in 1.2. */
KC_API uint32_t kc_harness_requeue_events(kc_harness *harness);
/* Make kc_cycle_write_object answer error (a negative errno, e.g. -EIO) in the phase calls
 * that follow, instead of recording the write, as a write the runtime cannot take would; 0
 * records writes again. 0, or -EINVAL (-22) for a positive error. Added in 1.2. */
KC_API int kc_harness_fail_writes(kc_harness *harness, int error);


#ifdef __cplusplus
}
#endif

#endif
