/* What a simulation prints: the placement table, the summary and the JSON report. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model.h"
#include "resource_table.h"
#include "simulator.h"
#include "sim_numa.h"
#include "sim_gpu.h"
#include "sim_spread.h"

struct reason_total {
    const char *text;
    uint32_t count;
};

/* A quantity as Kubernetes writes it: cpu in cores or millicores, the rest in units. */
static void format_quantity(kc_resource id, int64_t value, char *buf, size_t size)
{
    if (id == KC_RESOURCE_CPU && value % 1000 != 0)
        snprintf(buf, size, "%" PRId64 "m", value);
    else if (id == KC_RESOURCE_CPU)
        snprintf(buf, size, "%" PRId64, value / 1000);
    else
        snprintf(buf, size, "%" PRId64, value);
}

/* A pod parked at Permit: a gang member waiting for its group, or a plugin's Wait. Found by its
 * scheduler entry among the waiting cycles (few at a time), only for a pod without a node. */
static const struct kc_waiting_pod *waiting_at_permit(const struct scheduler *s, const char *uid)
{
    if (s->waiting_count == 0)
        return NULL;
    const struct sched_pod *sp = strmap_get(&s->pods, uid);
    for (uint32_t i = 0; sp != NULL && i < s->waiting_count; i++)
        if (s->waiting[i]->cycle != NULL && s->waiting[i]->cycle->sp == sp)
            return s->waiting[i];
    return NULL;
}

const char *report_record_reason(const struct simulator *sim, const struct sim_record *r)
{
    const char *node = NULL, *reason = NULL;
    if (r->node != NULL)
        return NULL;
    if (scheduler_pod_status(&sim->sched, r->uid, &node, &reason) < 0)
        return "the pod is no longer known to the scheduler";
    /* the last refusal stays the pod's reason while it tries again (a run that ends during
     * its next wait at Permit still says why it was refused); a pod refused never yet but
     * waiting says where it waits */
    if (reason != NULL)
        return reason;
    const struct kc_waiting_pod *w = waiting_at_permit(&sim->sched, r->uid);
    if (w != NULL)
        return w->group_hold || w->wait_plugin == NULL ? "waiting at Permit for its pod group"
                                                       : "waiting at Permit for a plugin";
    return "not attempted yet";
}

void report_print_table(const struct simulator *sim, FILE *out)
{
    int ns_width = 9, name_width = 3, node_width = 4;
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        int w = (int)strlen(r->namespace);
        ns_width = w > ns_width ? w : ns_width;
        w = (int)strlen(r->name);
        name_width = w > name_width ? w : name_width;
        w = r->node != NULL ? (int)strlen(r->node) : 6;
        node_width = w > node_width ? w : node_width;
    }
    fprintf(out, "%-*s  %-*s  %-*s  %s\n", ns_width, "NAMESPACE", name_width, "POD", node_width,
            "NODE", "REASON");
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        const char *reason = report_record_reason(sim, r);
        fprintf(out, "%-*s  %-*s  %-*s  %s\n", ns_width, r->namespace, name_width, r->name,
                node_width, r->node != NULL ? r->node : "<none>",
                r->preempted      ? "preempted"
                : r->node_removed ? "deleted with its node"
                : reason != NULL  ? reason
                                  : "");
    }
    if (sim->eviction_count > 0)
        fprintf(out, "\nPREEMPTED (victim, node, preemptor, simulated time)\n");
    for (uint32_t i = 0; i < sim->eviction_count; i++) {
        const struct sim_eviction *e = &sim->evictions[i];
        fprintf(out, "%s/%s  %s  %s/%s  %.3fs\n", e->victim_namespace, e->victim_name, e->node,
                e->preemptor_namespace, e->preemptor_name, (double)e->at_ms / 1000.0);
    }
}

/* Distinct unschedulable reasons with their pod counts, most frequent first. */
static uint32_t collect_reasons(const struct simulator *sim, struct reason_total *out, uint32_t max)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const char *reason = report_record_reason(sim, &sim->records[i]);
        if (reason == NULL)
            continue;
        uint32_t j = 0;
        while (j < count && strcmp(out[j].text, reason) != 0)
            j++;
        if (j == count) {
            if (count == max)
                continue;
            out[count].text = reason;
            out[count++].count = 0;
        }
        out[j].count++;
    }
    for (uint32_t i = 1; i < count; i++) /* few distinct reasons: insertion sort */
        for (uint32_t j = i; j > 0 && out[j].count > out[j - 1].count; j--) {
            struct reason_total t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return count;
}

static double wall_seconds(const struct simulator *sim)
{
    return (double)(sim->wall_end_us - sim->wall_start_us) / 1e6;
}

static double utilisation(const struct simulator *sim, kc_resource id)
{
    int64_t alloc = 0, req = 0;
    for (uint32_t i = 0; i < sim->sched.cache.node_count; i++) {
        const struct cache_node *cn = &sim->sched.cache.nodes[i];
        alloc += cn->amount[id].allocatable;
        req += id == KC_RESOURCE_PODS ? cn->pod_count : cn->amount[id].requested;
    }
    return alloc > 0 ? 100.0 * (double)req / (double)alloc : 0.0;
}

void report_print_summary(const struct simulator *sim, FILE *out)
{
    uint32_t pending = sim->record_count - (uint32_t)sim->bound;
    double seconds = wall_seconds(sim);
    const struct scheduler_stats *st = &sim->sched.stats;
    fprintf(out, "\nSummary: %u pods on %u nodes: %llu scheduled, %u unschedulable\n",
            sim->record_count, sim->sched.cache.node_count, (unsigned long long)sim->bound,
            pending);
    struct reason_total reasons[32];
    uint32_t count = collect_reasons(sim, reasons, 32);
    if (count > 0)
        fprintf(out, "  unschedulable pods by reason:\n");
    for (uint32_t i = 0; i < count; i++)
        fprintf(out, "    %5u  %s\n", reasons[i].count, reasons[i].text);
    fprintf(out, "  requested/allocatable over all nodes: cpu %.1f%%, memory %.1f%%, pods %.1f%%\n",
            utilisation(sim, KC_RESOURCE_CPU), utilisation(sim, KC_RESOURCE_MEMORY),
            utilisation(sim, KC_RESOURCE_PODS));
    fprintf(out,
            "  attempts %llu (unschedulable %llu, errors %llu, permit waits %llu, "
            "permit timeouts %llu)\n",
            (unsigned long long)st->attempts, (unsigned long long)st->unschedulable_attempts,
            (unsigned long long)st->error_attempts, (unsigned long long)st->permit_waits,
            (unsigned long long)st->permit_timeouts);
    const struct group_table *groups = &sim->sched.groups;
    if (sim->group_count > 0)
        fprintf(out,
                "  pod groups: %u (group cycles %llu: %llu admitted, %llu rolled back; %llu "
                "timeouts)\n",
                sim->group_count, (unsigned long long)groups->cycles,
                (unsigned long long)groups->admitted, (unsigned long long)groups->rollbacks,
                (unsigned long long)groups->timeouts);
    for (uint32_t i = 0; i < sim->group_count; i++) {
        const struct sim_group_record *g = &sim->groups[i];
        fprintf(out, "    %s/%s: %s, %u scheduled, %u running%s%s\n", g->namespace_name, g->name,
                g->phase, g->scheduled, g->running, g->message != NULL ? "; " : "",
                g->message != NULL ? g->message : "");
    }
    const struct remote *r = &sim->sched.remote;
    for (uint32_t i = 0; i < r->host_count; i++) {
        const struct remote_host *h = r->hosts[i];
        fprintf(out, "  plugin host %s: %s, %u restarts, %llu evaluation round trips%s%s\n",
                h->name,
                h->state == REMOTE_UP       ? "up"
                : h->state == REMOTE_BROKEN ? "circuit-broken"
                                            : "down",
                h->restarts, (unsigned long long)h->evaluate_round_trips,
                h->last_error != NULL ? "; last error: " : "",
                h->last_error != NULL ? h->last_error : "");
    }
    const struct scheduler *s = &sim->sched;
    if (s->switches > 0 || s->reload_failures > 0) {
        fprintf(out,
                "  plugin generations: %llu switches, %llu reloads refused, %llu generations "
                "closed, %u still draining\n",
                (unsigned long long)s->switches, (unsigned long long)s->reload_failures,
                (unsigned long long)s->generations_closed, s->retiring_count);
        for (uint32_t i = 0; i < sim->generation_count; i++) {
            const struct sim_generation *g = &sim->generations[i];
            fprintf(out, "    generation %llu from %.3f s: %llu pods bound;",
                    (unsigned long long)g->generation, (double)g->active_wall_ms / 1000.0,
                    (unsigned long long)g->pods);
            for (uint32_t k = 0; k < g->plugin_count; k++)
                fprintf(out, " %s %s", g->names[k], g->versions[k]);
            fprintf(out, "\n");
        }
    }
    sim_numa_print(sim, out);
    sim_gpu_print(sim, out);
    sim_spread_print(sim, out);
    sim_status_print(sim, out);
    fprintf(out, "  simulated time %.3f s; wall time %.3f s; %.0f pods/s\n",
            (double)sim->now_ms / 1000.0, seconds,
            seconds > 0 ? (double)sim->bound / seconds : 0.0);
}

static json_t *resources_json(const int64_t *values)
{
    json_t *obj = json_object();
    uint32_t count = resource_count();
    for (uint32_t id = 0; obj != NULL && id < count; id++) {
        if (values[id] == 0 && id > KC_RESOURCE_PODS)
            continue;
        char buf[32];
        format_quantity((kc_resource)id, values[id], buf, sizeof(buf));
        json_object_set_new(obj, resource_name((kc_resource)id), json_string(buf));
    }
    return obj;
}

/* {"plugin": "version", ...} of a generation. */
static json_t *versions_json(const struct sim_generation *g)
{
    json_t *versions = json_object();
    for (uint32_t k = 0; versions != NULL && k < g->plugin_count; k++)
        json_object_set_new(versions, g->names[k], json_string(g->versions[k]));
    return versions;
}

/* gpushare's kcycle.io/gpu-assignment as an object, so a reader needs no second parse; the
 * text itself when it is not JSON (the annotation is what the binder saw, whatever it is). */
static json_t *gpu_assignment_json(const char *text)
{
    json_t *decision = json_loads(text, 0, NULL);
    return decision != NULL ? decision : json_string(text);
}

static json_t *pods_json(const struct simulator *sim)
{
    json_t *pods = json_array();
    for (uint32_t i = 0; pods != NULL && i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        const char *reason = report_record_reason(sim, r);
        json_t *pod = json_pack("{s:s, s:s, s:o, s:o}", "namespace", r->namespace, "name", r->name,
                                "node", r->node != NULL ? json_string(r->node) : json_null(),
                                "reason", reason != NULL ? json_string(reason) : json_null());
        if (pod != NULL && r->generation_index > 0) {
            /* which plugins served it: its generation and their versions */
            const struct sim_generation *g = &sim->generations[r->generation_index - 1];
            json_object_set_new(pod, "generation", json_integer((json_int_t)g->generation));
            json_object_set_new(pod, "plugin_versions", versions_json(g));
            json_object_set_new(pod, "bound_wall_ms", json_integer((json_int_t)r->bound_wall_ms));
        }
        if (pod != NULL && r->bind_order > 0) {
            json_object_set_new(pod, "bind_order", json_integer((json_int_t)r->bind_order));
            json_object_set_new(pod, "score", json_integer((json_int_t)r->score));
            json_object_set_new(pod, "bound_ms", json_integer((json_int_t)r->bound_ms));
        }
        if (pod != NULL && r->numa_zones != NULL)
            json_object_set_new(pod, "numa_zones", json_string(r->numa_zones));
        if (pod != NULL && r->gpu_assignment != NULL)
            json_object_set_new(pod, "gpu_assignment", gpu_assignment_json(r->gpu_assignment));
        if (pod != NULL && r->nominated != NULL)
            json_object_set_new(pod, "nominated", json_string(r->nominated));
        if (pod != NULL && r->preempted)
            json_object_set_new(pod, "preempted", json_true());
        if (pod != NULL && r->node_removed)
            json_object_set_new(pod, "removed_with_node_ms", json_integer(r->removed_ms));
        json_array_append_new(pods, pod);
    }
    return pods;
}

static json_t *generations_json(const struct simulator *sim)
{
    json_t *generations = json_array();
    for (uint32_t i = 0; generations != NULL && i < sim->generation_count; i++) {
        const struct sim_generation *g = &sim->generations[i];
        json_array_append_new(
            generations, json_pack("{s:I, s:I, s:I, s:o}", "generation", (json_int_t)g->generation,
                                   "active_wall_ms", (json_int_t)g->active_wall_ms, "pods",
                                   (json_int_t)g->pods, "plugin_versions", versions_json(g)));
    }
    return generations;
}

static json_t *nodes_json(const struct simulator *sim)
{
    json_t *nodes = json_array();
    const struct cache *cache = &sim->sched.cache;
    for (uint32_t i = 0; nodes != NULL && i < cache->node_count; i++) {
        const struct cache_node *cn = &cache->nodes[i];
        int64_t allocatable[KC_RESOURCE_MAX], requested[KC_RESOURCE_MAX];
        for (uint32_t id = 0; id < KC_RESOURCE_MAX; id++) {
            allocatable[id] = cn->amount[id].allocatable;
            requested[id] = cn->amount[id].requested;
        }
        requested[KC_RESOURCE_PODS] = cn->pod_count;
        json_array_append_new(nodes, json_pack("{s:s, s:o, s:o}", "name", cn->node->name,
                                               "allocatable", resources_json(allocatable),
                                               "requested", resources_json(requested)));
    }
    return nodes;
}

static json_t *hosts_json(const struct simulator *sim)
{
    json_t *hosts = json_array();
    const struct remote *r = &sim->sched.remote;
    for (uint32_t i = 0; hosts != NULL && i < r->host_count; i++) {
        const struct remote_host *h = r->hosts[i];
        const char *state = h->state == REMOTE_UP       ? "up"
                            : h->state == REMOTE_BROKEN ? "circuit-broken"
                                                        : "down";
        json_array_append_new(
            hosts, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:o}", "name", h->name, "state",
                             state, "restarts", (json_int_t)h->restarts, "evaluate_round_trips",
                             (json_int_t)h->evaluate_round_trips, "evaluate_group_requests",
                             (json_int_t)h->group_requests, "round_trips",
                             (json_int_t)h->round_trips, "last_error",
                             h->last_error != NULL ? json_string(h->last_error) : json_null()));
    }
    return hosts;
}

/* The PodGroup status the scheduler last reported for each group. */
static json_t *groups_json(const struct simulator *sim)
{
    json_t *groups = json_array();
    for (uint32_t i = 0; groups != NULL && i < sim->group_count; i++) {
        const struct sim_group_record *g = &sim->groups[i];
        json_array_append_new(
            groups,
            json_pack("{s:s, s:s, s:s, s:I, s:I, s:o}", "namespace", g->namespace_name, "name",
                      g->name, "phase", g->phase, "scheduled", (json_int_t)g->scheduled, "running",
                      (json_int_t)g->running, "message",
                      g->message != NULL ? json_string(g->message) : json_null()));
    }
    return groups;
}

/* The storage objects as they stand at the end (claims, volumes, classes), with the writes and
 * provisioning of the run applied. */
static json_t *objects_json(const struct simulator *sim)
{
    static const char *const kinds[] = {"PersistentVolumeClaim", "PersistentVolume",
                                        "StorageClass"};
    json_t *objects = json_array();
    for (uint32_t i = 0; objects != NULL && i < sim->spec.object_count; i++) {
        const struct sim_object *o = &sim->spec.objects[i];
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            json_t *value = strcmp(o->kind, kinds[k]) == 0 ? json_loads(o->json, 0, NULL) : NULL;
            if (value != NULL)
                json_array_append_new(objects, value);
        }
    }
    return objects;
}

/* Every eviction by a preemption, in order. */
static json_t *evictions_json(const struct simulator *sim)
{
    json_t *list = json_array();
    for (uint32_t i = 0; list != NULL && i < sim->eviction_count; i++) {
        const struct sim_eviction *e = &sim->evictions[i];
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "namespace", e->victim_namespace,
                            "name", e->victim_name, "node", e->node, "preemptorNamespace",
                            e->preemptor_namespace, "preemptor", e->preemptor_name, "at_ms",
                            (json_int_t)e->at_ms));
    }
    return list;
}

static json_t *summary_json(const struct simulator *sim)
{
    const struct scheduler_stats *st = &sim->sched.stats;
    double seconds = wall_seconds(sim);
    json_t *reasons = json_object();
    struct reason_total totals[32];
    uint32_t count = collect_reasons(sim, totals, 32);
    for (uint32_t i = 0; i < count; i++)
        json_object_set_new(reasons, totals[i].text, json_integer(totals[i].count));
    return json_pack("{s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:o}",
                     "pods", (json_int_t)sim->record_count, "nodes",
                     (json_int_t)sim->sched.cache.node_count, "scheduled", (json_int_t)sim->bound,
                     "unschedulable", (json_int_t)(sim->record_count - sim->bound), "reasons",
                     reasons, "attempts", (json_int_t)st->attempts, "unschedulable_attempts",
                     (json_int_t)st->unschedulable_attempts, "error_attempts",
                     (json_int_t)st->error_attempts, "permit_waits", (json_int_t)st->permit_waits,
                     "permit_timeouts", (json_int_t)st->permit_timeouts, "simulated_seconds",
                     (double)sim->now_ms / 1000.0, "wall_seconds", seconds, "pods_per_second",
                     seconds > 0 ? (double)sim->bound / seconds : 0.0, "plugin_hosts",
                     hosts_json(sim));
}

int report_write_json(const struct simulator *sim, const char *path, struct kc_error *err)
{
    json_t *summary = summary_json(sim);
    const struct group_table *groups = &sim->sched.groups;
    json_object_set_new(summary, "group_cycles", json_integer((json_int_t)groups->cycles));
    json_object_set_new(summary, "group_rollbacks", json_integer((json_int_t)groups->rollbacks));
    json_object_set_new(summary, "group_timeouts", json_integer((json_int_t)groups->timeouts));
    const struct scheduler *s = &sim->sched;
    json_object_set_new(summary, "plugin_generations", generations_json(sim));
    json_object_set_new(summary, "plugin_switches", json_integer((json_int_t)s->switches));
    json_object_set_new(summary, "plugin_reloads_refused",
                        json_integer((json_int_t)s->reload_failures));
    json_object_set_new(summary, "wall_start_unix_ms",
                        json_integer((json_int_t)sim->wall_start_unix_ms));
    json_object_set_new(summary, "object_writes", json_integer((json_int_t)sim->storage.writes));
    json_object_set_new(summary, "volumes_provisioned",
                        json_integer((json_int_t)sim->storage.provisioned));
    json_object_set_new(summary, "preemptions", json_integer((json_int_t)s->stats.preemptions));
    json_object_set_new(summary, "preemption_victims",
                        json_integer((json_int_t)s->stats.preemption_victims));
    json_t *root = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "pods", pods_json(sim), "nodes",
                             nodes_json(sim), "podGroups", groups_json(sim), "objects",
                             objects_json(sim), "preemptions", evictions_json(sim), "summary",
                             summary);
    json_t *numa = sim_numa_json(sim);
    if (root != NULL && numa != NULL)
        json_object_set_new(root, "numa", numa);
    json_t *gpu = sim_gpu_json(sim);
    if (root != NULL && gpu != NULL)
        json_object_set_new(root, "gpu", gpu);
    json_t *spread = sim_spread_json(sim);
    if (root != NULL && spread != NULL)
        json_object_set_new(root, "topology_spread", spread);
    json_t *status = sim_status_json(sim);
    if (root != NULL && status != NULL)
        json_object_set_new(root, "objectStatus", status);
    if (root == NULL)
        return kc_error_set(err, -ENOMEM, "%s: could not build the report", path);
    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc != 0)
        return kc_error_set(err, -EIO, "%s: could not write the report: %s", path, strerror(errno));
    return 0;
}
