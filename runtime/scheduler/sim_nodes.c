/* Node removals in a simulation (the file's nodeRemovals): at its time a node leaves the
 * cluster, and the pods on it are deleted with it, as kube's pod garbage collector deletes the
 * pods of a deleted node. What the scheduler sees: POD_DELETE for each, then NODE_DELETE. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "simulator.h"

static void remove_node(struct simulator *sim, const char *name)
{
    struct scheduler *s = &sim->sched;
    const struct cache_node *cn = cache_node(&s->cache, name);
    uint32_t count = cn != NULL ? cn->pod_count : 0;
    /* copies: each deletion changes the node's pod list */
    char **uids = calloc(count > 0 ? count : 1, sizeof(*uids));
    if (uids == NULL) {
        log_error("simulation: out of memory removing node %s", name);
        return;
    }
    for (uint32_t i = 0; i < count; i++)
        uids[i] = strdup(cn->pods[i]->uid);
    uint32_t removed = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (uids[i] == NULL || scheduler_pod_delete(s, uids[i]) < 0) {
            free(uids[i]);
            continue;
        }
        removed++;
        uintptr_t slot = (uintptr_t)strmap_get(&sim->record_index, uids[i]);
        if (slot != 0) {
            sim->records[slot - 1].node_removed = true;
            sim->records[slot - 1].removed_ms = sim->now_ms;
        }
        free(uids[i]);
    }
    free(uids);
    if (scheduler_node_delete(s, name) < 0)
        log_error("simulation: node %s to remove is not in the cluster", name);
    else
        log_info("simulation: node %s removed at %.3fs with its %u pods", name,
                 (double)sim->now_ms / 1000.0, removed);
}

void sim_nodes_remove_due(struct simulator *sim)
{
    while (sim->next_removal < sim->spec.node_removal_count &&
           sim->spec.node_removals[sim->next_removal].at_ms <= sim->now_ms)
        remove_node(sim, sim->spec.node_removals[sim->next_removal++].node);
}

int64_t sim_nodes_next_due(const struct simulator *sim)
{
    if (sim->next_removal >= sim->spec.node_removal_count)
        return INT64_MAX;
    return sim->spec.node_removals[sim->next_removal].at_ms;
}
