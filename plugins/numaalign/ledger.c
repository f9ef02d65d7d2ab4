/* The ledger: pods numaalign placed (Reserve) or found bound with kcycle.io/numa-zones, and
 * what each charges to its node's zones until the node's topology report accounts for it. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numaalign.h"

static bool listed(const char *list, const char *key)
{
    size_t length = strlen(key);
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t item = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (item == length && strncmp(p, key, length) == 0)
            return true;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return false;
}

/* Recompute the packed pairs after a report or a charge, and the entry's copy with them. */
void ledger_refresh(struct numaalign *self, struct numa_node *n)
{
    n->hot.owner = n;
    n->hot.packed = n->hot.resource_count * n->hot.zone_count <= NUMA_PACKED_PAIRS;
    for (uint32_t r = 0; n->hot.packed && r < n->hot.resource_count; r++)
        for (uint32_t z = 0; z < n->hot.zone_count; z++) {
            n->hot.pair[r * n->hot.zone_count + z][0] = n->total[r][z];
            n->hot.pair[r * n->hot.zone_count + z][1] = n->available[r][z] - n->charged[r][z];
        }
    if (n->entry > 0 && n->entry <= self->by_index_capacity &&
        self->by_index[n->entry - 1].node == n)
        self->by_index[n->entry - 1].hot = n->hot;
}

static void apply_charges(struct numaalign *self, struct numa_node *n, const struct tracked_pod *t,
                          int sign)
{
    for (uint32_t i = 0; i < t->charge_count; i++) {
        const struct charge *c = &t->charges[i];
        for (uint32_t r = 0; r < n->hot.resource_count; r++)
            if (n->hot.resource[r] == c->resource && c->zone < n->hot.zone_count)
                n->charged[r][c->zone] += sign * c->amount;
    }
    ledger_refresh(self, n);
}

/* A new report: it accounts for the pods it lists (kcycle-topology-agent), or, from an agent
 * that lists none, for pods charged longer ago than the grace period. The others stay charged. */
void ledger_settle(struct numaalign *self, struct numa_node *n, const char *accounted)
{
    int64_t now = kc_now_ms();
    memset(n->charged, 0, sizeof(n->charged));
    for (struct tracked_pod *t = n->pods; t != NULL; t = t->next) {
        if (t->charging)
            t->charging = accounted != NULL ? !listed(accounted, t->key)
                                            : now - t->since_ms < self->unlisted_grace_ms;
        if (t->charging)
            apply_charges(self, n, t, 1);
    }
    ledger_refresh(self, n);
}

static struct tracked_pod *tracked_new(const kc_pod *pod, struct numa_node *n)
{
    struct tracked_pod *t = calloc(1, sizeof(*t));
    const char *ns = kc_pod_namespace(pod), *name = kc_pod_name(pod);
    if (t == NULL || (t->uid = strdup(kc_pod_uid(pod))) == NULL ||
        asprintf(&t->key, "%s/%s", ns != NULL ? ns : "", name != NULL ? name : "") < 0) {
        if (t != NULL)
            free(t->uid);
        free(t);
        return NULL;
    }
    t->node = n;
    t->charging = true;
    t->since_ms = kc_now_ms();
    return t;
}

void ledger_free(struct tracked_pod *t)
{
    free(t->uid);
    free(t->key);
    free(t);
}

/* Remove the pod's charge and forget it. */
void ledger_untrack(struct numaalign *self, const char *uid)
{
    struct tracked_pod *t = table_get(&self->pods, uid);
    if (t == NULL)
        return;
    if (t->charging)
        apply_charges(self, t->node, t, -1);
    for (struct tracked_pod **p = &t->node->pods; *p != NULL; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    table_remove(&self->pods, uid);
    ledger_free(t);
}

int ledger_track(struct numaalign *self, const kc_pod *pod, struct numa_node *n,
                 const struct evaluation *ev)
{
    struct tracked_pod *t = tracked_new(pod, n);
    if (t == NULL || table_put(&self->pods, t) < 0) {
        if (t != NULL)
            ledger_free(t);
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < n->hot.resource_count; r++)
        for (uint32_t z = 0; z < n->hot.zone_count; z++)
            if (ev->charge[r][z] > 0)
                t->charges[t->charge_count++] =
                    (struct charge){n->hot.resource[r], (uint8_t)z, ev->charge[r][z]};
    t->next = n->pods;
    n->pods = t;
    apply_charges(self, n, t, 1);
    return 0;
}

/* A bound pod this plugin has not charged (placed before a restart, or by another replica):
 * charge it to the zones its annotation names until a report accounts for it. */
void ledger_adopt(struct numaalign *self, const kc_pod *pod)
{
    const char *zones = kc_pod_annotation(pod, ZONES_ANNOTATION);
    const char *node_name = kc_pod_node_name(pod);
    if (zones == NULL || node_name == NULL || table_get(&self->pods, kc_pod_uid(pod)) != NULL)
        return;
    struct numa_node *n = table_get(&self->nodes, node_name);
    struct pod_state st = {0};
    if (n == NULL || !n->hot.has_topology || request_read(pod, &st, NULL, 0) <= 0)
        return;
    uint32_t mask = 0;
    for (const char *p = zones; *p != '\0'; p++)
        if (*p >= '0' && *p <= '9' && (p == zones || p[-1] == ',')) {
            int id = atoi(p);
            for (uint32_t z = 0; z < n->hot.zone_count; z++)
                if (n->zone_id[z] == id)
                    mask |= 1u << z;
        }
    struct numa_zones z;
    evaluate_zones(&n->hot, &z);
    struct evaluation ev = {.admitted = true, .preferred = true};
    int64_t amount[NUMA_MAX_RESOURCES];
    evaluate_amounts(&n->hot, &st.pod, amount);
    ev.zones = numa_take(&z, amount, mask, ev.charge);
    ledger_track(self, pod, n, &ev);
}
