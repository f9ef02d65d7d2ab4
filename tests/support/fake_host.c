/* The fake host table: every kc_host_api member over the in-memory objects of fake_host.h,
 * counting the calls a test wants to assert on (a plugin's hot path must not allocate). */
#include "fake_host.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_args.h"

struct fake_host_state fake_host;

static char *resource_names[KC_RESOURCE_MAX];
static uint32_t resource_count;

static const char *const fixed_resources[] = {"cpu", "memory", "pods", "ephemeral-storage"};
#define FIXED_RESOURCE_COUNT 4u

static char *copy_string(const char *text)
{
    size_t size = strlen(text) + 1;
    char *copy = malloc(size);
    if (copy == NULL)
        abort(); /* a test host has no better answer to out-of-memory */
    memcpy(copy, text, size);
    return copy;
}

static const char *kv_get(const struct fake_kv *items, uint32_t count, const char *key)
{
    for (uint32_t i = 0; i < count; i++) {
        if (strcmp(items[i].key, key) == 0)
            return items[i].value;
    }
    return NULL;
}

/* Resources ---------------------------------------------------------------------------- */

static void resources_release(void)
{
    for (uint32_t i = 0; i < resource_count; i++)
        free(resource_names[i]);
    resource_count = 0;
}

static void resources_reset(void)
{
    resources_release();
    for (uint32_t i = 0; i < FIXED_RESOURCE_COUNT; i++)
        resource_names[resource_count++] = copy_string(fixed_resources[i]);
}

static kc_resource intern(const char *name)
{
    if (resource_count == 0)
        resources_reset();
    for (uint32_t i = 0; i < resource_count; i++) {
        if (strcmp(resource_names[i], name) == 0)
            return (kc_resource)i;
    }
    if (resource_count == KC_RESOURCE_MAX)
        return -1;
    resource_names[resource_count] = copy_string(name);
    return (kc_resource)resource_count++;
}

static kc_resource host_resource_id(const char *name)
{
    fake_host.calls.resource_id++;
    return intern(name);
}

static const char *host_resource_name(kc_resource id)
{
    fake_host.calls.resource_name++;
    if (id < 0 || (uint32_t)id >= resource_count)
        return NULL;
    return resource_names[id];
}

/* Logging and clock -------------------------------------------------------------------- */

static void host_log(kc_log_level level, const char *plugin, const char *message)
{
    fake_host.calls.log++;
    fake_host.log_count++;
    fake_host.last_log_level = level;
    if (plugin == NULL)
        plugin = fake_host.calling_plugin != NULL ? fake_host.calling_plugin : "?";
    snprintf(fake_host.last_log, sizeof(fake_host.last_log), "%s: %s", plugin, message);
}

/* The plugin is the one the test says it calls (fake_host.calling_plugin), as the runtime
 * knows the plugin it calls. */
static void host_logv(kc_log_level level, const char *fmt, va_list ap)
{
    char line[FAKE_LOG_SIZE / 2]; /* room for the plugin's name in last_log */
    vsnprintf(line, sizeof(line), fmt, ap);
    host_log(level, NULL, line);
}

static int64_t host_now_ms(void)
{
    return fake_host.now_ms;
}

/* Pods --------------------------------------------------------------------------------- */

static const char *host_pod_namespace(const kc_pod *pod)
{
    return pod->namespace_name;
}
static const char *host_pod_name(const kc_pod *pod)
{
    return pod->name;
}
static const char *host_pod_uid(const kc_pod *pod)
{
    return pod->uid;
}
static const char *host_pod_node_name(const kc_pod *pod)
{
    return pod->node_name;
}
static const char *host_pod_scheduler_name(const kc_pod *pod)
{
    return pod->scheduler_name;
}
static int32_t host_pod_priority(const kc_pod *pod)
{
    return pod->priority;
}
static int64_t host_pod_creation_ms(const kc_pod *pod)
{
    return pod->creation_ms;
}
static int64_t host_pod_enqueue_ms(const kc_pod *pod)
{
    return pod->enqueue_ms;
}
static const char *host_pod_group(const kc_pod *pod)
{
    return pod->group;
}

static uint32_t host_pod_scheduling_gate_count(const kc_pod *pod)
{
    return pod->scheduling_gate_count;
}

static const char *host_pod_label(const kc_pod *pod, const char *key)
{
    return kv_get(pod->labels, pod->label_count, key);
}

static const char *host_pod_annotation(const kc_pod *pod, const char *key)
{
    return kv_get(pod->annotations, pod->annotation_count, key);
}

static int64_t host_pod_request(const kc_pod *pod, kc_resource id)
{
    fake_host.calls.pod_request++;
    if (id < 0 || id >= KC_RESOURCE_MAX)
        return 0;
    return pod->request[id];
}

/* Like the runtime: the non-zero requests, sorted by id. */
static uint32_t host_pod_request_count(const kc_pod *pod)
{
    fake_host.calls.pod_request_count++;
    uint32_t count = 0;
    for (uint32_t id = 0; id < KC_RESOURCE_MAX; id++)
        count += pod->request[id] != 0;
    return count;
}

static int host_pod_request_at(const kc_pod *pod, uint32_t index, kc_resource *id, int64_t *value)
{
    fake_host.calls.pod_request_at++;
    uint32_t seen = 0;
    for (uint32_t r = 0; r < KC_RESOURCE_MAX; r++) {
        if (pod->request[r] == 0)
            continue;
        if (seen++ == index) {
            *id = (kc_resource)r;
            *value = pod->request[r];
            return 0;
        }
    }
    return -22;
}

static const struct fake_container *container(const kc_pod *pod, int init, uint32_t index)
{
    if (init)
        return index < pod->init_container_count ? &pod->init_containers[index] : NULL;
    return index < pod->container_count ? &pod->containers[index] : NULL;
}

static uint32_t host_pod_container_count(const kc_pod *pod, int init)
{
    return init ? pod->init_container_count : pod->container_count;
}

static const char *host_pod_container_name(const kc_pod *pod, int init, uint32_t index)
{
    const struct fake_container *c = container(pod, init, index);
    return c != NULL ? c->name : NULL;
}

static int64_t host_pod_container_request(const kc_pod *pod, int init, uint32_t index,
                                          kc_resource id)
{
    const struct fake_container *c = container(pod, init, index);
    if (c == NULL || id < 0 || id >= KC_RESOURCE_MAX)
        return 0;
    return c->request[id];
}

static int host_pod_container_restartable(const kc_pod *pod, int init, uint32_t index)
{
    const struct fake_container *c = container(pod, init, index);
    return c == NULL ? -1 : init && c->restartable;
}

static int64_t host_pod_container_limit(const kc_pod *pod, int init, uint32_t index, kc_resource id)
{
    const struct fake_container *c = container(pod, init, index);
    if (c == NULL || id < 0 || id >= KC_RESOURCE_MAX)
        return 0;
    return c->limit[id];
}

static int node_has_label(const kc_node *node, const char *key, const char *value)
{
    const char *actual = kv_get(node->labels, node->label_count, key);
    return actual != NULL && strcmp(actual, value) == 0;
}

static int host_pod_matches_node_affinity(const kc_pod *pod, const kc_node *node)
{
    if (pod->affinity_node_name_count >= 0) {
        int named = 0;
        for (int32_t i = 0; i < pod->affinity_node_name_count && !named; i++)
            named = strcmp(pod->affinity_node_names[i], node->name) == 0;
        if (!named)
            return 0;
    }
    for (uint32_t i = 0; i < pod->node_selector_count; i++) {
        if (!node_has_label(node, pod->node_selector[i].key, pod->node_selector[i].value))
            return 0;
    }
    return 1;
}

static int32_t host_pod_affinity_node_names(const kc_pod *pod, const char **names,
                                            uint32_t capacity)
{
    for (int32_t i = 0; i < pod->affinity_node_name_count && (uint32_t)i < capacity; i++)
        names[i] = pod->affinity_node_names[i];
    return pod->affinity_node_name_count;
}

static uint32_t host_pod_node_constraints(const kc_pod *pod)
{
    return (pod->node_selector_count > 0 ? KC_POD_NODE_SELECTOR : 0) |
           (pod->affinity_node_name_count >= 0 ? KC_POD_REQUIRED_NODE_AFFINITY : 0) |
           (pod->preferred_count > 0 ? KC_POD_PREFERRED_NODE_AFFINITY : 0);
}

static int64_t host_pod_preferred_affinity_score(const kc_pod *pod, const kc_node *node)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < pod->preferred_count; i++) {
        if (node_has_label(node, pod->preferred[i].key, pod->preferred[i].value))
            sum += pod->preferred[i].weight;
    }
    return sum;
}

static int toleration_matches(const struct fake_toleration *tol, const kc_taint *taint)
{
    if (tol->effect != 0 && tol->effect != taint->effect)
        return 0;
    if (tol->key == NULL)
        return tol->exists;
    if (strcmp(tol->key, taint->key) != 0)
        return 0;
    if (tol->exists)
        return 1;
    const char *value = tol->value != NULL ? tol->value : "";
    return strcmp(value, taint->value != NULL ? taint->value : "") == 0;
}

static int host_pod_tolerates_taint(const kc_pod *pod, const kc_taint *taint)
{
    for (uint32_t i = 0; i < pod->toleration_count; i++) {
        if (toleration_matches(&pod->tolerations[i], taint))
            return 1;
    }
    return 0;
}

/* Nodes -------------------------------------------------------------------------------- */

static const char *host_node_name(const kc_node *node)
{
    return node->name;
}
static int host_node_unschedulable(const kc_node *node)
{
    return node->unschedulable;
}
static uint32_t host_node_taint_count(const kc_node *node)
{
    return node->taint_count;
}
static uint32_t host_node_pod_count(const kc_node *node)
{
    return node->pod_count;
}
static uint32_t host_node_index(const kc_node *node)
{
    return node->index;
}
static uint32_t host_node_count(void)
{
    return fake_host.node_count;
}

static const char *host_node_label(const kc_node *node, const char *key)
{
    return kv_get(node->labels, node->label_count, key);
}

static const char *host_node_annotation(const kc_node *node, const char *key)
{
    return kv_get(node->annotations, node->annotation_count, key);
}

/* Fills only what the caller's struct_size covers, as the ABI promises. */
static int host_node_taint_at(const kc_node *node, uint32_t index, kc_taint *out)
{
    if (index >= node->taint_count || out == NULL || out->struct_size < sizeof(uint32_t))
        return -22;
    kc_taint full = node->taints[index];
    uint32_t size = out->struct_size < sizeof(full) ? out->struct_size : sizeof(full);
    full.struct_size = out->struct_size;
    memcpy(out, &full, size);
    return 0;
}

static int64_t host_node_allocatable(const kc_node *node, kc_resource id)
{
    if (id < 0 || id >= KC_RESOURCE_MAX)
        return 0;
    return node->allocatable[id];
}

static int64_t host_node_nonzero_requested(const kc_node *node, kc_resource id)
{
    if (id < 0 || id >= KC_RESOURCE_MAX)
        return 0;
    return node->requested[id] + node->nonzero_extra[id];
}

static int64_t host_node_requested(const kc_node *node, kc_resource id)
{
    if (id < 0 || id >= KC_RESOURCE_MAX)
        return 0;
    return node->requested[id];
}

static const kc_node *host_node_at(uint32_t index)
{
    return index < fake_host.node_count ? fake_host.nodes[index] : NULL;
}

static const kc_node *host_node_by_name(const char *name)
{
    for (uint32_t i = 0; i < fake_host.node_count; i++) {
        if (strcmp(fake_host.nodes[i]->name, name) == 0)
            return fake_host.nodes[i];
    }
    return NULL;
}

/* Cycle -------------------------------------------------------------------------------- */

static void host_cycle_reject(kc_cycle *cycle, const char *reason)
{
    fake_host.calls.cycle_reject++;
    if (cycle->reason_count < FAKE_MAX_REASONS)
        cycle->reasons[cycle->reason_count++] = copy_string(reason);
}

/* Keeps the names both this call and the earlier ones allow, as the runtime does. */
static int host_cycle_restrict_nodes(kc_cycle *cycle, const char *label, const char *const *names,
                                     uint32_t count)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < count && kept < FAKE_MAX_NODES; i++) {
        int allowed = !cycle->restricted;
        for (uint32_t j = 0; j < cycle->restricted_count && !allowed; j++)
            allowed = strcmp(cycle->restricted_names[j], names[i]) == 0;
        for (uint32_t j = 0; j < kept && allowed; j++)
            allowed = strcmp(cycle->restricted_names[j], names[i]) != 0;
        if (allowed)
            cycle->restricted_names[kept++] = names[i];
    }
    cycle->restricted_count = kept;
    cycle->restricted = 1;
    snprintf(cycle->restrict_label, sizeof(cycle->restrict_label), "%s", label);
    return 0;
}

static struct fake_cycle_entry *cycle_find(kc_cycle *cycle, const char *key)
{
    for (uint32_t i = 0; i < cycle->entry_count; i++) {
        if (strcmp(cycle->entries[i].key, key) == 0)
            return &cycle->entries[i];
    }
    return NULL;
}

/* Replacing a key frees the old data, as the runtime does. */
static int host_cycle_set(kc_cycle *cycle, const char *key, void *data, void (*free_fn)(void *))
{
    fake_host.calls.cycle_set++;
    struct fake_cycle_entry *entry = cycle_find(cycle, key);
    if (entry != NULL) {
        if (entry->free_fn != NULL)
            entry->free_fn(entry->data);
        entry->data = data;
        entry->free_fn = free_fn;
        return 0;
    }
    if (cycle->entry_count == FAKE_MAX_CYCLE_ENTRIES)
        return -12;
    entry = &cycle->entries[cycle->entry_count++];
    entry->key = copy_string(key);
    entry->data = data;
    entry->free_fn = free_fn;
    return 0;
}

static int host_cycle_delete(kc_cycle *cycle, const char *key)
{
    fake_host.calls.cycle_delete++;
    struct fake_cycle_entry *entry = cycle_find(cycle, key);
    if (entry == NULL)
        return -2;
    struct fake_cycle_entry gone = *entry;
    *entry = cycle->entries[--cycle->entry_count];
    free(gone.key);
    if (gone.free_fn != NULL)
        gone.free_fn(gone.data);
    return 0;
}

static void *host_cycle_get(kc_cycle *cycle, const char *key)
{
    fake_host.calls.cycle_get++;
    struct fake_cycle_entry *entry = cycle_find(cycle, key);
    return entry != NULL ? entry->data : NULL;
}

static int host_cycle_annotate(kc_cycle *cycle, const char *key, const char *value)
{
    for (uint32_t i = 0; i < cycle->annotation_count; i++) {
        if (strcmp(cycle->annotations[i].key, key) == 0) {
            free((char *)cycle->annotations[i].value);
            cycle->annotations[i].value = copy_string(value);
            return 0;
        }
    }
    if (cycle->annotation_count == FAKE_MAX_KV)
        return -12;
    struct fake_kv *kv = &cycle->annotations[cycle->annotation_count++];
    kv->key = copy_string(key);
    kv->value = copy_string(value);
    return 0;
}

/* Waiting pods ------------------------------------------------------------------------- */

static uint32_t host_waiting_pod_count(void)
{
    return fake_host.waiting_count;
}

static kc_waiting_pod *host_waiting_pod_at(uint32_t index)
{
    return index < fake_host.waiting_count ? &fake_host.waiting[index] : NULL;
}

static kc_waiting_pod *host_waiting_pod_get(const char *uid)
{
    for (uint32_t i = 0; i < fake_host.waiting_count; i++) {
        const char *pod_uid = fake_host.waiting[i].pod->uid;
        if (pod_uid != NULL && strcmp(pod_uid, uid) == 0)
            return &fake_host.waiting[i];
    }
    return NULL;
}

static const kc_pod *host_waiting_pod_pod(const kc_waiting_pod *waiting)
{
    return waiting->pod;
}

static const char *host_waiting_pod_node(const kc_waiting_pod *waiting)
{
    return waiting->node_name;
}

static int host_waiting_pod_allow(kc_waiting_pod *waiting, const char *plugin)
{
    (void)plugin;
    waiting->allowed++;
    return 0;
}

static int host_waiting_pod_reject(kc_waiting_pod *waiting, const char *plugin, const char *message)
{
    (void)plugin;
    waiting->rejected++;
    snprintf(waiting->message, sizeof(waiting->message), "%s", message != NULL ? message : "");
    return 0;
}

/* Binding ------------------------------------------------------------------------------ */

static int host_bind(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    fake_host.calls.bind++;
    if (fake_host.bind_result != 0)
        return fake_host.bind_result;
    fake_host.last_bound_pod = pod;
    fake_host.last_bound_node = node;
    if (cycle != NULL) {
        cycle->bound_pod = pod;
        cycle->bound_node = node;
    }
    return 0;
}

static int host_cycle_group(kc_cycle *cycle, kc_group_cycle *out)
{
    if (cycle == NULL || !cycle->in_group || out == NULL)
        return 0;
    kc_group_cycle full = cycle->group;
    uint32_t size = out->struct_size < sizeof(full) ? out->struct_size : sizeof(full);
    full.struct_size = out->struct_size;
    memcpy(out, &full, size);
    return 1;
}

/* Host ports (1.2) ---------------------------------------------------------------------- */

static uint32_t host_pod_host_port_count(const kc_pod *pod)
{
    return pod->host_port_count;
}

static int host_pod_host_port_at(const kc_pod *pod, uint32_t index, kc_host_port *out)
{
    if (index >= pod->host_port_count || out == NULL)
        return -1;
    kc_host_port full = pod->host_ports[index];
    full.struct_size = out->struct_size;
    if (full.protocol == NULL)
        full.protocol = "TCP";
    if (full.host_ip == NULL)
        full.host_ip = "0.0.0.0";
    memcpy(out, &full, out->struct_size < sizeof(full) ? out->struct_size : sizeof(full));
    return 0;
}

static const char *host_pod_constraints_json(const kc_pod *pod)
{
    return pod->constraints_json;
}

static uint32_t host_pod_label_count(const kc_pod *pod)
{
    return pod->label_count;
}

static int host_pod_label_at(const kc_pod *pod, uint32_t index, const char **key,
                             const char **value)
{
    if (index >= pod->label_count)
        return -1;
    *key = pod->labels[index].key;
    *value = pod->labels[index].value;
    return 0;
}

static uint32_t host_pod_volume_count(const kc_pod *pod)
{
    return pod->volume_count;
}

static int host_pod_volume_at(const kc_pod *pod, uint32_t index, kc_volume *out)
{
    if (index >= pod->volume_count || out == NULL)
        return -1;
    kc_volume full = pod->volumes[index];
    uint32_t size = out->struct_size < sizeof(full) ? out->struct_size : sizeof(full);
    full.struct_size = out->struct_size;
    memcpy(out, &full, size);
    return 0;
}

static int host_cycle_write_object(kc_cycle *cycle, const char *kind, const char *namespace_name,
                                   const char *name, const char *patch)
{
    if (cycle->write_result != 0)
        return cycle->write_result;
    if (cycle->write_count == FAKE_MAX_WRITES)
        return -12;
    struct fake_write *w = &cycle->writes[cycle->write_count++];
    w->kind = copy_string(kind);
    w->namespace_name = namespace_name != NULL ? copy_string(namespace_name) : NULL;
    w->name = copy_string(name);
    w->patch = copy_string(patch);
    return 0;
}

kc_volume *fake_pod_add_volume(kc_pod *pod, kc_volume_source source, const char *name,
                               const char *claim_or_disk)
{
    if (pod->volume_count == FAKE_MAX_VOLUMES)
        return NULL;
    kc_volume *v = &pod->volumes[pod->volume_count++];
    memset(v, 0, sizeof(*v));
    v->struct_size = sizeof(*v);
    v->source = source;
    v->name = name;
    if (source == KC_VOLUME_PVC || source == KC_VOLUME_EPHEMERAL)
        v->claim_name = claim_or_disk;
    else
        v->disk = claim_or_disk;
    if (source == KC_VOLUME_RBD)
        v->pool = "rbd";
    return v;
}

/* Preemption (1.2) ---------------------------------------------------------------------- */

static int host_pod_preempt_never(const kc_pod *pod)
{
    return pod->preempt_never;
}

static const char *host_pod_nominated_node_name(const kc_pod *pod)
{
    return pod->nominated_node_name;
}

static int64_t host_pod_start_ms(const kc_pod *pod)
{
    return pod->start_ms;
}

static int host_pod_terminating(const kc_pod *pod)
{
    return pod->terminating;
}

static const kc_pod *host_node_pod_at(const kc_node *node, uint32_t index)
{
    return index < node->pod_list_count ? node->pods[index] : NULL;
}

static kc_status host_cycle_node_status(kc_cycle *cycle, const kc_node *node)
{
    (void)cycle;
    return node->unresolvable ? KC_UNRESOLVABLE : KC_UNSCHEDULABLE;
}

static int listed(const kc_pod *const *pods, uint32_t count, const kc_pod *pod)
{
    for (uint32_t i = 0; i < count; i++)
        if (pods[i] == pod)
            return 1;
    return 0;
}

/* The built-in what-if: resources and pod count, as noderesources' Filter. */
static kc_status fit_without(const kc_pod *pod, const kc_node *node, const kc_pod *const *removed,
                             uint32_t removed_count, char *reason, size_t reason_size)
{
    int64_t requested[KC_RESOURCE_MAX];
    int64_t pods = node->pod_count + 1;
    memcpy(requested, node->requested, sizeof(requested));
    for (uint32_t i = 0; i < removed_count; i++) {
        for (int r = 0; r < KC_RESOURCE_MAX; r++)
            requested[r] -= removed[i]->request[r];
        pods--;
    }
    for (uint32_t i = 0; i < fake_host.nominated_count; i++) {
        const kc_pod *n = fake_host.nominated[i].pod;
        if (n == pod || n->priority < pod->priority ||
            strcmp(fake_host.nominated[i].node_name, node->name) != 0)
            continue;
        for (int r = 0; r < KC_RESOURCE_MAX; r++)
            requested[r] += n->request[r];
        pods++;
    }
    kc_resource pods_id = intern("pods");
    if (pods_id >= 0 && node->allocatable[pods_id] > 0 && pods > node->allocatable[pods_id]) {
        snprintf(reason, reason_size, "Too many pods");
        return KC_UNSCHEDULABLE;
    }
    for (int r = 0; r < KC_RESOURCE_MAX; r++) {
        if (r == pods_id || pod->request[r] == 0)
            continue;
        if (requested[r] + pod->request[r] > node->allocatable[r]) {
            snprintf(reason, reason_size, "Insufficient %s", host_resource_name(r));
            return KC_UNSCHEDULABLE;
        }
    }
    return KC_SUCCESS;
}

static kc_status host_filter_what_if(kc_cycle *cycle, const kc_node *node,
                                     const kc_pod *const *removed, uint32_t removed_count,
                                     char *reason, size_t reason_size)
{
    (void)cycle;
    char scratch[1];
    if (reason == NULL || reason_size == 0) {
        reason = scratch;
        reason_size = sizeof(scratch);
    }
    reason[0] = '\0';
    fake_host.what_if_calls++;
    for (uint32_t i = 0; i < removed_count; i++)
        if (!listed(node->pods, node->pod_list_count, removed[i]))
            return KC_ERROR; /* a plugin may only remove pods of the node */
    if (fake_host.what_if != NULL)
        return fake_host.what_if(fake_host.what_if_pod, node, removed, removed_count, reason,
                                 reason_size);
    if (fake_host.what_if_pod == NULL)
        return KC_ERROR;
    return fit_without(fake_host.what_if_pod, node, removed, removed_count, reason, reason_size);
}

static const kc_pod *host_filter_delta_pod(kc_cycle *cycle, const kc_node *node, int gone,
                                           uint32_t index)
{
    (void)cycle;
    if (node == NULL || node != fake_host.delta_node)
        return NULL;
    if (gone)
        return index < fake_host.delta_gone_count ? fake_host.delta_gone[index] : NULL;
    return index < fake_host.delta_added_count ? fake_host.delta_added[index] : NULL;
}

static int host_pod_controller(const kc_pod *pod, const char **api_version, const char **kind,
                               const char **name)
{
    if (pod->controller_kind == NULL)
        return -1;
    *api_version = pod->controller_api_version;
    *kind = pod->controller_kind;
    *name = pod->controller_name;
    return 0;
}

static void host_node_usage(const kc_node *node, kc_node_usage *out)
{
    uint32_t filled = out->struct_size < sizeof(kc_node_usage) ? out->struct_size
                                                                : (uint32_t)sizeof(kc_node_usage);
    kc_node_usage full = {
        .struct_size = filled, /* what was filled, as the runtime answers */
        .pod_count = node->pod_count,
        .pods_allocatable = node->allocatable[KC_RESOURCE_PODS],
        .cpu_allocatable = node->allocatable[KC_RESOURCE_CPU],
        .cpu_requested = node->requested[KC_RESOURCE_CPU],
        .cpu_nonzero_requested = host_node_nonzero_requested(node, KC_RESOURCE_CPU),
        .memory_allocatable = node->allocatable[KC_RESOURCE_MEMORY],
        .memory_requested = node->requested[KC_RESOURCE_MEMORY],
        .memory_nonzero_requested = host_node_nonzero_requested(node, KC_RESOURCE_MEMORY),
    };
    memcpy(out, &full, filled);
}

static int host_preempt(kc_cycle *cycle, const kc_node *node, const kc_pod *const *victims,
                        uint32_t victim_count)
{
    (void)cycle;
    fake_host.preempt_calls++;
    if (fake_host.preempt_result != 0)
        return fake_host.preempt_result;
    fake_host.preempt_node = node;
    fake_host.preempt_victim_count = 0;
    for (uint32_t i = 0; node != NULL && i < victim_count && i < FAKE_MAX_VICTIMS; i++)
        fake_host.preempt_victims[fake_host.preempt_victim_count++] = victims[i];
    return 0;
}

/* ---- capacity queues (1.2): object status and evictions on other nodes ---- */

static int host_object_status(const char *kind, const char *namespace_name, const char *name,
                              const char *status_json)
{
    (void)namespace_name;
    if (kind == NULL || name == NULL || status_json == NULL || status_json[0] != '{')
        return -22;
    fake_host.status_calls++;
    for (uint32_t i = 0; i < fake_host.status_count; i++)
        if (strcmp(fake_host.statuses[i].kind, kind) == 0 &&
            strcmp(fake_host.statuses[i].name, name) == 0) {
            snprintf(fake_host.statuses[i].json, sizeof(fake_host.statuses[i].json), "%s",
                     status_json);
            return 0;
        }
    if (fake_host.status_count == FAKE_MAX_STATUSES)
        return -12;
    struct fake_status *st = &fake_host.statuses[fake_host.status_count++];
    snprintf(st->kind, sizeof(st->kind), "%s", kind);
    snprintf(st->name, sizeof(st->name), "%s", name);
    snprintf(st->json, sizeof(st->json), "%s", status_json);
    return 0;
}

const char *fake_host_status(const char *kind, const char *name)
{
    for (uint32_t i = 0; i < fake_host.status_count; i++)
        if (strcmp(fake_host.statuses[i].kind, kind) == 0 &&
            strcmp(fake_host.statuses[i].name, name) == 0)
            return fake_host.statuses[i].json;
    return NULL;
}

static int host_preempt_more(kc_cycle *cycle, const kc_pod *const *victims, uint32_t victim_count)
{
    (void)cycle;
    if (fake_host.preempt_node == NULL)
        return -22;
    for (uint32_t i = 0; i < victim_count && fake_host.preempt_more_count < FAKE_MAX_VICTIMS; i++)
        fake_host.preempt_more[fake_host.preempt_more_count++] = victims[i];
    return 0;
}

/* Added in 1.2: the handle-taking forms (one fake scheduler: the cycle only proves the
 * plugin passed one), node ids. */
static uint32_t host_cycle_node_count(kc_cycle *cycle)
{
    (void)cycle;
    return fake_host.node_count;
}

static const kc_node *host_cycle_node_at(kc_cycle *cycle, uint32_t index)
{
    (void)cycle;
    return index < fake_host.node_count ? fake_host.nodes[index] : NULL;
}

static uint32_t host_cycle_waiting_pod_count(kc_cycle *cycle)
{
    (void)cycle;
    return fake_host.waiting_count;
}

static int64_t host_cycle_now_ms(kc_cycle *cycle)
{
    (void)cycle;
    return fake_host.now_ms;
}

static uint64_t host_node_id(const kc_node *node)
{
    return node->id;
}

static const kc_host_api api = {
    .struct_size = sizeof(kc_host_api),
    .abi_version = KC_ABI_VERSION,
    .log = host_log,
    .resource_id = host_resource_id,
    .resource_name = host_resource_name,
    .pod_namespace = host_pod_namespace,
    .pod_name = host_pod_name,
    .pod_uid = host_pod_uid,
    .pod_node_name = host_pod_node_name,
    .pod_scheduler_name = host_pod_scheduler_name,
    .pod_priority = host_pod_priority,
    .pod_creation_ms = host_pod_creation_ms,
    .pod_enqueue_ms = host_pod_enqueue_ms,
    .pod_label = host_pod_label,
    .pod_annotation = host_pod_annotation,
    .pod_request = host_pod_request,
    .pod_request_count = host_pod_request_count,
    .pod_request_at = host_pod_request_at,
    .pod_container_count = host_pod_container_count,
    .pod_container_name = host_pod_container_name,
    .pod_container_request = host_pod_container_request,
    .pod_container_limit = host_pod_container_limit,
    .pod_group = host_pod_group,
    .pod_scheduling_gate_count = host_pod_scheduling_gate_count,
    .pod_matches_node_affinity = host_pod_matches_node_affinity,
    .pod_preferred_affinity_score = host_pod_preferred_affinity_score,
    .pod_tolerates_taint = host_pod_tolerates_taint,
    .node_name = host_node_name,
    .node_label = host_node_label,
    .node_annotation = host_node_annotation,
    .node_unschedulable = host_node_unschedulable,
    .node_taint_count = host_node_taint_count,
    .node_taint_at = host_node_taint_at,
    .node_allocatable = host_node_allocatable,
    .node_requested = host_node_requested,
    .node_pod_count = host_node_pod_count,
    .node_index = host_node_index,
    .node_count = host_node_count,
    .node_at = host_node_at,
    .node_by_name = host_node_by_name,
    .cycle_reject = host_cycle_reject,
    .cycle_set = host_cycle_set,
    .cycle_get = host_cycle_get,
    .cycle_annotate = host_cycle_annotate,
    .waiting_pod_count = host_waiting_pod_count,
    .waiting_pod_at = host_waiting_pod_at,
    .waiting_pod_get = host_waiting_pod_get,
    .waiting_pod_pod = host_waiting_pod_pod,
    .waiting_pod_node = host_waiting_pod_node,
    .waiting_pod_allow = host_waiting_pod_allow,
    .waiting_pod_reject = host_waiting_pod_reject,
    .bind = host_bind,
    .now_ms = host_now_ms,
    .cycle_group = host_cycle_group,
    .pod_host_port_count = host_pod_host_port_count,
    .pod_host_port_at = host_pod_host_port_at,
    .pod_affinity_node_names = host_pod_affinity_node_names,
    .pod_node_constraints = host_pod_node_constraints,
    .cycle_restrict_nodes = host_cycle_restrict_nodes,
    .pod_volume_count = host_pod_volume_count,
    .pod_constraints_json = host_pod_constraints_json,
    .pod_label_count = host_pod_label_count,
    .pod_label_at = host_pod_label_at,
    .pod_volume_at = host_pod_volume_at,
    .cycle_write_object = host_cycle_write_object,
    .pod_preempt_never = host_pod_preempt_never,
    .pod_nominated_node_name = host_pod_nominated_node_name,
    .pod_start_ms = host_pod_start_ms,
    .pod_terminating = host_pod_terminating,
    .node_pod_at = host_node_pod_at,
    .cycle_node_status = host_cycle_node_status,
    .filter_what_if = host_filter_what_if,
    .preempt = host_preempt,
    .pod_container_restartable = host_pod_container_restartable,
    .node_nonzero_requested = host_node_nonzero_requested,
    /* added in 1.2: capacity queues */
    .object_status = host_object_status,
    .preempt_more = host_preempt_more,
    .logv = host_logv,
    .cycle_delete = host_cycle_delete,
    .node_id = host_node_id,
    .cycle_node_count = host_cycle_node_count,
    .cycle_node_at = host_cycle_node_at,
    .cycle_waiting_pod_count = host_cycle_waiting_pod_count,
    .cycle_now_ms = host_cycle_now_ms,
    /* the runtime's own args code: the tests read args as a plugin will in the scheduler */
    .args_parse = plugin_args_parse,
    .args_int = plugin_args_int,
    .args_string = plugin_args_string,
    .args_bool = plugin_args_bool,
    .args_quantity = plugin_args_quantity,
    .args_finish = plugin_args_finish,
    .filter_delta_pod = host_filter_delta_pod,
    .pod_controller = host_pod_controller,
    .node_usage = host_node_usage,
};

const kc_host_api *fake_host_api(void)
{
    return &api;
}

void fake_host_reset(void)
{
    memset(&fake_host, 0, sizeof(fake_host));
    resources_reset();
}

void fake_host_release(void)
{
    resources_release();
}

/* Object helpers ----------------------------------------------------------------------- */

void fake_pod_init(kc_pod *pod, const char *namespace_name, const char *name)
{
    memset(pod, 0, sizeof(*pod));
    pod->namespace_name = namespace_name;
    pod->name = name;
    pod->uid = name;
    pod->scheduler_name = "kcycle";
    pod->affinity_node_name_count = -1;
}

void fake_pod_set_request(kc_pod *pod, const char *resource, int64_t value)
{
    kc_resource id = intern(resource);
    if (id >= 0)
        pod->request[id] = value;
}

void fake_pod_add_host_port(kc_pod *pod, const char *host_ip, const char *protocol, int32_t port)
{
    if (pod->host_port_count == FAKE_MAX_HOST_PORTS)
        return;
    pod->host_ports[pod->host_port_count++] = (kc_host_port){
        .struct_size = sizeof(kc_host_port),
        .host_port = port,
        .container_port = port,
        .protocol = protocol,
        .host_ip = host_ip,
    };
}

void fake_node_init(kc_node *node, const char *name)
{
    memset(node, 0, sizeof(*node));
    node->name = name;
}

void fake_node_set_allocatable(kc_node *node, const char *resource, int64_t value)
{
    kc_resource id = intern(resource);
    if (id >= 0)
        node->allocatable[id] = value;
}

void fake_node_set_requested(kc_node *node, const char *resource, int64_t value)
{
    kc_resource id = intern(resource);
    if (id >= 0)
        node->requested[id] = value;
}

void fake_host_add_node(kc_node *node)
{
    if (fake_host.node_count == FAKE_MAX_NODES)
        return;
    node->index = fake_host.node_count;
    /* ids are never reused: they keep counting across fake_host_reset */
    static uint64_t last_id;
    if (node->id == 0)
        node->id = ++last_id;
    fake_host.nodes[fake_host.node_count++] = node;
}

void fake_node_add_pod(kc_node *node, const kc_pod *pod)
{
    if (node->pod_list_count == FAKE_MAX_NODE_PODS)
        return;
    node->pods[node->pod_list_count++] = pod;
    node->pod_count++;
    for (int r = 0; r < KC_RESOURCE_MAX; r++)
        node->requested[r] += pod->request[r];
    if (pod->request[KC_RESOURCE_CPU] == 0)
        node->nonzero_extra[KC_RESOURCE_CPU] += 100;
    if (pod->request[KC_RESOURCE_MEMORY] == 0)
        node->nonzero_extra[KC_RESOURCE_MEMORY] += 200LL * 1024 * 1024;
}

kc_waiting_pod *fake_host_add_waiting(const kc_pod *pod, const char *node_name)
{
    if (fake_host.waiting_count == FAKE_MAX_WAITING)
        return NULL;
    kc_waiting_pod *waiting = &fake_host.waiting[fake_host.waiting_count++];
    memset(waiting, 0, sizeof(*waiting));
    waiting->pod = pod;
    waiting->node_name = node_name;
    return waiting;
}

void fake_cycle_init(kc_cycle *cycle)
{
    memset(cycle, 0, sizeof(*cycle));
}

void fake_cycle_clear(kc_cycle *cycle)
{
    for (uint32_t i = 0; i < cycle->entry_count; i++) {
        if (cycle->entries[i].free_fn != NULL)
            cycle->entries[i].free_fn(cycle->entries[i].data);
        free(cycle->entries[i].key);
    }
    for (uint32_t i = 0; i < cycle->reason_count; i++)
        free(cycle->reasons[i]);
    for (uint32_t i = 0; i < cycle->annotation_count; i++) {
        free((char *)cycle->annotations[i].key);
        free((char *)cycle->annotations[i].value);
    }
    for (uint32_t i = 0; i < cycle->write_count; i++) {
        free(cycle->writes[i].kind);
        free(cycle->writes[i].namespace_name);
        free(cycle->writes[i].name);
        free(cycle->writes[i].patch);
    }
    fake_cycle_init(cycle);
}

uint32_t fake_cycle_reason_count(const kc_cycle *cycle, const char *reason)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < cycle->reason_count; i++)
        count += strcmp(cycle->reasons[i], reason) == 0;
    return count;
}

static void room_left(uint32_t used, uint32_t room, const char *what)
{
    if (used >= room) {
        fprintf(stderr, "fake host: no room for another %s (%u)\n", what, room);
        abort();
    }
}

void fake_node_add_label(kc_node *node, const char *key, const char *value)
{
    room_left(node->label_count, FAKE_MAX_KV, "node label");
    node->labels[node->label_count++] = (struct fake_kv){key, value};
}

void fake_node_add_taint(kc_node *node, const char *key, const char *value, kc_taint_effect effect)
{
    room_left(node->taint_count, FAKE_MAX_TAINTS, "taint");
    node->taints[node->taint_count++] = (kc_taint){
        .struct_size = sizeof(kc_taint), .effect = effect, .key = key,
        .value = value != NULL ? value : ""};
}

void fake_pod_add_node_selector(kc_pod *pod, const char *key, const char *value)
{
    room_left(pod->node_selector_count, FAKE_MAX_KV, "nodeSelector pair");
    pod->node_selector[pod->node_selector_count++] = (struct fake_kv){key, value};
}

void fake_pod_add_toleration(kc_pod *pod, struct fake_toleration toleration)
{
    room_left(pod->toleration_count, FAKE_MAX_TOLERATIONS, "toleration");
    pod->tolerations[pod->toleration_count++] = toleration;
}
