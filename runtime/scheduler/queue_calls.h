/* The phases the scheduler runs on queue operations (QueueSort, PreEnqueue, group_of), called
 * one at a time on demand: the plugin test harness asks them of a plugin host's replica
 * (docs/plugin-testing.md). The scheduler's own queue calls them in queue.c, scheduler.c and
 * group.c. */
#ifndef KC_SCHED_QUEUE_CALLS_H
#define KC_SCHED_QUEUE_CALLS_H

#include "scheduler.h"

/* QueueSort's less(a, b): 1 or 0, or -ENOENT when no plugin sorts the queue. *plugin: the
 * plugin that answered. */
int queue_call_less(struct scheduler *s, const struct pod *a, const struct pod *b,
                    const char **plugin);
/* PreEnqueue of every plugin in order: KC_SUCCESS (*plugin NULL), or the first refusal with
 * *plugin the plugin that held the pod and why (size bytes) the pod's pending reason. The one
 * loop scheduler_enqueue and the harness's host both run. */
kc_status queue_call_pre_enqueue(struct scheduler *s, const struct pod *pod, char *why,
                                 size_t size, const char **plugin);
/* group_of: true when a plugin placed the pod in a group (*info and *plugin as
 * group_declared_by), else false. */
bool queue_call_group_of(struct scheduler *s, const struct pod *pod, kc_group_info *info,
                         const char **plugin);

#endif
