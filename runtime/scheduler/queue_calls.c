/* QueueSort, PreEnqueue and group_of called on demand, with the host API's scheduler set as
 * for any plugin call: the plugin test harness's host serves them (docs/plugin-testing.md). */
#include "queue_calls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crash.h"
#include "group.h"

int queue_call_less(struct scheduler *s, const struct pod *a, const struct pod *b,
                    const char **plugin)
{
    const struct plugin *p = s->fw->queue_sort;
    *plugin = NULL;
    if (p == NULL)
        return -ENOENT;
    scheduler_enter(s);
    crash_enter(p->name, "QueueSort");
    int less = p->ops.queue_less(p->self, (const kc_pod *)a, (const kc_pod *)b) != 0;
    crash_leave();
    *plugin = p->name;
    return less;
}

kc_status queue_call_pre_enqueue(struct scheduler *s, const struct pod *pod, char *why,
                                 size_t size, const char **plugin)
{
    *plugin = NULL;
    scheduler_enter(s);
    for (uint32_t i = 0; i < s->fw->phase_count[PHASE_PRE_ENQUEUE]; i++) {
        struct plugin *p = s->fw->phase[PHASE_PRE_ENQUEUE][i];
        crash_enter(p->name, "PreEnqueue");
        kc_status st = p->ops.pre_enqueue(p->self, (const kc_pod *)pod);
        crash_leave();
        if (st != KC_SUCCESS) {
            snprintf(why, size, "held by PreEnqueue plugin %s", p->name);
            *plugin = p->name;
            return st;
        }
    }
    return KC_SUCCESS;
}

bool queue_call_group_of(struct scheduler *s, const struct pod *pod, kc_group_info *info,
                         const char **plugin)
{
    *plugin = NULL;
    scheduler_enter(s);
    return group_declared_by(s, pod, info, plugin);
}
