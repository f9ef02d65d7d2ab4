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

_Thread_local struct reject_sink *cycle_filter_sink CRASH_TLS;

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

void cycle_drop_writes(struct kc_cycle *cycle)
{
    for (uint32_t i = 0; i < cycle->write_count; i++) {
        free(cycle->writes[i].kind);
        free(cycle->writes[i].namespace);
        free(cycle->writes[i].name);
        free(cycle->writes[i].patch);
    }
    free(cycle->writes);
    cycle->writes = NULL;
    cycle->write_count = 0;
}

int cycle_write_object(kc_cycle *cycle, const char *kind, const char *namespace_name,
                       const char *name, const char *merge_patch_json)
{
    if (cycle == NULL || kind == NULL || kind[0] == '\0' || name == NULL || name[0] == '\0' ||
        merge_patch_json == NULL)
        return -EINVAL;
    if (cycle->write_result < 0) /* a harness's failing write (kc_harness_fail_writes) */
        return cycle->write_result;
    struct object_write *grown =
        realloc(cycle->writes, (cycle->write_count + 1) * sizeof(*cycle->writes));
    if (grown == NULL)
        return -ENOMEM;
    cycle->writes = grown;
    struct object_write *w = &grown[cycle->write_count];
    w->kind = strdup(kind);
    w->namespace = namespace_name != NULL && namespace_name[0] != '\0' ? strdup(namespace_name)
                                                                       : NULL;
    w->name = strdup(name);
    w->patch = strdup(merge_patch_json);
    if (w->kind == NULL || w->name == NULL || w->patch == NULL ||
        (namespace_name != NULL && namespace_name[0] != '\0' && w->namespace == NULL)) {
        free(w->kind);
        free(w->namespace);
        free(w->name);
        free(w->patch);
        return -ENOMEM;
    }
    cycle->write_count++;
    return 0;
}

int cycle_flush_writes(struct kc_cycle *cycle)
{
    struct scheduler *s = cycle->sched;
    if (cycle->write_count == 0 || s->sink.write_object == NULL)
        return 0;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < cycle->write_count; i++)
        rc = s->sink.write_object(s->sink.ctx, cycle->sp->pod, &cycle->writes[i]);
    cycle_drop_writes(cycle);
    return rc;
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
    cycle_restrict_clear(cycle);
    kv_list_free(&cycle->annotations);
    cycle_drop_writes(cycle);
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

int cycle_delete(kc_cycle *cycle, const char *key)
{
    for (uint32_t i = 0; i < cycle->state_count; i++) {
        if (strcmp(cycle->state[i].key, key) == 0) {
            char *gone_key = cycle->state[i].key;
            void *gone_data = cycle->state[i].data;
            void (*gone_free)(void *) = cycle->state[i].free_fn;
            cycle->state[i] = cycle->state[--cycle->state_count];
            free(gone_key);
            if (gone_free != NULL)
                gone_free(gone_data);
            return 0;
        }
    }
    return -ENOENT;
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

/* ---- PreFilter's node restriction (kube's PreFilterResult) ---- */

static int compare_index(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void cycle_restrict_clear(struct kc_cycle *cycle)
{
    free(cycle->restricted_nodes);
    free(cycle->narrowed);
    cycle->restricted_nodes = cycle->narrowed = NULL;
    cycle->restricted_count = 0;
    cycle->restricted = false;
    cycle->restrict_label[0] = '\0';
    for (uint32_t i = 0; i < cycle->restricted_missing_count; i++)
        free(cycle->restricted_missing[i]);
    free(cycle->restricted_missing);
    cycle->restricted_missing = NULL;
    cycle->restricted_missing_count = 0;
}

/* Keep, of the names no node has, those this restriction names too (all of them on the first
 * restriction). 0 or -ENOMEM. */
static int restrict_missing(struct kc_cycle *cycle, const struct cache *cache,
                            const char *const *names, uint32_t count)
{
    char **kept = malloc(((size_t)count + 1) * sizeof(*kept));
    if (kept == NULL)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (names[i] == NULL || cache_node(cache, names[i]) != NULL)
            continue;
        bool common = !cycle->restricted;
        for (uint32_t j = 0; j < cycle->restricted_missing_count && !common; j++)
            common = strcmp(cycle->restricted_missing[j], names[i]) == 0;
        if (common && (kept[n] = strdup(names[i])) != NULL)
            n++;
    }
    for (uint32_t i = 0; i < cycle->restricted_missing_count; i++)
        free(cycle->restricted_missing[i]);
    free(cycle->restricted_missing);
    cycle->restricted_missing = kept;
    cycle->restricted_missing_count = n;
    return 0;
}

bool cycle_restriction_empty(const struct kc_cycle *cycle)
{
    return cycle->restricted && cycle->restricted_count == 0 &&
           cycle->restricted_missing_count == 0;
}

/* kube lists the plugins sorted, separated by spaces: "[NodeAffinity VolumeBinding]". */
static void label_add(char *label, size_t size, const char *name)
{
    char copy[sizeof(((struct kc_cycle *)0)->restrict_label)];
    snprintf(copy, sizeof(copy), "%s", label);
    const char *parts[16];
    uint32_t n = 0;
    for (char *save = NULL, *p = strtok_r(copy, " ", &save); p != NULL && n < 15;
         p = strtok_r(NULL, " ", &save)) {
        if (strcmp(p, name) == 0)
            return;
        parts[n++] = p;
    }
    parts[n++] = name;
    qsort(parts, n, sizeof(parts[0]), compare_strings);
    size_t used = 0;
    label[0] = '\0';
    for (uint32_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(label + used, size - used, "%s%s", i > 0 ? " " : "", parts[i]);
}

int cycle_restrict_nodes(kc_cycle *cycle, const char *label, const char *const *names,
                         uint32_t count)
{
    if (!cycle->in_pre_filter || cycle_filter_sink != NULL)
        return -EINVAL; /* later phases run on the nodes the restriction already chose */
    const struct cache *cache = &cycle->sched->cache;
    uint32_t *nodes = malloc(((size_t)count + 1) * sizeof(*nodes));
    if (nodes == NULL)
        return -ENOMEM;
    uint32_t found = 0;
    for (uint32_t i = 0; i < count; i++) {
        const struct cache_node *cn = names[i] != NULL ? cache_node(cache, names[i]) : NULL;
        if (cn != NULL)
            nodes[found++] = cn->index;
    }
    if (restrict_missing(cycle, cache, names, count) < 0) {
        free(nodes);
        return -ENOMEM;
    }
    qsort(nodes, found, sizeof(*nodes), compare_index);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < found; i++) {
        bool duplicate = kept > 0 && nodes[kept - 1] == nodes[i];
        bool allowed = !cycle->restricted ||
                       bsearch(&nodes[i], cycle->restricted_nodes, cycle->restricted_count,
                               sizeof(*nodes), compare_index) != NULL;
        if (!duplicate && allowed)
            nodes[kept++] = nodes[i];
    }
    free(cycle->restricted_nodes);
    cycle->restricted_nodes = nodes;
    cycle->restricted_count = kept;
    cycle->restricted = true;
    label_add(cycle->restrict_label, sizeof(cycle->restrict_label),
              label != NULL && label[0] != '\0' ? label : "?");
    return 0;
}
