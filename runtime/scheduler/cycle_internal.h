/* Cycle state, rejection reasons and waiting pods: the host API functions behind cycle.h. */
#ifndef KC_SCHED_CYCLE_INTERNAL_H
#define KC_SCHED_CYCLE_INTERNAL_H

#include <kcycle/kcycle.h>

#include "crash.h"
#include "scheduler.h"

/* Where kc_cycle_reject() writes while Filter runs for one node: the reason histogram of the
 * attempt. Outside Filter it is NULL and rejections become the cycle's message. */
struct reject_sink {
    struct reason_count *reasons;
    uint32_t *count;
    uint32_t calls; /* rejections recorded for the current node */
};
extern _Thread_local struct reject_sink *cycle_filter_sink CRASH_TLS; /* crash.h */

/* Add one node's reason to a histogram (copies text the first time it is seen). */
void reasons_add(struct reason_count *reasons, uint32_t *count, const char *text);
void reasons_add_count(struct reason_count *reasons, uint32_t *count, const char *text, uint32_t n);
void reasons_clear(struct reason_count *reasons, uint32_t *count);
/* "0/N nodes are available: 2 Insufficient cpu, 3 Too many pods." malloc'd. */
char *reasons_message(const struct reason_count *reasons, uint32_t count, uint32_t node_count);

/* A malloc'd formatted string, or NULL. */
char *text_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The waiting pod of uid, or NULL. */
struct kc_waiting_pod *waiting_pod_find(const struct scheduler *s, const char *uid);

struct kc_cycle *cycle_new(struct scheduler *s, struct sched_pod *sp);
void cycle_free(struct kc_cycle *cycle);
/* Record a cycle-level failure message (the first one wins; later ones are appended). */
void cycle_fail(struct kc_cycle *cycle, const char *message);

void cycle_reject(kc_cycle *cycle, const char *reason);
int cycle_set(kc_cycle *cycle, const char *key, void *data, void (*free_fn)(void *));
void *cycle_get(kc_cycle *cycle, const char *key);
/* Remove key, calling its free function after the entry is gone (so a free function that
 * reads the cycle does not see it): 0, or -ENOENT. */
int cycle_delete(kc_cycle *cycle, const char *key);
int cycle_annotate(kc_cycle *cycle, const char *key, const char *value);
/* kc_cycle_restrict_nodes: intersect the cycle's allowed nodes with names. */
int cycle_restrict_nodes(kc_cycle *cycle, const char *label, const char *const *names,
                         uint32_t count);
/* Whether the restrictions so far leave no node name at all (kube's empty PreFilterResult;
 * names of nodes that do not exist still count). */
bool cycle_restriction_empty(const struct kc_cycle *cycle);
/* Forget the restriction (a new evaluation of the cycle's pod starts without one). */
void cycle_restrict_clear(struct kc_cycle *cycle);
/* Keep an object update for the binder (copies everything). 0, -EINVAL or -ENOMEM. */
int cycle_write_object(kc_cycle *cycle, const char *kind, const char *namespace_name,
                       const char *name, const char *merge_patch_json);
/* Forget the cycle's object updates (a plugin host, once they are in its reply). */
void cycle_drop_writes(struct kc_cycle *cycle);
/* Hand the cycle's object updates to the sink, in the order asked, before its bind: 0, or the
 * first failure (the binding fails). Without a sink writer they stay on the cycle. */
int cycle_flush_writes(struct kc_cycle *cycle);
int waiting_pod_allow(kc_waiting_pod *waiting, const char *plugin);
int waiting_pod_reject(kc_waiting_pod *waiting, const char *plugin, const char *message);

#endif
