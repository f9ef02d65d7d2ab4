/* The host API table given to plugins: SDK handles mapped onto the runtime's objects.
 * kc_pod is struct pod, kc_node is struct cache_node, kc_cycle and kc_waiting_pod are the
 * scheduler's structs of the same name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "crash.h"
#include "cycle_internal.h"
#include "hostapi.h"
#include "log.h"
#include "model.h"
#include "plugin_args.h"
#include "preempt.h"
#include "resource_table.h"
#include "sched_metrics.h"
#include "scheduler.h"

#define POD(p) ((const struct pod *)(p))
#define NODE(n) ((const struct cache_node *)(n))

/* Where plugin log lines also go (hostapi_capture_logs); NULL: only the process log. */
static hostapi_log_fn log_capture;
static void *log_capture_ctx;

void hostapi_capture_logs(hostapi_log_fn fn, void *ctx)
{
    log_capture = fn;
    log_capture_ctx = ctx;
}

void hostapi_capture_logs_stop(void *ctx)
{
    if (log_capture_ctx == ctx) {
        log_capture = NULL;
        log_capture_ctx = NULL;
    }
}

static void host_log(kc_log_level level, const char *plugin, const char *message)
{
    if (level > KC_LOG_DEBUG)
        level = KC_LOG_DEBUG;
    if (plugin == NULL && crash_calls.depth > 0 && crash_calls.depth <= CRASH_DEPTH)
        plugin = crash_calls.plugin[crash_calls.depth - 1];
    if (message == NULL)
        message = "";
    log_msg(level, "plugin %s: %s", plugin != NULL ? plugin : "?", message);
    if (log_capture != NULL)
        log_capture(log_capture_ctx, level, plugin != NULL ? plugin : "?", message);
}

/* The plugin is the innermost one the runtime is calling on this thread: every plugin call
 * goes through crash_enter, which records it for the crash handler. */
static void host_logv(kc_log_level level, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof(line), fmt != NULL ? fmt : "", ap);
    host_log(level, NULL, line);
}

static const char *pod_namespace(const kc_pod *p)
{
    return POD(p)->namespace;
}
static const char *pod_name(const kc_pod *p)
{
    return POD(p)->name;
}
static const char *pod_uid(const kc_pod *p)
{
    return POD(p)->uid;
}
static const char *pod_node_name(const kc_pod *p)
{
    return POD(p)->node_name;
}
static const char *pod_scheduler_name(const kc_pod *p)
{
    return POD(p)->scheduler_name;
}
static int32_t pod_priority(const kc_pod *p)
{
    return POD(p)->priority;
}
static int64_t pod_creation_ms(const kc_pod *p)
{
    return POD(p)->creation_ms;
}
static int64_t pod_enqueue_ms(const kc_pod *p)
{
    return POD(p)->enqueue_ms;
}
static const char *pod_group(const kc_pod *p)
{
    return POD(p)->pod_group;
}

static const char *pod_label(const kc_pod *p, const char *key)
{
    return kv_list_get(&POD(p)->labels, key);
}

static const char *pod_annotation(const kc_pod *p, const char *key)
{
    return kv_list_get(&POD(p)->annotations, key);
}

static int64_t pod_request(const kc_pod *p, kc_resource id)
{
    return res_list_get(&POD(p)->request, id);
}

static uint32_t pod_request_count(const kc_pod *p)
{
    return POD(p)->request.count;
}

static int pod_request_at(const kc_pod *p, uint32_t index, kc_resource *id, int64_t *value)
{
    const struct res_list *r = &POD(p)->request;
    if (index >= r->count)
        return -1;
    *id = r->items[index].id;
    *value = r->items[index].value;
    return 0;
}

static const struct container *container_at(const kc_pod *p, int init, uint32_t index)
{
    const struct pod *pod = POD(p);
    uint32_t count = init ? pod->init_container_count : pod->container_count;
    if (index >= count)
        return NULL;
    return init ? &pod->init_containers[index] : &pod->containers[index];
}

static uint32_t pod_container_count(const kc_pod *p, int init)
{
    return init ? POD(p)->init_container_count : POD(p)->container_count;
}

static const char *pod_container_name(const kc_pod *p, int init, uint32_t index)
{
    const struct container *c = container_at(p, init, index);
    return c != NULL ? c->name : NULL;
}

static int64_t pod_container_request(const kc_pod *p, int init, uint32_t index, kc_resource id)
{
    const struct container *c = container_at(p, init, index);
    return c != NULL ? res_list_get(&c->requests, id) : 0;
}

static int64_t pod_container_limit(const kc_pod *p, int init, uint32_t index, kc_resource id)
{
    const struct container *c = container_at(p, init, index);
    return c != NULL ? res_list_get(&c->limits, id) : 0;
}

static int pod_container_restartable(const kc_pod *p, int init, uint32_t index)
{
    const struct container *c = container_at(p, init, index);
    return c == NULL ? -1 : init && c->restartable;
}

static uint32_t pod_scheduling_gate_count(const kc_pod *p)
{
    return POD(p)->scheduling_gate_count;
}

static int pod_matches_node_affinity(const kc_pod *p, const kc_node *n)
{
    return pod_matches_node_selector_and_affinity(POD(p), NODE(n)->node);
}

static int64_t pod_preferred_affinity_score(const kc_pod *p, const kc_node *n)
{
    return pod_preferred_affinity_weight(POD(p), NODE(n)->node);
}

static int pod_tolerates_taint(const kc_pod *p, const kc_taint *taint)
{
    return pod_tolerates(POD(p), taint->key, taint->value, taint->effect);
}

static int32_t pod_affinity_names(const kc_pod *p, const char **names, uint32_t capacity)
{
    return pod_affinity_node_names(POD(p), names, capacity);
}

static uint32_t pod_node_constraints(const kc_pod *p)
{
    const struct pod *pod = POD(p);
    return (pod->node_selector.count > 0 ? KC_POD_NODE_SELECTOR : 0) |
           (pod->affinity.has_required ? KC_POD_REQUIRED_NODE_AFFINITY : 0) |
           (pod->affinity.preferred_count > 0 ? KC_POD_PREFERRED_NODE_AFFINITY : 0);
}

static const char *node_name(const kc_node *n)
{
    return NODE(n)->node->name;
}
static int node_unschedulable(const kc_node *n)
{
    return NODE(n)->unschedulable;
}
static uint32_t node_taint_count(const kc_node *n)
{
    return NODE(n)->taint_count;
}
static uint32_t node_pod_count(const kc_node *n)
{
    return NODE(n)->pod_count;
}
static uint32_t node_index(const kc_node *n)
{
    return NODE(n)->index;
}

static const char *node_label(const kc_node *n, const char *key)
{
    return kv_list_get(&NODE(n)->node->labels, key);
}

static const char *node_annotation(const kc_node *n, const char *key)
{
    return kv_list_get(&NODE(n)->node->annotations, key);
}

static int node_taint_at(const kc_node *n, uint32_t index, kc_taint *out)
{
    const struct node *node = NODE(n)->node;
    if (index >= node->taint_count || out == NULL)
        return -1;
    const struct taint *t = &node->taints[index];
    kc_taint full = {sizeof(kc_taint), t->effect, t->key, t->value != NULL ? t->value : ""};
    size_t size = out->struct_size < sizeof(full) ? out->struct_size : sizeof(full);
    uint32_t caller_size = out->struct_size;
    memcpy(out, &full, size);
    out->struct_size = caller_size;
    return 0;
}

static int64_t node_allocatable(const kc_node *n, kc_resource id)
{
    return (id >= 0 && id < KC_RESOURCE_MAX) ? NODE(n)->amount[id].allocatable : 0;
}

static int64_t node_nonzero_requested(const kc_node *n, kc_resource id)
{
    if (id == KC_RESOURCE_CPU)
        return NODE(n)->nonzero_cpu;
    if (id == KC_RESOURCE_MEMORY)
        return NODE(n)->nonzero_memory;
    return id >= 0 && id < KC_RESOURCE_MAX ? NODE(n)->amount[id].requested : 0;
}

static int64_t node_requested(const kc_node *n, kc_resource id)
{
    return (id >= 0 && id < KC_RESOURCE_MAX) ? NODE(n)->amount[id].requested : 0;
}

static void fill_usage(const struct cache_node *cn, kc_node_usage *out)
{
    out->pod_count = cn->pod_count;
    out->pods_allocatable = cn->amount[KC_RESOURCE_PODS].allocatable;
    out->cpu_allocatable = cn->amount[KC_RESOURCE_CPU].allocatable;
    out->cpu_requested = cn->amount[KC_RESOURCE_CPU].requested;
    out->cpu_nonzero_requested = cn->nonzero_cpu;
    out->memory_allocatable = cn->amount[KC_RESOURCE_MEMORY].allocatable;
    out->memory_requested = cn->amount[KC_RESOURCE_MEMORY].requested;
    out->memory_nonzero_requested = cn->nonzero_memory;
}

/* Filled in place for a caller of this SDK's size or a newer, longer one (every Filter and
 * Score of noderesources asks), through a copy for an older, shorter struct. struct_size
 * becomes what was filled, the smaller of the caller's and this host's, so a newer plugin
 * sees which members it got. */
static void node_usage(const kc_node *n, kc_node_usage *out)
{
    if (out->struct_size >= sizeof(*out)) {
        fill_usage(NODE(n), out);
        out->struct_size = sizeof(*out);
        return;
    }
    kc_node_usage full = {.struct_size = out->struct_size};
    fill_usage(NODE(n), &full);
    memcpy(out, &full, out->struct_size);
}

static uint32_t node_count(void)
{
    return scheduler_current()->cache.node_count;
}

static const kc_node *node_at(uint32_t index)
{
    struct scheduler *s = scheduler_current();
    return index < s->cache.node_count ? (const kc_node *)&s->cache.nodes[index] : NULL;
}

static const kc_node *node_by_name(const char *name)
{
    return (const kc_node *)cache_node(&scheduler_current()->cache, name);
}

static uint32_t waiting_pod_count(void)
{
    return scheduler_current()->waiting_count;
}

static kc_waiting_pod *waiting_pod_at(uint32_t index)
{
    struct scheduler *s = scheduler_current();
    return index < s->waiting_count ? s->waiting[index] : NULL;
}

static kc_waiting_pod *waiting_pod_get(const char *uid)
{
    return waiting_pod_find(scheduler_current(), uid);
}

static const kc_pod *waiting_pod_pod(const kc_waiting_pod *w)
{
    return (const kc_pod *)w->cycle->sp->pod;
}

static const char *waiting_pod_node(const kc_waiting_pod *w)
{
    return w->cycle->node_name;
}

static int64_t now_ms(void)
{
    return scheduler_now(scheduler_current());
}

/* ---- added in 1.2: the handle-taking forms, node ids ---- */

static uint64_t node_id(const kc_node *n)
{
    return NODE(n)->id;
}

static uint32_t cycle_node_count(kc_cycle *cycle)
{
    return cycle->sched->cache.node_count;
}

static const kc_node *cycle_node_at(kc_cycle *cycle, uint32_t index)
{
    struct scheduler *s = cycle->sched;
    return index < s->cache.node_count ? (const kc_node *)&s->cache.nodes[index] : NULL;
}

static uint32_t cycle_waiting_pod_count(kc_cycle *cycle)
{
    return cycle->sched->waiting_count;
}

static int64_t cycle_now_ms(kc_cycle *cycle)
{
    return scheduler_now(cycle->sched);
}

static int bind(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct scheduler *s = cycle->sched;
    if (s->sink.bind == NULL)
        return -1;
    int rc = cycle_flush_writes(cycle);
    if (rc < 0)
        return rc;
    rc = s->sink.bind(s->sink.ctx, POD(pod), NODE(node)->node->name, &cycle->annotations);
    if (rc == 1)
        cycle->bind_pending = true; /* the result comes later: the binding cycle waits */
    return rc > 0 ? 0 : rc;
}

static int cycle_group(kc_cycle *cycle, kc_group_cycle *out)
{
    const struct pod_group *g = cycle != NULL ? cycle->group : NULL;
    if (g == NULL || out == NULL || out->struct_size < sizeof(uint32_t))
        return 0;
    kc_group_cycle full = {
        .struct_size = out->struct_size,
        .index = cycle->group_index,
        .count = cycle->group_count,
        .needed = cycle->group_needed,
        .namespace_name = g->namespace_name,
        .name = g->name,
    };
    memcpy(out, &full, out->struct_size < sizeof(full) ? out->struct_size : sizeof(full));
    return 1;
}

static uint32_t pod_host_port_count(const kc_pod *p)
{
    return POD(p)->host_port_count;
}

static int pod_host_port_at(const kc_pod *p, uint32_t index, kc_host_port *out)
{
    const struct pod *pod = POD(p);
    if (index >= pod->host_port_count || out == NULL || out->struct_size < sizeof(uint32_t))
        return -1;
    const struct host_port *hp = &pod->host_ports[index];
    kc_host_port full = {
        .struct_size = out->struct_size,
        .host_port = hp->port,
        .container_port = hp->container_port,
        .protocol = hp->protocol,
        .host_ip = hp->host_ip,
    };
    memcpy(out, &full, out->struct_size < sizeof(full) ? out->struct_size : sizeof(full));
    return 0;
}

static const char *pod_constraints_json(const kc_pod *p)
{
    return POD(p)->constraints_json;
}

static uint32_t pod_label_count(const kc_pod *p)
{
    return POD(p)->labels.count;
}

static int pod_label_at(const kc_pod *p, uint32_t index, const char **key, const char **value)
{
    const struct kv_list *labels = &POD(p)->labels;
    if (index >= labels->count)
        return -1;
    *key = labels->items[index].key;
    *value = labels->items[index].value;
    return 0;
}

static uint32_t pod_volume_count(const kc_pod *p)
{
    return POD(p)->volume_count;
}

static int pod_volume_at(const kc_pod *p, uint32_t index, kc_volume *out)
{
    const struct pod *pod = POD(p);
    if (index >= pod->volume_count || out == NULL || out->struct_size < sizeof(uint32_t))
        return -1;
    const struct volume *v = &pod->volumes[index];
    kc_volume full = {
        .struct_size = out->struct_size,
        .source = v->source,
        .name = v->name,
        .claim_name = v->claim_name,
        .read_only = v->read_only,
        .disk = v->disk,
        .pool = v->pool,
        .monitors = v->monitors,
    };
    size_t size = out->struct_size < sizeof(full) ? out->struct_size : sizeof(full);
    memcpy(out, &full, size);
    return 0;
}

/* ---- preemption (added in 1.2) ---- */

static int pod_preempt_never(const kc_pod *p)
{
    return POD(p)->preempt_never;
}

/* The runtime's nomination (set by a preemption moments ago) before the object's field, which
 * the API server confirms later. */
static const char *pod_nominated_node_name(const kc_pod *p)
{
    struct scheduler *s = scheduler_current();
    const char *node = s != NULL ? nominations_node(&s->nominations, POD(p)->uid) : NULL;
    return node != NULL ? node : POD(p)->nominated_node_name;
}

static int64_t pod_start_ms(const kc_pod *p)
{
    return POD(p)->start_ms;
}

static int pod_terminating(const kc_pod *p)
{
    return POD(p)->deleting;
}

static const kc_pod *node_pod_at(const kc_node *n, uint32_t index)
{
    return index < NODE(n)->pod_count ? (const kc_pod *)NODE(n)->pods[index]->pod : NULL;
}

static kc_status cycle_node_status(kc_cycle *cycle, const kc_node *n)
{
    if (cycle->prefilter_status != KC_SUCCESS)
        return cycle->prefilter_status; /* PreFilter's verdict holds for every node */
    struct scheduler *s = cycle->sched;
    uint32_t index = NODE(n)->index;
    if (s->node_status == NULL || index >= s->cache.node_count)
        return KC_UNSCHEDULABLE;
    return (kc_status)s->node_status[index];
}

static __attribute__((noinline)) const kc_pod *view_delta_pod(kc_cycle *cycle, const kc_node *n,
                                                               int gone, uint32_t index)
{
    if (cycle == NULL || n == NULL)
        return NULL;
    return (const kc_pod *)preempt_view_delta(cycle->sched, NODE(n), gone != 0, index);
}

/* Spread and affinity ask this twice per node in every Filter: the ordinary Filter's answer
 * comes first, before anything the view's path needs saved (docs/benchmarks.md). */
static const kc_pod *filter_delta_pod(kc_cycle *cycle, const kc_node *n, int gone,
                                     uint32_t index)
{
    if (__builtin_expect(preempt_current_view == NULL, 1))
        return NULL; /* an ordinary Filter: no view, nothing taken off or added */
    return view_delta_pod(cycle, n, gone, index);
}

static int pod_controller(const kc_pod *p, const char **api_version, const char **kind,
                          const char **name)
{
    const struct pod *pod = POD(p);
    if (pod->controller_kind == NULL)
        return -1;
    *api_version = pod->controller_api_version;
    *kind = pod->controller_kind;
    *name = pod->controller_name;
    return 0;
}

static kc_status filter_what_if(kc_cycle *cycle, const kc_node *n, const kc_pod *const *removed,
                                uint32_t removed_count, char *reason, size_t reason_size)
{
    return preempt_filter_what_if(cycle, NODE(n), (const struct pod *const *)removed,
                                  removed_count, reason, reason_size);
}

static int preempt(kc_cycle *cycle, const kc_node *n, const kc_pod *const *victims,
                   uint32_t victim_count)
{
    return preempt_choose(cycle, NODE(n), (const struct pod *const *)victims, victim_count);
}

/* ---- capacity queues (added in 1.2) ---- */

static int object_status(const char *kind, const char *namespace_name, const char *name,
                         const char *status_json)
{
    struct scheduler *s = scheduler_current();
    if (kind == NULL || name == NULL || status_json == NULL || status_json[0] != '{')
        return -EINVAL;
    /* a cut or malformed object would reach the API server as a broken merge patch */
    json_t *parsed = json_loads(status_json, 0, NULL);
    bool object = json_is_object(parsed);
    json_decref(parsed);
    if (!object)
        return -EINVAL;
    if (s != NULL)
        sched_metrics_object_status(s, kind, name, status_json);
    if (s == NULL || s->sink.object_status == NULL)
        return -EOPNOTSUPP;
    s->sink.object_status(s->sink.ctx, kind, namespace_name, name, status_json);
    return 0;
}

static int preempt_more(kc_cycle *cycle, const kc_pod *const *victims, uint32_t victim_count)
{
    if (cycle->sched->sink.evict == NULL)
        return -EOPNOTSUPP;
    return preempt_choose_more(cycle, (const struct pod *const *)victims, victim_count);
}

void hostapi_fill(kc_host_api *api)
{
    memset(api, 0, sizeof(*api));
    api->struct_size = sizeof(*api);
    api->abi_version = KC_ABI_VERSION;
    api->log = host_log;
    api->resource_id = resource_intern;
    api->resource_name = resource_name;
    api->pod_namespace = pod_namespace;
    api->pod_name = pod_name;
    api->pod_uid = pod_uid;
    api->pod_node_name = pod_node_name;
    api->pod_scheduler_name = pod_scheduler_name;
    api->pod_priority = pod_priority;
    api->pod_creation_ms = pod_creation_ms;
    api->pod_enqueue_ms = pod_enqueue_ms;
    api->pod_label = pod_label;
    api->pod_annotation = pod_annotation;
    api->pod_request = pod_request;
    api->pod_request_count = pod_request_count;
    api->pod_request_at = pod_request_at;
    api->pod_container_count = pod_container_count;
    api->pod_container_name = pod_container_name;
    api->pod_container_request = pod_container_request;
    api->pod_container_limit = pod_container_limit;
    api->pod_group = pod_group;
    api->pod_scheduling_gate_count = pod_scheduling_gate_count;
    api->pod_matches_node_affinity = pod_matches_node_affinity;
    api->pod_preferred_affinity_score = pod_preferred_affinity_score;
    api->pod_tolerates_taint = pod_tolerates_taint;
    api->node_name = node_name;
    api->node_label = node_label;
    api->node_annotation = node_annotation;
    api->node_unschedulable = node_unschedulable;
    api->node_taint_count = node_taint_count;
    api->node_taint_at = node_taint_at;
    api->node_allocatable = node_allocatable;
    api->node_requested = node_requested;
    api->node_pod_count = node_pod_count;
    api->node_index = node_index;
    api->node_count = node_count;
    api->node_at = node_at;
    api->node_by_name = node_by_name;
    api->cycle_reject = cycle_reject;
    api->cycle_set = cycle_set;
    api->cycle_get = cycle_get;
    api->cycle_annotate = cycle_annotate;
    api->waiting_pod_count = waiting_pod_count;
    api->waiting_pod_at = waiting_pod_at;
    api->waiting_pod_get = waiting_pod_get;
    api->waiting_pod_pod = waiting_pod_pod;
    api->waiting_pod_node = waiting_pod_node;
    api->waiting_pod_allow = waiting_pod_allow;
    api->waiting_pod_reject = waiting_pod_reject;
    api->bind = bind;
    api->now_ms = now_ms;
    api->cycle_group = cycle_group;
    /* Added in 1.2 */
    api->pod_host_port_count = pod_host_port_count;
    api->pod_host_port_at = pod_host_port_at;
    api->pod_affinity_node_names = pod_affinity_names;
    api->pod_node_constraints = pod_node_constraints;
    api->cycle_restrict_nodes = cycle_restrict_nodes;
    api->pod_volume_count = pod_volume_count;
    api->pod_constraints_json = pod_constraints_json;
    api->pod_label_count = pod_label_count;
    api->pod_label_at = pod_label_at;
    api->pod_volume_at = pod_volume_at;
    api->cycle_write_object = cycle_write_object;
    /* added in 1.2: preemption */
    api->pod_preempt_never = pod_preempt_never;
    api->pod_nominated_node_name = pod_nominated_node_name;
    api->pod_start_ms = pod_start_ms;
    api->pod_terminating = pod_terminating;
    api->node_pod_at = node_pod_at;
    api->cycle_node_status = cycle_node_status;
    api->filter_what_if = filter_what_if;
    api->preempt = preempt;
    /* added in 1.2: sidecars */
    api->pod_container_restartable = pod_container_restartable;
    api->node_nonzero_requested = node_nonzero_requested;
    /* added in 1.2: capacity queues */
    api->object_status = object_status;
    api->preempt_more = preempt_more;
    /* added in 1.2: for plugin authors */
    api->logv = host_logv;
    api->cycle_delete = cycle_delete;
    api->node_id = node_id;
    api->cycle_node_count = cycle_node_count;
    api->cycle_node_at = cycle_node_at;
    api->cycle_waiting_pod_count = cycle_waiting_pod_count;
    api->cycle_now_ms = cycle_now_ms;
    api->args_parse = plugin_args_parse;
    api->args_int = plugin_args_int;
    api->args_string = plugin_args_string;
    api->args_bool = plugin_args_bool;
    api->args_quantity = plugin_args_quantity;
    api->args_finish = plugin_args_finish;
    /* added in 1.2: what-if Filter for plugins that count pods in PreFilter */
    api->filter_delta_pod = filter_delta_pod;
    /* added in 1.2: default spread constraints */
    api->pod_controller = pod_controller;
    /* added in 1.2: Filter and Score's hot path */
    api->node_usage = node_usage;
}
