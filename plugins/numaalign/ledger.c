/* The ledger: pods numaalign placed (Reserve) or found bound with kcycle.io/numa-zones, and
 * what each charges to its node's zones until the node's topology report accounts for it: by
 * name when the report lists the pods it includes, else once unlistedPodGraceSeconds have
 * passed since the charge. */
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
/* The earliest time a charge on a node without a pod list runs out (0: none pending). */
static void expiry_at(struct numaalign *self, int64_t when)
{
    if (self->next_expiry_ms == 0 || when < self->next_expiry_ms)
        self->next_expiry_ms = when;
}

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
        if (t->charging && accounted == NULL)
            expiry_at(self, t->since_ms + self->unlisted_grace_ms);
    }
    ledger_refresh(self, n);
}

/* A report without a pod list accounts for a pod once the grace period has passed since its
 * charge, whether or not a newer report arrived: an agent that re-publishes an unchanged
 * object produces no event, and the charge must not outlive it. */
static void expire_node(struct numaalign *self, struct numa_node *n, int64_t now)
{
    if (n->accounted != NULL)
        return; /* listed reports settle by name */
    for (struct tracked_pod *t = n->pods; t != NULL; t = t->next) {
        if (!t->charging)
            continue;
        if (now - t->since_ms >= self->unlisted_grace_ms) {
            t->charging = false;
            apply_charges(self, n, t, -1);
        } else {
            expiry_at(self, t->since_ms + self->unlisted_grace_ms);
        }
    }
}

void ledger_expire(struct numaalign *self, struct numa_node *only)
{
    int64_t now = kc_now_ms();
    if (only != NULL) {
        expire_node(self, only, now);
        return;
    }
    if (self->next_expiry_ms == 0 || now < self->next_expiry_ms)
        return; /* nothing due: the common case costs one comparison */
    self->next_expiry_ms = 0;
    for (uint32_t i = 0; i < self->nodes.capacity; i++)
        if (self->nodes.slots[i].entry != NULL)
            expire_node(self, self->nodes.slots[i].entry, now);
}

/* namespace/name, as the agent's accounted list names a pod; NULL when out of memory */
static char *pod_key(const kc_pod *pod)
{
    const char *ns = kc_pod_namespace(pod), *name = kc_pod_name(pod);
    char *key;
    if (asprintf(&key, "%s/%s", ns != NULL ? ns : "", name != NULL ? name : "") < 0)
        return NULL;
    return key;
}

static struct tracked_pod *tracked_new(const char *uid, const char *key, struct numa_node *n)
{
    struct tracked_pod *t = calloc(1, sizeof(*t));
    if (t == NULL || (t->uid = strdup(uid)) == NULL || (t->key = strdup(key)) == NULL) {
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
static void pending_free(struct pending_pod *p)
{
    free(p->uid);
    free(p->key);
    free(p->node);
    free(p->zones);
    free(p);
}

void ledger_free_pending(struct numaalign *self)
{
    for (uint32_t i = 0; i < self->pending.capacity; i++)
        if (self->pending.slots[i].entry != NULL)
            pending_free(self->pending.slots[i].entry);
    free(self->pending.slots);
}

void ledger_untrack(struct numaalign *self, const char *uid)
{
    struct pending_pod *waiting = table_get(&self->pending, uid);
    if (waiting != NULL) {
        table_remove(&self->pending, uid);
        pending_free(waiting);
    }
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

/* Record the pod's charges; they count against the zones while charging. */
static int track(struct numaalign *self, const char *uid, const char *key, struct numa_node *n,
                 const struct evaluation *ev, bool charging)
{
    struct tracked_pod *t = tracked_new(uid, key, n);
    if (t == NULL || table_put(&self->pods, t) < 0) {
        if (t != NULL)
            ledger_free(t);
        return -ENOMEM;
    }
    t->charging = charging;
    for (uint32_t r = 0; r < n->hot.resource_count; r++)
        for (uint32_t z = 0; z < n->hot.zone_count; z++)
            if (ev->charge[r][z] > 0)
                t->charges[t->charge_count++] =
                    (struct charge){n->hot.resource[r], (uint8_t)z, ev->charge[r][z]};
    t->next = n->pods;
    n->pods = t;
    if (charging)
        apply_charges(self, n, t, 1);
    if (charging && n->accounted == NULL)
        expiry_at(self, t->since_ms + self->unlisted_grace_ms);
    return 0;
}

int ledger_track(struct numaalign *self, const kc_pod *pod, struct numa_node *n,
                 const struct evaluation *ev)
{
    char *key = pod_key(pod);
    int rc = key != NULL ? track(self, kc_pod_uid(pod), key, n, ev, true) : -ENOMEM;
    free(key);
    return rc;
}

/* Charge a bound pod to the zones its annotation names, unless the node's last report already
 * lists it: then it is tracked without a charge, so a report that arrived before the pod's
 * event is not counted twice. */
static void adopt(struct numaalign *self, struct numa_node *n, const char *uid, const char *key,
                  const char *zones, const struct unit *unit)
{
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
    evaluate_amounts(&n->hot, unit, amount);
    ev.zones = numa_take(&z, amount, mask, ev.charge);
    bool accounted = n->accounted != NULL && listed(n->accounted, key);
    track(self, uid, key, n, &ev, !accounted);
}

/* A bound pod whose node has no topology yet: kept until its report arrives. */
static void pending_add(struct numaalign *self, const kc_pod *pod, const char *node_name,
                        const char *zones, const struct unit *unit)
{
    if (table_get(&self->pending, kc_pod_uid(pod)) != NULL)
        return;
    struct pending_pod *p = calloc(1, sizeof(*p));
    if (p == NULL || (p->uid = strdup(kc_pod_uid(pod))) == NULL ||
        (p->key = pod_key(pod)) == NULL || (p->node = strdup(node_name)) == NULL ||
        (p->zones = strdup(zones)) == NULL || table_put(&self->pending, p) < 0) {
        if (p != NULL)
            pending_free(p);
        return;
    }
    p->unit = *unit;
}

void ledger_adopt_pending(struct numaalign *self, struct numa_node *n)
{
    if (self->pending.count == 0 || !n->hot.has_topology)
        return;
    for (uint32_t i = 0; i < self->pending.capacity;) {
        struct pending_pod *p = self->pending.slots[i].entry;
        if (p == NULL || strcmp(p->node, n->name) != 0) {
            i++;
            continue;
        }
        adopt(self, n, p->uid, p->key, p->zones, &p->unit);
        table_remove(&self->pending, p->uid); /* may move another entry into slot i */
        pending_free(p);
    }
}

/* A bound pod this plugin has not charged (placed before a restart, or by another replica). */
void ledger_adopt(struct numaalign *self, const kc_pod *pod)
{
    const char *zones = kc_pod_annotation(pod, ZONES_ANNOTATION);
    const char *node_name = kc_pod_node_name(pod);
    if (zones == NULL || node_name == NULL || table_get(&self->pods, kc_pod_uid(pod)) != NULL)
        return;
    struct pod_state st = {0};
    if (request_read(pod, &st, NULL, 0) <= 0)
        return;
    struct numa_node *n = table_get(&self->nodes, node_name);
    if (n == NULL || !n->hot.has_topology) {
        pending_add(self, pod, node_name, zones, &st.pod);
        return;
    }
    char *key = pod_key(pod);
    if (key != NULL)
        adopt(self, n, kc_pod_uid(pod), key, zones, &st.pod);
    free(key);
}
