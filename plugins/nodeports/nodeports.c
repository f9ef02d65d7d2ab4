/* nodeports: kube-scheduler's NodePorts. A pod that asks for host ports (hostPort, with its
 * hostIP and protocol) goes only to nodes where no pod already bound or assumed there holds a
 * conflicting one. The SDK gives no list of a node's pods, so the plugin keeps its own ledger of
 * the host ports in use per node, fed by cluster events (pods on nodes, assume, forget). */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "nodeports"
#define STATE_KEY "nodeports/prefilter"
#define REASON "node(s) didn't have free ports for the requested pod ports"
#define BIND_ALL "0.0.0.0"
#define ENOMEM_CODE (-12)
#define MIN_BUCKETS 64u

/* One host port, its strings owned (ledger) or borrowed from the pod (cycle state). */
struct port {
    int32_t port;
    char *protocol;
    char *host_ip;
};

/* A link of a chained string-keyed table; the key is owned by the struct that embeds it. */
struct link {
    const char *key;
    struct link *next;
};

/* Bucket counts are powers of two and double at load 1. */
struct table {
    struct link **buckets;
    uint32_t bucket_count, count;
};

/* A pod holding host ports on a node: bound there, or assumed by this scheduler. Kept in the
 * ledger's by_uid table (link first: a link is its holder) and in its node's list. */
struct holder {
    struct link by_uid; /* key: uid */
    char *uid;
    char *node;
    struct port *ports;
    uint32_t port_count;
    struct holder *next_on_node;
};

/* The holders of one node, a list through next_on_node. */
struct node_ports {
    struct link by_name; /* key: name */
    char *name;
    struct holder *holders;
};

struct ledger {
    struct table by_uid;  /* struct holder */
    struct table by_node; /* struct node_ports */
};

/* on_event writes the ledger on the scheduler's thread, between cycles; Filter reads it, maybe
 * on several threads. The lock makes that safe even if a host ever overlaps the two. */
struct plugin {
    pthread_rwlock_t lock;
    struct ledger ledger;
};

/* What Filter needs of the pod, read once in PreFilter (strings borrowed from the pod, which
 * outlives the cycle). */
struct wanted {
    const char *uid;
    uint32_t count;
    struct port ports[];
};

/* Strings and tables ------------------------------------------------------------------- */

/* strdup is POSIX, not C11: plugins build with a plain C11 compiler. */
static char *copy_string(const char *text)
{
    size_t size = strlen(text != NULL ? text : "") + 1;
    char *copy = malloc(size);
    if (copy != NULL)
        memcpy(copy, text != NULL ? text : "", size);
    return copy;
}

/* FNV-1a: short keys (uids, node names), no need for more. */
static uint32_t hash(const char *key)
{
    uint32_t h = 2166136261u;
    for (; *key != '\0'; key++)
        h = (h ^ (uint8_t)*key) * 16777619u;
    return h;
}

/* Where key's link is, or the empty slot at the end of its chain; NULL for an empty table. */
static struct link **table_slot(const struct table *t, const char *key)
{
    if (t->bucket_count == 0)
        return NULL;
    struct link **slot = &t->buckets[hash(key) & (t->bucket_count - 1)];
    while (*slot != NULL && strcmp((*slot)->key, key) != 0)
        slot = &(*slot)->next;
    return slot;
}

static struct link *table_find(const struct table *t, const char *key)
{
    struct link **slot = table_slot(t, key);
    return slot != NULL ? *slot : NULL;
}

/* Adds a link whose key the table does not hold yet. 0, or ENOMEM_CODE. */
static int table_add(struct table *t, struct link *link)
{
    if (t->count >= t->bucket_count) {
        uint32_t count = t->bucket_count == 0 ? MIN_BUCKETS : t->bucket_count * 2;
        struct link **buckets = calloc(count, sizeof(*buckets));
        if (buckets == NULL)
            return ENOMEM_CODE;
        for (uint32_t b = 0; b < t->bucket_count; b++) {
            for (struct link *l = t->buckets[b], *next; l != NULL; l = next) {
                next = l->next;
                uint32_t at = hash(l->key) & (count - 1);
                l->next = buckets[at];
                buckets[at] = l;
            }
        }
        free(t->buckets);
        t->buckets = buckets;
        t->bucket_count = count;
    }
    struct link **slot = &t->buckets[hash(link->key) & (t->bucket_count - 1)];
    link->next = *slot;
    *slot = link;
    t->count++;
    return 0;
}

/* Unlinks and returns key's link, NULL when absent. */
static struct link *table_take(struct table *t, const char *key)
{
    struct link **slot = table_slot(t, key);
    struct link *link = slot != NULL ? *slot : NULL;
    if (link != NULL) {
        *slot = link->next;
        t->count--;
    }
    return link;
}

/* Calls free_fn on every link, then frees the buckets. */
static void table_free(struct table *t, void (*free_fn)(struct link *))
{
    for (uint32_t b = 0; b < t->bucket_count; b++)
        for (struct link *l = t->buckets[b], *next; l != NULL; l = next) {
            next = l->next;
            free_fn(l);
        }
    free(t->buckets);
    memset(t, 0, sizeof(*t));
}

static struct node_ports *node_find(const struct ledger *l, const char *name)
{
    return (struct node_ports *)table_find(&l->by_node, name);
}

/* The node's entry, created when absent; NULL when out of memory. */
static struct node_ports *node_get(struct ledger *l, const char *name)
{
    struct node_ports *n = node_find(l, name);
    if (n != NULL)
        return n;
    n = calloc(1, sizeof(*n));
    if (n == NULL || (n->name = copy_string(name)) == NULL) {
        free(n);
        return NULL;
    }
    n->by_name.key = n->name;
    if (table_add(&l->by_node, &n->by_name) != 0) {
        free(n->name);
        free(n);
        return NULL;
    }
    return n;
}

static void node_free(struct link *link)
{
    struct node_ports *n = (struct node_ports *)link;
    free(n->name);
    free(n);
}

static void holder_free(struct holder *h)
{
    for (uint32_t i = 0; i < h->port_count; i++) {
        free(h->ports[i].protocol);
        free(h->ports[i].host_ip);
    }
    free(h->ports);
    free(h->uid);
    free(h->node);
    free(h);
}

static void holder_link_free(struct link *link)
{
    holder_free((struct holder *)link);
}

/* The ledger ---------------------------------------------------------------------------- */

/* Drops what the ledger holds for uid (nothing when it holds nothing). A node's entry stays
 * once created: nodes are few and come back with their name. */
static void ledger_remove(struct ledger *l, const char *uid)
{
    struct holder *h = (struct holder *)table_take(&l->by_uid, uid);
    if (h == NULL)
        return;
    struct node_ports *n = node_find(l, h->node);
    for (struct holder **on = n != NULL ? &n->holders : NULL; on != NULL && *on != NULL;
         on = &(*on)->next_on_node) {
        if (*on == h) {
            *on = h->next_on_node;
            break;
        }
    }
    holder_free(h);
}

static struct holder *holder_new(const kc_pod *pod, const char *node, uint32_t count)
{
    struct holder *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->uid = copy_string(kc_pod_uid(pod));
    h->node = copy_string(node);
    h->ports = calloc(count, sizeof(*h->ports));
    if (h->uid == NULL || h->node == NULL || h->ports == NULL) {
        holder_free(h);
        return NULL;
    }
    h->by_uid.key = h->uid;
    for (uint32_t i = 0; i < count; i++) {
        kc_host_port hp = {.struct_size = sizeof(hp)};
        if (kc_pod_host_port_at(pod, i, &hp) != 0)
            break;
        struct port *p = &h->ports[h->port_count];
        p->port = hp.host_port;
        p->protocol = copy_string(hp.protocol != NULL ? hp.protocol : "TCP");
        p->host_ip = copy_string(hp.host_ip != NULL ? hp.host_ip : BIND_ALL);
        h->port_count++;
        if (p->protocol == NULL || p->host_ip == NULL) {
            holder_free(h);
            return NULL;
        }
    }
    return h;
}

/* The pod holds its host ports on node (replacing what the ledger had for it). */
static int ledger_put(struct ledger *l, const kc_pod *pod, const char *node)
{
    const char *uid = kc_pod_uid(pod);
    if (uid == NULL)
        return 0;
    ledger_remove(l, uid);
    uint32_t count = kc_pod_host_port_count(pod);
    if (count == 0 || node == NULL)
        return 0;
    struct node_ports *n = node_get(l, node);
    struct holder *h = n != NULL ? holder_new(pod, node, count) : NULL;
    if (h == NULL)
        return ENOMEM_CODE;
    if (table_add(&l->by_uid, &h->by_uid) != 0) {
        holder_free(h);
        return ENOMEM_CODE;
    }
    h->next_on_node = n->holders;
    n->holders = h;
    return 0;
}

static void ledger_free(struct ledger *l)
{
    table_free(&l->by_uid, holder_link_free);
    table_free(&l->by_node, node_free);
}

/* kube's HostPortInfo.CheckConflict: same protocol and port, and either side binding every
 * address (0.0.0.0) or both the same address. */
static bool conflicts(const struct port *want, const struct port *have)
{
    if (want->port != have->port || strcmp(want->protocol, have->protocol) != 0)
        return false;
    return strcmp(want->host_ip, BIND_ALL) == 0 || strcmp(have->host_ip, BIND_ALL) == 0 ||
           strcmp(want->host_ip, have->host_ip) == 0;
}

static bool node_conflicts(const struct ledger *l, const char *node, const struct wanted *w)
{
    const struct node_ports *n = node_find(l, node);
    for (const struct holder *h = n != NULL ? n->holders : NULL; h != NULL; h = h->next_on_node) {
        if (w->uid != NULL && strcmp(h->uid, w->uid) == 0)
            continue; /* the pod's own earlier reservation is not another pod */
        for (uint32_t i = 0; i < h->port_count; i++)
            for (uint32_t j = 0; j < w->count; j++)
                if (conflicts(&w->ports[j], &h->ports[i]))
                    return true;
    }
    return false;
}

/* Lifecycle ----------------------------------------------------------------------------- */

static void nodeports_fini(void *self)
{
    struct plugin *plugin = self;
    if (plugin == NULL)
        return;
    ledger_free(&plugin->ledger);
    pthread_rwlock_destroy(&plugin->lock);
    free(plugin);
}

static int nodeports_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* NodePorts has no args */
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    /* without the 1.2 accessors every pod would look portless and pass: refuse to run */
    if (!KC_HOST_HAS(host, pod_host_port_at)) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "this host has no host-port accessors (SDK 1.2 needed)");
        return -95; /* EOPNOTSUPP */
    }
    struct plugin *plugin = calloc(1, sizeof(*plugin));
    if (plugin == NULL)
        return ENOMEM_CODE;
    if (pthread_rwlock_init(&plugin->lock, NULL) != 0) {
        free(plugin);
        return ENOMEM_CODE;
    }
    *self = plugin;
    return 0;
}

/* The node a pod event is about: the event's node, else the pod's own (a pod can arrive before
 * its node). */
static const char *event_node(const kc_event *event)
{
    if (event->node != NULL)
        return kc_node_name(event->node);
    return kc_pod_node_name(event->pod);
}

static void nodeports_on_event(void *self, const kc_event *event)
{
    struct plugin *plugin = self;
    if (event->pod == NULL)
        return;
    int rc = 0;
    pthread_rwlock_wrlock(&plugin->lock);
    switch (event->type) {
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE:
        /* a pending pod holds nothing; an update of an assumed pending pod keeps its claim */
        if (kc_pod_node_name(event->pod) != NULL)
            rc = ledger_put(&plugin->ledger, event->pod, event_node(event));
        break;
    case KC_EVENT_POD_ASSUME:
        rc = ledger_put(&plugin->ledger, event->pod, event_node(event));
        break;
    case KC_EVENT_POD_DELETE:
    case KC_EVENT_POD_FORGET: ledger_remove(&plugin->ledger, kc_pod_uid(event->pod)); break;
    default: break;
    }
    pthread_rwlock_unlock(&plugin->lock);
    if (rc != 0)
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory recording a pod's host ports");
}

/* kube registers NodePorts for pod deletions (ports freed) and node additions. */
static uint32_t nodeports_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET);
}

/* PreFilter and Filter ------------------------------------------------------------------ */

/* The pod's host ports into the cycle; KC_SKIP for a pod without any (Filter never runs), as
 * kube's PreFilter returns Skip. */
static kc_status nodeports_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)self;
    uint32_t count = kc_pod_host_port_count(pod);
    if (count == 0)
        return KC_SKIP;
    struct wanted *w = calloc(1, sizeof(*w) + count * sizeof(w->ports[0]));
    if (w == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    w->uid = kc_pod_uid(pod);
    for (uint32_t i = 0; i < count; i++) {
        kc_host_port hp = {.struct_size = sizeof(hp)};
        if (kc_pod_host_port_at(pod, i, &hp) != 0)
            break;
        w->ports[w->count].port = hp.host_port;
        w->ports[w->count].protocol = (char *)(hp.protocol != NULL ? hp.protocol : "TCP");
        w->ports[w->count].host_ip = (char *)(hp.host_ip != NULL ? hp.host_ip : BIND_ALL);
        w->count++;
    }
    if (kc_cycle_set(cycle, STATE_KEY, w, free) != 0) {
        free(w);
        kc_cycle_reject(cycle, PLUGIN_NAME ": cannot store cycle state");
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

static kc_status nodeports_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                  const kc_node *node)
{
    (void)pod;
    struct plugin *plugin = self;
    const struct wanted *w = kc_cycle_get(cycle, STATE_KEY);
    if (w == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": Filter ran without PreFilter state");
        return KC_ERROR;
    }
    pthread_rwlock_rdlock(&plugin->lock);
    bool conflict = node_conflicts(&plugin->ledger, kc_node_name(node), w);
    pthread_rwlock_unlock(&plugin->lock);
    if (!conflict)
        return KC_SUCCESS;
    kc_cycle_reject(cycle, REASON);
    return KC_UNSCHEDULABLE;
}

static const kc_plugin_ops nodeports_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = nodeports_init,
    .fini = nodeports_fini,
    .requeue_events = nodeports_requeue_events,
    .pre_filter = nodeports_pre_filter,
    .filter = nodeports_filter,
    .on_event = nodeports_on_event,
};

static const kc_plugin_descriptor nodeports_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &nodeports_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &nodeports_descriptor;
}
