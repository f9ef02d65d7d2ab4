/* Per-attempt state shared by a pod's scheduling and binding cycles. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cycle_internal.h"
#include "model.h"
#include "preempt.h"

_Thread_local struct reject_sink *cycle_filter_sink;

void reasons_add_count(struct reason_count *reasons, uint32_t *count, const char *text, uint32_t n)
{
    for (uint32_t i = 0; i < *count; i++) {
        if (strcmp(reasons[i].text, text) == 0) {
            reasons[i].count += n;
            return;
        }
    }
    /* bounded: the last slot gathers whatever does not fit */
    const char *other = "node(s) rejected for other reasons";
    if (*count >= CYCLE_MAX_REASONS - 1 && strcmp(text, other) != 0) {
        reasons_add_count(reasons, count, other, n);
        return;
    }
    if (*count >= CYCLE_MAX_REASONS)
        return;
    char *copy = strdup(text);
    if (copy == NULL)
        return;
    reasons[*count].text = copy;
    reasons[*count].count = n;
    (*count)++;
}

void reasons_add(struct reason_count *reasons, uint32_t *count, const char *text)
{
    reasons_add_count(reasons, count, text, 1);
}

void reasons_clear(struct reason_count *reasons, uint32_t *count)
{
    for (uint32_t i = 0; i < *count; i++)
        free(reasons[i].text);
    *count = 0;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *reasons_message(const struct reason_count *reasons, uint32_t count, uint32_t node_count)
{
    /* kube-scheduler's FitError: "<count> <reason>" strings sorted, joined by ", ". */
    char *parts[CYCLE_MAX_REASONS];
    size_t total = 64;
    for (uint32_t i = 0; i < count; i++) {
        if (asprintf(&parts[i], "%u %s", reasons[i].count, reasons[i].text) < 0) {
            for (uint32_t j = 0; j < i; j++)
                free(parts[j]);
            return NULL;
        }
        total += strlen(parts[i]) + 2;
    }
    qsort(parts, count, sizeof(parts[0]), compare_strings);
    char *message = malloc(total);
    if (message != NULL) {
        size_t used = (size_t)snprintf(message, total, "0/%u nodes are available: ", node_count);
        for (uint32_t i = 0; i < count; i++)
            used +=
                (size_t)snprintf(message + used, total - used, "%s%s", i > 0 ? ", " : "", parts[i]);
        snprintf(message + used, total - used, ".");
    }
    for (uint32_t i = 0; i < count; i++)
        free(parts[i]);
    return message;
}

char *text_format(const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    return text;
}

struct kc_waiting_pod *waiting_pod_find(const struct scheduler *s, const char *uid)
{
    for (uint32_t i = 0; i < s->waiting_count; i++)
        if (strcmp(s->waiting[i]->cycle->sp->pod->uid, uid) == 0)
            return s->waiting[i];
    return NULL;
}

struct kc_cycle *cycle_new(struct scheduler *s, struct sched_pod *sp)
{
    struct kc_cycle *cycle = calloc(1, sizeof(*cycle));
    if (cycle == NULL)
        return NULL;
    cycle->sched = s;
    cycle->sp = sp;
    cycle->fw = s->fw;
    cycle->fw->refs++;
    return cycle;
}

void cycle_free(struct kc_cycle *cycle)
{
    if (cycle == NULL)
        return;
    for (uint32_t i = 0; i < cycle->state_count; i++) {
        if (cycle->state[i].free_fn != NULL)
            cycle->state[i].free_fn(cycle->state[i].data);
        free(cycle->state[i].key);
    }
    free(cycle->state);
    /* after the free callbacks, which are the generation's code; scheduler_tick closes a
     * replaced generation once no cycle holds it */
    framework_unref(cycle->fw);
    kv_list_free(&cycle->annotations);
    free(cycle->node_name);
    free(cycle->message);
    free(cycle->post_filter_message);
    preempt_decision_free(cycle->preemption);
    free(cycle);
}

void cycle_fail(struct kc_cycle *cycle, const char *message)
{
    if (cycle->message == NULL) {
        cycle->message = strdup(message);
        return;
    }
    char *joined;
    if (asprintf(&joined, "%s; %s", cycle->message, message) >= 0) {
        free(cycle->message);
        cycle->message = joined;
    }
}

void cycle_reject(kc_cycle *cycle, const char *reason)
{
    if (reason == NULL || reason[0] == '\0')
        return;
    struct reject_sink *sink = cycle_filter_sink;
    if (sink != NULL) {
        reasons_add(sink->reasons, sink->count, reason);
        sink->calls++;
        return;
    }
    if (cycle != NULL)
        cycle_fail(cycle, reason);
}

int cycle_set(kc_cycle *cycle, const char *key, void *data, void (*free_fn)(void *))
{
    for (uint32_t i = 0; i < cycle->state_count; i++) {
        if (strcmp(cycle->state[i].key, key) == 0) {
            if (cycle->state[i].free_fn != NULL && cycle->state[i].data != data)
                cycle->state[i].free_fn(cycle->state[i].data);
            cycle->state[i].data = data;
            cycle->state[i].free_fn = free_fn;
            return 0;
        }
    }
    void *grown = array_grow(cycle->state, &cycle->state_capacity, cycle->state_count + 1,
                             sizeof(*cycle->state));
    if (grown == NULL)
        return -ENOMEM;
    cycle->state = grown;
    char *copy = strdup(key);
    if (copy == NULL)
        return -ENOMEM;
    cycle->state[cycle->state_count].key = copy;
    cycle->state[cycle->state_count].data = data;
    cycle->state[cycle->state_count].free_fn = free_fn;
    cycle->state_count++;
    return 0;
}

void *cycle_get(kc_cycle *cycle, const char *key)
{
    for (uint32_t i = 0; i < cycle->state_count; i++)
        if (strcmp(cycle->state[i].key, key) == 0)
            return cycle->state[i].data;
    return NULL;
}

int cycle_annotate(kc_cycle *cycle, const char *key, const char *value)
{
    return kv_list_set(&cycle->annotations, key, value);
}

int waiting_pod_allow(kc_waiting_pod *waiting, const char *plugin)
{
    /* the pending bits are positions in the generation the pod's cycle runs on */
    const struct plugin *p = plugin != NULL ? framework_plugin(waiting->cycle->fw, plugin) : NULL;
    if (p == NULL)
        return -ENOENT;
    waiting->pending &= ~(1ull << p->index);
    return 0;
}

int waiting_pod_reject(kc_waiting_pod *waiting, const char *plugin, const char *message)
{
    if (waiting->rejected)
        return 0;
    waiting->rejected = true;
    char *text;
    if (asprintf(&text, "rejected in Permit by plugin %s: %s", plugin != NULL ? plugin : "?",
                 message != NULL ? message : "no reason given") >= 0)
        waiting->reject_message = text;
    return 0;
}
