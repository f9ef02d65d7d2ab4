/* The soak test: one scheduler, fed through bridge_client_feed as the bridge would feed it,
 * schedules a stream of pods into a simulated cluster that keeps changing: pods created and
 * deleted, nodes added, drained (cordoned, their pods evicted and replaced) and removed,
 * plugin hosts killed with SIGKILL, a plugin file replaced (hot reload) and the configuration
 * reloaded (SIGHUP). This program plays the API server: it answers every binding, shows the
 * bound pod back as the watch would, and checks after every step that
 *   - no node is over-committed: each binding is checked against what the node has left, and
 *     no pod is bound twice, bound after its delete, or to a cordoned or removed node;
 *   - the scheduler's books match the cluster: per node, what its cache counts (assigned and
 *     assumed pods) is what this program has bound or is binding there, so no assumed pod
 *     leaked and no deleted pod lingers;
 *   - every pod is bound, being bound, queued in the scheduler or deleted, and at the end bound
 *     or parked with a reason (an Unschedulable condition with a message);
 *   - RSS stays flat after the warm-up (--check-rss: the long run).
 * It prints pods, churn events, host kills, reloads, peak and final RSS, and exits 1 naming
 * the first invariant broken. tests/soak/README.md says how to run it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bridge.pb-c.h"
#include "bridge_client.h"
#include "cache.h"
#include "log.h"
#include "model.h"
#include "proto_convert.h"
#include "queue.h"
#include "remote.h"
#include "resource_table.h"
#include "tree.h"
#include "watch.h"

/* ---- options ---- */

struct options {
    uint32_t pods;         /* pods created in all, replacements of evicted ones included */
    uint32_t nodes;        /* nodes at the start */
    uint32_t live;         /* pods alive at once in the steady state */
    uint32_t batch;        /* pods created per step */
    uint32_t node_every;   /* steps between two node additions */
    uint32_t drain_every;  /* steps between two drains */
    uint32_t kill_every;   /* steps between two host kills */
    uint32_t reload_every; /* steps between two reloads (plugin file and config in turn) */
    uint32_t seed;
    bool check_rss;
    const char *plugin_dir; /* the build's plugins folder (the reloaded plugin is copied) */
    double settle_s;        /* at most this long for the last pods to settle */
    uint32_t step_ms;       /* a step takes at least this long: hosts restart, reloads land */
};

/* ---- the cluster this program plays ---- */

enum soak_pod_state { SOAK_NONE, SOAK_PENDING, SOAK_BINDING, SOAK_BOUND, SOAK_GONE };

struct sim_pod {
    uint8_t state;
    bool parked;   /* an Unschedulable condition with a message since the last change */
    bool transient; /* its reason is a failure the scheduler retries (a host down), not a fit */
    bool big;      /* asks more than any node has: parked for ever */
    int32_t node;  /* binding or bound */
    uint32_t cpu;  /* millicores */
    uint32_t mem;  /* MiB */
    uint32_t live_index;
    uint64_t bind_id;
};

struct sim_node {
    bool alive, cordoned;
    uint32_t generation; /* a node added again under a name gets a new uid */
    uint32_t cordoned_step;
    uint32_t cpu, mem, pods; /* allocatable: millicores, MiB, pod slots */
    uint32_t used_cpu, used_mem, used_pods;
};

struct totals {
    uint64_t created, deleted, bound, parked_reports, bind_refused, nodes_added, drains,
        nodes_removed, evicted_by_drain, host_kills, plugin_reloads_asked, config_reloads_asked,
        steps, messages,
        parked_fit; /* normal-sized pods parked because no node had room: over-commitment */
};

static struct options opt = {
    .pods = 100000,
    .nodes = 64,
    .live = 5200, /* the live pods ask ~115% of the nodes' CPU: some must wait for room */
    .batch = 200,
    .node_every = 25,
    .drain_every = 40,
    .kill_every = 25,
    .reload_every = 50,
    .seed = 1,
    .settle_s = 120,
    .step_ms = 20,
};

static struct sim_pod *pods;
static uint32_t *live; /* indices of the pods not yet deleted */
static uint32_t live_count;
static struct sim_node *nodes;
static uint32_t node_count, node_capacity;
static struct totals total;
static uint64_t rng_state;
static struct bridge_client client;
static char tmp_dir[64];
static char config_path[128], plugin_path[128];

/* Bytes malloc holds in use: in its arenas (all of them, for glibc's mallinfo2) and in chunks
 * of their own mapping. 0 under a sanitizer, whose allocator mallinfo2 does not see. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KCYCLE_SOAK_CLANG_ASAN 1
#endif
#endif

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return n == 0 ? 0 : (uint32_t)((rng_state >> 33) % n);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "soak: FAILED at step %llu: ", (unsigned long long)total.steps);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    exit(1);
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (f != NULL) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

/* ---- the message to the scheduler being built for this step ---- */

struct outgoing {
    Kcycle__V1__ClusterChange **changes;
    uint32_t change_count, change_capacity;
    struct pod **pods; /* the model objects the pod puts borrow from */
    struct node **nodes;
    uint32_t pod_count, node_count, pod_capacity, node_capacity;
    Kcycle__V1__BindResult **results;
    uint32_t result_count, result_capacity;
    char **strings; /* uids and names the deletes point to */
    uint32_t string_count, string_capacity;
};

static struct outgoing out;

static void *grow(void *items, uint32_t *capacity, uint32_t need, size_t size)
{
    if (need <= *capacity)
        return items;
    uint32_t capacity_now = *capacity < 64 ? 64 : *capacity * 2;
    while (capacity_now < need)
        capacity_now *= 2;
    void *grown = realloc(items, capacity_now * size);
    if (grown == NULL)
        fail("out of memory");
    *capacity = capacity_now;
    return grown;
}

static Kcycle__V1__ClusterChange *new_change(void)
{
    out.changes = grow(out.changes, &out.change_capacity, out.change_count + 1,
                       sizeof(*out.changes));
    Kcycle__V1__ClusterChange *c = calloc(1, sizeof(*c));
    if (c == NULL)
        fail("out of memory");
    kcycle__v1__cluster_change__init(c);
    out.changes[out.change_count++] = c;
    return c;
}

static char *keep_string(const char *fmt, uint32_t a, uint32_t b)
{
    out.strings = grow(out.strings, &out.string_capacity, out.string_count + 1,
                       sizeof(*out.strings));
    char *text;
    if (asprintf(&text, fmt, a, b) < 0)
        fail("out of memory");
    out.strings[out.string_count++] = text;
    return text;
}

static struct tree *parse(const char *json)
{
    struct tree *t;
    struct kc_error err = {{0}};
    if (tree_parse_buffer("soak.json", json, strlen(json), &t, &err) != 0)
        fail("a generated object does not parse: %s", err.message);
    return t;
}

/* A pod as the API server shows it: pending, or bound to node (>= 0). */
static void put_pod(uint32_t i, int32_t node)
{
    const struct sim_pod *p = &pods[i];
    char node_field[96] = "";
    if (node >= 0)
        snprintf(node_field, sizeof(node_field), "\"nodeName\":\"node-%d\",", node);
    char json[768];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"p-%u\",\"namespace\":\"soak\",\"uid\":\"soak-%u\","
             "\"labels\":{\"app\":\"a%u\"}},"
             "\"spec\":{%s\"schedulerName\":\"kcycle\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%um\",\"memory\":\"%uMi\"}}}]},"
             "\"status\":{\"phase\":\"%s\"}}",
             i, i, i % 7, node_field, p->cpu, p->mem, node >= 0 ? "Running" : "Pending");
    struct tree *t = parse(json);
    struct pod *pod;
    struct kc_error err = {{0}};
    if (pod_from_tree(t, &pod, &err) != 0)
        fail("a generated pod is refused: %s", err.message);
    tree_free(t);
    Kcycle__V1__ClusterChange *c = new_change();
    c->change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT;
    c->pod_put = pod_to_proto(pod);
    if (c->pod_put == NULL)
        fail("pod_to_proto");
    out.pods = grow(out.pods, &out.pod_capacity, out.pod_count + 1, sizeof(*out.pods));
    out.pods[out.pod_count++] = pod;
}

static void put_node(uint32_t n)
{
    const struct sim_node *sn = &nodes[n];
    char json[768];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"node-%u\",\"uid\":\"node-%u-%u\","
             "\"labels\":{\"topology.kubernetes.io/zone\":\"zone-%u\"}},"
             "\"spec\":{\"unschedulable\":%s},"
             "\"status\":{\"allocatable\":{\"cpu\":\"%um\",\"memory\":\"%uMi\",\"pods\":\"%u\"}}}",
             n, n, sn->generation, n % 3, sn->cordoned ? "true" : "false", sn->cpu, sn->mem,
             sn->pods);
    struct tree *t = parse(json);
    struct node *node;
    struct kc_error err = {{0}};
    if (node_from_tree(t, &node, &err) != 0)
        fail("a generated node is refused: %s", err.message);
    tree_free(t);
    Kcycle__V1__ClusterChange *c = new_change();
    c->change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT;
    c->node_put = node_to_proto(node);
    if (c->node_put == NULL)
        fail("node_to_proto");
    out.nodes = grow(out.nodes, &out.node_capacity, out.node_count + 1, sizeof(*out.nodes));
    out.nodes[out.node_count++] = node;
}

static void delete_pod_change(uint32_t i)
{
    Kcycle__V1__ClusterChange *c = new_change();
    c->change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_DELETE;
    c->pod_delete = keep_string("soak-%u", i, 0);
}

static void delete_node_change(uint32_t n)
{
    Kcycle__V1__ClusterChange *c = new_change();
    c->change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_DELETE;
    c->node_delete = keep_string("node-%u", n, 0);
}

static void bind_result(uint64_t id, uint32_t i, int code, const char *message)
{
    out.results = grow(out.results, &out.result_capacity, out.result_count + 1,
                       sizeof(*out.results));
    Kcycle__V1__BindResult *r = calloc(1, sizeof(*r));
    if (r == NULL)
        fail("out of memory");
    kcycle__v1__bind_result__init(r);
    r->id = id;
    r->uid = keep_string("soak-%u", i, 0);
    r->code = code;
    r->message = (char *)message;
    out.results[out.result_count++] = r;
}

static void outgoing_clear(void)
{
    for (uint32_t i = 0; i < out.change_count; i++) {
        Kcycle__V1__ClusterChange *c = out.changes[i];
        if (c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT)
            pod_proto_free(c->pod_put);
        else if (c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT)
            node_proto_free(c->node_put);
        free(c);
    }
    for (uint32_t i = 0; i < out.pod_count; i++)
        pod_free(out.pods[i]);
    for (uint32_t i = 0; i < out.node_count; i++)
        node_free(out.nodes[i]);
    for (uint32_t i = 0; i < out.result_count; i++)
        free(out.results[i]);
    for (uint32_t i = 0; i < out.string_count; i++)
        free(out.strings[i]);
    out.change_count = out.pod_count = out.node_count = out.result_count = out.string_count = 0;
}

/* ---- the cluster's changes ---- */

static void live_add(uint32_t i)
{
    pods[i].live_index = live_count;
    live[live_count++] = i;
}

static void live_remove(uint32_t i)
{
    uint32_t at = pods[i].live_index, last = live[--live_count];
    live[at] = last;
    pods[last].live_index = at;
}

static void node_release(struct sim_pod *p)
{
    struct sim_node *sn = &nodes[p->node];
    sn->used_cpu -= p->cpu;
    sn->used_mem -= p->mem;
    sn->used_pods--;
    p->node = -1;
}

static void create_pod(void)
{
    uint32_t i = (uint32_t)total.created++;
    struct sim_pod *p = &pods[i];
    p->state = SOAK_PENDING;
    p->node = -1;
    p->big = rnd(100) == 0;
    p->cpu = p->big ? 64000 : 50 + 50 * rnd(10);
    p->mem = p->big ? 1024 : 64 + 64 * rnd(8);
    live_add(i);
    put_pod(i, -1);
}

/* A binding in flight keeps its node's room until it is answered (404). */
static void delete_pod(uint32_t i)
{
    struct sim_pod *p = &pods[i];
    if (p->state == SOAK_BOUND)
        node_release(p);
    p->state = p->state == SOAK_BINDING ? SOAK_GONE : SOAK_NONE;
    live_remove(i);
    total.deleted++;
    delete_pod_change(i);
}

static void add_node(uint32_t n)
{
    struct sim_node *sn = &nodes[n];
    sn->alive = true;
    sn->cordoned = false;
    sn->generation++;
    sn->cpu = 8000 * (1 + n % 3);
    sn->mem = 16384 * (1 + n % 3);
    sn->pods = 110;
    sn->used_cpu = sn->used_mem = sn->used_pods = 0;
    put_node(n);
}

/* Cordon, then evict its pods: each evicted pod is replaced by a new one, as its controller
 * would. */
static void drain_node(uint32_t n, uint32_t *replacements)
{
    nodes[n].cordoned = true;
    nodes[n].cordoned_step = (uint32_t)total.steps;
    put_node(n);
    total.drains++;
    for (uint32_t k = 0; k < live_count;) {
        uint32_t i = live[k];
        if ((pods[i].state == SOAK_BOUND || pods[i].state == SOAK_BINDING) && pods[i].node == (int32_t)n) {
            delete_pod(i); /* moves another pod into slot k */
            total.evicted_by_drain++;
            (*replacements)++;
        } else {
            k++;
        }
    }
}

static void remove_drained_nodes(void)
{
    for (uint32_t n = 0; n < node_count; n++) {
        struct sim_node *sn = &nodes[n];
        if (!sn->alive || !sn->cordoned || total.steps < sn->cordoned_step + 3)
            continue;
        if (sn->used_pods != 0)
            fail("node-%u was cordoned at step %u and still has %u pods bound to it", n,
                 sn->cordoned_step, sn->used_pods);
        sn->alive = false;
        delete_node_change(n);
        total.nodes_removed++;
    }
}

static uint32_t alive_nodes(void)
{
    uint32_t count = 0;
    for (uint32_t n = 0; n < node_count; n++)
        count += nodes[n].alive && !nodes[n].cordoned;
    return count;
}

/* ---- host kills and reloads ---- */

static void kill_a_host(void)
{
    const struct remote *r = &client.sched.remote;
    uint32_t up = 0;
    for (uint32_t i = 0; i < r->host_count; i++)
        up += r->hosts[i]->pid > 0;
    if (up == 0)
        return;
    uint32_t pick = rnd(up);
    for (uint32_t i = 0; i < r->host_count; i++) {
        if (r->hosts[i]->pid > 0 && pick-- == 0) {
            kill(r->hosts[i]->pid, SIGKILL);
            total.host_kills++;
            return;
        }
    }
}

/* Copies from to to, with trailer appended (NULL: none): the watcher compares contents, and a
 * shared object loads the same with bytes after its last section. */
static int copy_file(const char *from, const char *to, const char *trailer)
{
    char tmp[256];
    snprintf(tmp, sizeof(tmp), "%s.new", to);
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int outfd = in >= 0 ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755) : -1;
    int rc = in >= 0 && outfd >= 0 ? 0 : -errno;
    char buf[65536];
    ssize_t n;
    while (rc == 0 && (n = read(in, buf, sizeof(buf))) > 0)
        if (write(outfd, buf, (size_t)n) != n)
            rc = -EIO;
    if (rc == 0 && trailer != NULL && write(outfd, trailer, strlen(trailer)) != (ssize_t)strlen(trailer))
        rc = -EIO;
    if (in >= 0)
        close(in);
    if (outfd >= 0 && close(outfd) != 0)
        rc = -EIO;
    /* renamed into place: the watcher sees one complete new file */
    if (rc == 0 && rename(tmp, to) != 0)
        rc = -errno;
    return rc;
}

static void write_config(bool all_nodes)
{
    char tmp[160];
    snprintf(tmp, sizeof(tmp), "%s.new", config_path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        fail("cannot write %s", tmp);
    /* The plugins the churn needs (nodeunschedulable: cordons), two of them in plugin hosts
     * (the binder among them) and one loaded from a file of its own, replaced to reload it. */
    fprintf(f,
            "percentageOfNodesToScore: %d\n"
            "plugins:\n"
            "  - {name: prioritysort}\n"
            "  - {name: nodeunschedulable}\n"
            "  - {name: noderesources, isolation: process}\n"
            "  - {name: tainttoleration, path: %s}\n"
            "  - {name: nodeaffinity}\n"
            "  - {name: defaultbinder, isolation: process}\n",
            all_nodes ? 100 : 50, plugin_path);
    if (fclose(f) != 0 || rename(tmp, config_path) != 0)
        fail("cannot write %s", config_path);
}

static void reload(void)
{
    static bool config_turn;
    config_turn = !config_turn;
    if (config_turn) {
        write_config(total.config_reloads_asked % 2 == 0);
        total.config_reloads_asked++;
        raise(SIGHUP);
    } else {
        char from[512];
        snprintf(from, sizeof(from), "%s/tainttoleration/tainttoleration.so", opt.plugin_dir);
        char trailer[64];
        snprintf(trailer, sizeof(trailer), "kcycle-soak reload %llu\n",
                 (unsigned long long)total.plugin_reloads_asked);
        if (copy_file(from, plugin_path, trailer) != 0)
            fail("cannot copy %s", from);
        total.plugin_reloads_asked++;
    }
}

/* ---- one step: send, schedule, answer ---- */

static uint32_t pod_of(const char *uid)
{
    unsigned long i;
    if (uid == NULL || sscanf(uid, "soak-%lu", &i) != 1 || i >= total.created)
        fail("the scheduler names a pod this cluster never had: %s", uid != NULL ? uid : "(null)");
    return (uint32_t)i;
}

static int32_t node_of(const char *name)
{
    unsigned long n;
    if (name == NULL || sscanf(name, "node-%lu", &n) != 1 || n >= node_count)
        fail("the scheduler names a node this cluster never had: %s",
             name != NULL ? name : "(null)");
    return (int32_t)n;
}

/* Pods bound to a node in the step that cordoned it: evicted on the next step. */
static uint32_t *late_evictions;
static uint32_t late_eviction_count, late_eviction_capacity;

static void evict_late(uint32_t *replacements)
{
    for (uint32_t k = 0; k < late_eviction_count; k++) {
        uint32_t i = late_evictions[k];
        if (pods[i].state == SOAK_BOUND || pods[i].state == SOAK_BINDING) {
            delete_pod(i);
            total.evicted_by_drain++;
            (*replacements)++;
        }
    }
    late_eviction_count = 0;
}

/* A Binding, as the API server and this cluster's kubelets would take it. */
static void take_binding(const Kcycle__V1__Binding *b)
{
    uint32_t i = pod_of(b->uid);
    int32_t n = node_of(b->node);
    struct sim_pod *p = &pods[i];
    struct sim_node *sn = &nodes[n];
    if (p->state == SOAK_NONE)
        fail("pod p-%u bound to %s after it was deleted", i, b->node);
    if (p->state != SOAK_PENDING)
        fail("pod p-%u bound to %s while bound or being bound to node-%d", i, b->node, p->node);
    if (!sn->alive)
        fail("pod p-%u bound to %s, which was removed", i, b->node);
    /* A binding decided before the scheduler saw the cordon may arrive with the step that
     * cordoned the node (a binder in a plugin host binds in batches): the drain evicts it on
     * the next step, as kubectl drain would. One cordoned in an earlier step is a fault. */
    if (sn->cordoned && sn->cordoned_step != total.steps)
        fail("pod p-%u bound to %s, which was cordoned at step %u", i, b->node,
             sn->cordoned_step);
    if (sn->cordoned) {
        late_evictions = grow(late_evictions, &late_eviction_capacity, late_eviction_count + 1,
                              sizeof(*late_evictions));
        late_evictions[late_eviction_count++] = i;
    }
    if (sn->used_cpu + p->cpu > sn->cpu || sn->used_mem + p->mem > sn->mem ||
        sn->used_pods + 1 > sn->pods)
        fail("node %s over-committed by pod p-%u: cpu %u+%u of %u m, memory %u+%u of %u Mi, "
             "pods %u of %u",
             b->node, i, sn->used_cpu, p->cpu, sn->cpu, sn->used_mem, p->mem, sn->mem,
             sn->used_pods + 1, sn->pods);
    sn->used_cpu += p->cpu;
    sn->used_mem += p->mem;
    sn->used_pods++;
    p->node = n;
    p->state = SOAK_BINDING;
    p->bind_id = b->id;
    p->parked = false;
}

static void take_answer(const uint8_t *data, size_t len)
{
    if (data == NULL || len == 0)
        return;
    Kcycle__V1__ToBridge *m = kcycle__v1__to_bridge__unpack(NULL, len, data);
    if (m == NULL)
        fail("the scheduler's answer does not decode");
    for (size_t k = 0; k < m->n_bindings; k++)
        take_binding(m->bindings[k]);
    for (size_t k = 0; k < m->n_unschedulable; k++) {
        const Kcycle__V1__Unschedulable *u = m->unschedulable[k];
        uint32_t i = pod_of(u->uid);
        if (u->message == NULL || u->message[0] == '\0')
            fail("pod p-%u reported unschedulable without a message", i);
        total.parked_reports++;
        if (getenv("KCYCLE_SOAK_LOG") != NULL)
            fprintf(stderr, "soak: p-%u unschedulable: %s\n", i, u->message);
        if (!pods[i].big && strstr(u->message, "nodes are available") != NULL)
            total.parked_fit++;
        if (pods[i].state == SOAK_PENDING) {
            pods[i].parked = true;
            /* "0/N nodes are available: ..." is a verdict on the cluster; anything else (a
             * plugin host down, a plugin error) is an attempt the scheduler must retry */
            pods[i].transient = strstr(u->message, "nodes are available") == NULL;
        }
    }
    for (size_t k = 0; k < m->n_evictions; k++) {
        uint32_t i = pod_of(m->evictions[k]->uid);
        if (pods[i].state == SOAK_BOUND)
            delete_pod(i);
    }
    kcycle__v1__to_bridge__free_unpacked(m, NULL);
}

/* The bindings of the last answer: bound (and shown bound, as the watch would) or, for a pod
 * deleted meanwhile, refused. */
static void answer_bindings(void)
{
    for (uint32_t i = 0; i < total.created; i++) {
        struct sim_pod *p = &pods[i];
        if (p->state == SOAK_GONE) {
            node_release(p);
            p->state = SOAK_NONE;
            bind_result(p->bind_id, i, 404, "pods not found");
            total.bind_refused++;
        } else if (p->state == SOAK_BINDING) {
            p->state = SOAK_BOUND;
            bind_result(p->bind_id, i, 201, "");
            put_pod(i, p->node);
            total.bound++;
        }
    }
}

static void send_step(bool leader)
{
    Kcycle__V1__Leadership lead = KCYCLE__V1__LEADERSHIP__INIT;
    lead.leader = leader;
    Kcycle__V1__ToScheduler m = KCYCLE__V1__TO_SCHEDULER__INIT;
    m.session = client.session;
    m.sync_begin = m.sync_end = total.messages == 0;
    m.leadership = total.messages == 0 ? &lead : NULL;
    m.n_changes = out.change_count;
    m.changes = out.changes;
    m.n_bind_results = out.result_count;
    m.bind_results = out.results;
    size_t len = kcycle__v1__to_scheduler__get_packed_size(&m);
    uint8_t *data = malloc(len + 1);
    if (data == NULL)
        fail("out of memory");
    kcycle__v1__to_scheduler__pack(&m, data);
    outgoing_clear();
    uint8_t *answer = NULL;
    size_t answer_len = 0;
    int rc = bridge_client_feed(&client, data, len, 100000, &answer, &answer_len);
    free(data);
    total.messages++;
    if (rc != 0)
        fail("bridge_client_feed: %s", strerror(-rc));
    take_answer(answer, answer_len);
    free(answer);
}

/* ---- the invariants ---- */

/* Per node, the cache counts exactly what this cluster has bound or is binding there, plus
 * the pods the scheduler assumed whose binding cycle has not sent the Binding yet (a binder in
 * a plugin host binds in batches). Such a pod must be in the scheduler's binding pipeline
 * (waiting in Permit or binding): an assumed pod anywhere else has leaked. */
static void check_books(void)
{
    const struct cache *c = &client.sched.cache;
    kc_resource cpu = KC_RESOURCE_CPU, mem = KC_RESOURCE_MEMORY;
    uint32_t cached_nodes = 0;
    for (uint32_t n = 0; n < node_count; n++) {
        const struct sim_node *sn = &nodes[n];
        if (!sn->alive)
            continue;
        cached_nodes++;
        char name[32];
        snprintf(name, sizeof(name), "node-%u", n);
        const struct cache_node *cn = cache_node(c, name);
        if (cn == NULL)
            fail("%s is missing from the scheduler's cache", name);
        uint32_t count = 0;
        int64_t used_cpu = 0, used_mem = 0;
        for (uint32_t k = 0; k < cn->pod_count; k++) {
            const struct cache_pod *cp = cn->pods[k];
            uint32_t i = pod_of(cp->uid);
            if (cp->assumed && pods[i].state == SOAK_PENDING) {
                const struct sched_pod *sp = strmap_get(&client.sched.pods, cp->uid);
                if (sp == NULL || (sp->state != SP_BINDING && sp->state != SP_WAITING))
                    fail("pod p-%u is assumed on %s, but no binding of it is under way (state "
                         "%d): leaked",
                         i, name, sp != NULL ? (int)sp->state : -1);
                continue;
            }
            if (pods[i].node != (int32_t)n ||
                (pods[i].state != SOAK_BOUND && pods[i].state != SOAK_BINDING &&
                 pods[i].state != SOAK_GONE))
                fail("the scheduler counts pod p-%u on %s (%s); the cluster has it %s on "
                     "node-%d",
                     i, name, cp->assumed ? "assumed" : "assigned",
                     pods[i].state == SOAK_NONE ? "deleted" : "pending", pods[i].node);
            count++;
            used_cpu += res_list_get(&cp->request, cpu);
            used_mem += res_list_get(&cp->request, mem);
        }
        if (count != sn->used_pods || used_cpu != (int64_t)sn->used_cpu ||
            used_mem != (int64_t)sn->used_mem * 1024 * 1024)
            fail("%s: the scheduler counts %u pods, %lld m cpu, %lld bytes bound or binding; "
                 "the cluster has %u pods, %u m, %u Mi",
                 name, count, (long long)used_cpu, (long long)used_mem, sn->used_pods,
                 sn->used_cpu, sn->used_mem);
    }
    if (c->node_count != cached_nodes)
        fail("the scheduler's cache has %u nodes, the cluster %u", c->node_count, cached_nodes);
}

/* Every live pod is somewhere, every deleted one nowhere. */
static void check_pods(bool final)
{
    const struct scheduler *s = &client.sched;
    uint32_t pending = 0, binding = 0, bound = 0;
    for (uint32_t k = 0; k < live_count; k++) {
        uint32_t i = live[k];
        const struct sim_pod *p = &pods[i];
        char uid[32];
        snprintf(uid, sizeof(uid), "soak-%u", i);
        if (p->state == SOAK_PENDING) {
            pending++;
            if (strmap_get(&s->pods, uid) == NULL)
                fail("pending pod p-%u is neither bound nor in the scheduler's queues", i);
            if (final && (!p->parked || p->transient))
                fail("pod p-%u is still pending at the end, %s", i,
                     p->parked ? "its last attempt failed and was not retried"
                               : "without an Unschedulable reason");
        } else if (p->state == SOAK_BINDING) {
            binding++;
        } else {
            bound++;
        }
    }
    /* the scheduler's own pods are the pending and binding ones: none leaked */
    if (s->pods.count != pending + binding)
        fail("the scheduler keeps %u pods of its own; the cluster has %u pending and %u being "
             "bound",
             s->pods.count, pending, binding);
    if (s->assigned.count != bound)
        fail("the scheduler knows %u assigned pods; the cluster has %u bound", s->assigned.count,
             bound);
}

/* Plugin host processes seen: a kill or a reload brings new ones. */
static pid_t host_pids[4096];
static uint32_t host_pid_count;

static void note_host_pids(void)
{
    const struct remote *r = &client.sched.remote;
    for (uint32_t i = 0; i < r->host_count; i++) {
        pid_t pid = r->hosts[i]->pid;
        bool seen = pid <= 0;
        for (uint32_t k = 0; !seen && k < host_pid_count; k++)
            seen = host_pids[k] == pid;
        if (!seen && host_pid_count < sizeof(host_pids) / sizeof(host_pids[0]))
            host_pids[host_pid_count++] = pid;
    }
}

/* ---- main ---- */

static void usage(void)
{
    fprintf(stderr,
            "usage: kcycle-soak --plugin-dir DIR [--pods N] [--nodes N] [--live N] [--batch N]\n"
            "       [--node-every STEPS] [--drain-every STEPS] [--kill-every STEPS]\n"
            "       [--reload-every STEPS] [--seed N] [--settle SECONDS] [--step-ms MS]\n"
            "       [--check-rss]\n");
    exit(2);
}

static void parse_options(int argc, char **argv)
{
    static const struct option longs[] = {
        {"pods", 1, 0, 'p'},        {"nodes", 1, 0, 'n'},        {"live", 1, 0, 'l'},
        {"batch", 1, 0, 'b'},       {"node-every", 1, 0, 'a'},   {"drain-every", 1, 0, 'd'},
        {"kill-every", 1, 0, 'k'},  {"reload-every", 1, 0, 'r'}, {"seed", 1, 0, 's'},
        {"plugin-dir", 1, 0, 'P'},  {"check-rss", 0, 0, 'R'},    {"settle", 1, 0, 'S'},
        {"step-ms", 1, 0, 'T'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        unsigned long v = optarg != NULL ? strtoul(optarg, NULL, 10) : 0;
        switch (c) {
        case 'p': opt.pods = (uint32_t)v; break;
        case 'n': opt.nodes = (uint32_t)v; break;
        case 'l': opt.live = (uint32_t)v; break;
        case 'b': opt.batch = (uint32_t)v; break;
        case 'a': opt.node_every = (uint32_t)v; break;
        case 'd': opt.drain_every = (uint32_t)v; break;
        case 'k': opt.kill_every = (uint32_t)v; break;
        case 'r': opt.reload_every = (uint32_t)v; break;
        case 's': opt.seed = (uint32_t)v; break;
        case 'P': opt.plugin_dir = optarg; break;
        case 'R': opt.check_rss = true; break;
        case 'S': opt.settle_s = strtod(optarg, NULL); break;
        case 'T': opt.step_ms = (uint32_t)v; break;
        default: usage();
        }
    }
    if (opt.plugin_dir == NULL || opt.pods == 0 || opt.nodes == 0 || opt.batch == 0 ||
        opt.live == 0 || opt.node_every == 0 || opt.drain_every == 0 || opt.kill_every == 0 ||
        opt.reload_every == 0)
        usage();
}

static void setup(void)
{
    snprintf(tmp_dir, sizeof(tmp_dir), "%s/kcycle-soak.XXXXXX",
             getenv("TMPDIR") != NULL && strlen(getenv("TMPDIR")) < 32 ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(tmp_dir) == NULL)
        fail("mkdtemp: %s", strerror(errno));
    snprintf(config_path, sizeof(config_path), "%s/config.yaml", tmp_dir);
    snprintf(plugin_path, sizeof(plugin_path), "%s/tainttoleration.so", tmp_dir);
    char from[512];
    snprintf(from, sizeof(from), "%s/tainttoleration/tainttoleration.so", opt.plugin_dir);
    if (copy_file(from, plugin_path, NULL) != 0)
        fail("cannot copy %s", from);
    write_config(false);
    watch_install_sighup();
    struct bridge_client_options o = {.url = "inproc://kcycle-soak",
                                      .config_path = config_path,
                                      .plugin_dir = opt.plugin_dir,
                                      .watch_plugins = true};
    struct kc_error err = {{0}};
    if (bridge_client_open(&client, &o, &err) != 0)
        fail("the scheduler does not start: %s", err.message);
    pods = calloc(opt.pods, sizeof(*pods));
    live = calloc(opt.pods, sizeof(*live));
    node_capacity = opt.nodes + opt.pods / opt.batch / opt.node_every + 16;
    nodes = calloc(node_capacity, sizeof(*nodes));
    if (pods == NULL || live == NULL || nodes == NULL)
        fail("out of memory");
    /* touched now, so that this program's own tables are resident before the warm-up ends and
     * RSS measures the scheduler */
    memset(pods, 0, opt.pods * sizeof(*pods));
    memset(live, 0xff, opt.pods * sizeof(*live));
}

static void cleanup(void)
{
    bridge_client_close(&client);
    unlink(config_path);
    unlink(plugin_path);
    rmdir(tmp_dir);
}

int main(int argc, char **argv)
{
    parse_options(argc, argv);
    log_set_level(getenv("KCYCLE_SOAK_LOG") != NULL ? KC_LOG_INFO : KC_LOG_ERROR);
    rng_state = opt.seed * 0x9e3779b97f4a7c15ull + 1;
    setup();
    int64_t start = now_us();

    for (node_count = 0; node_count < opt.nodes; node_count++)
        add_node(node_count);
    uint64_t rss_warm = 0, rss_peak = 0, rss_peak_after = 0;
    size_t heap_warm = 0, heap_peak_after = 0; /* heap_in_use() */
    uint64_t warm_at = opt.pods / 5; /* created pods when the warm-up ends */
    uint32_t replacements = 0;
    uint64_t last_generation = client.sched.fw->generation, generations = 0;
    while (total.created < opt.pods) {
        int64_t step_start = now_us();
        total.steps++;
        /* deletions keep the live set near its target once it is reached */
        uint32_t deletions = live_count + opt.batch > opt.live ? opt.batch : 0;
        for (uint32_t d = 0; d < deletions && live_count > 0; d++)
            delete_pod(live[rnd(live_count)]);
        if (total.steps % opt.node_every == 0 && node_count < node_capacity) {
            add_node(node_count++);
            total.nodes_added++;
        }
        if (total.steps % opt.drain_every == 0 && alive_nodes() > opt.nodes / 2) {
            uint32_t n;
            do
                n = rnd(node_count);
            while (!nodes[n].alive || nodes[n].cordoned);
            drain_node(n, &replacements);
        }
        evict_late(&replacements);
        remove_drained_nodes();
        if (total.steps % opt.kill_every == 0)
            kill_a_host();
        if (total.steps % opt.reload_every == 0)
            reload();
        /* after the churn: a pod deleted or evicted while its binding was in flight gets the
         * API server's 404 */
        answer_bindings();
        uint32_t creations = opt.batch + replacements;
        replacements = 0;
        for (uint32_t c = 0; c < creations && total.created < opt.pods; c++)
            create_pod();

        send_step(true);
        if (client.sched.fw->generation != last_generation) {
            generations += client.sched.fw->generation - last_generation;
            last_generation = client.sched.fw->generation;
        }
        check_books();
        check_pods(false);
        note_host_pids();

        uint64_t rss = rss_kib();
        if (rss > rss_peak)
            rss_peak = rss;
        size_t heap = heap_in_use();
        if (rss_warm == 0 && total.created >= warm_at) {
            rss_warm = rss;
            heap_warm = heap;
        } else if (rss_warm != 0) {
            if (rss > rss_peak_after)
                rss_peak_after = rss;
            if (heap > heap_peak_after)
                heap_peak_after = heap;
        }
        int64_t left = (int64_t)opt.step_ms * 1000 - (now_us() - step_start);
        if (left > 0)
            usleep((useconds_t)left);
        if (total.steps % 100 == 0)
            fprintf(stderr,
                    "soak: step %llu: %llu pods created, %u live, RSS %llu KiB, heap in use "
                    "%zu KiB\n",
                    (unsigned long long)total.steps, (unsigned long long)total.created,
                    live_count, (unsigned long long)rss, heap_in_use() / 1024);
    }

    /* Settle: no more churn; every pod ends bound or parked with a reason. The scheduler
     * retries parked pods on its own clock, so this polls until the cluster is quiet. */
    int64_t settle_until = now_us() + (int64_t)(opt.settle_s * 1e6);
    for (;;) {
        total.steps++;
        answer_bindings();
        send_step(true);
        check_books();
        bool quiet = out.result_count == 0;
        for (uint32_t k = 0; quiet && k < live_count; k++) {
            const struct sim_pod *p = &pods[live[k]];
            quiet = p->state == SOAK_BOUND ||
                    (p->state == SOAK_PENDING && p->parked && !p->transient);
        }
        if (quiet && !scheduler_busy(&client.sched))
            break;
        if (now_us() > settle_until)
            break; /* check_pods says which pod did not settle */
        usleep(20000);
    }
    check_pods(true);
    if (client.sched.fw->generation != last_generation)
        generations += client.sched.fw->generation - last_generation;

    uint32_t bound_now = 0, parked_now = 0;
    for (uint32_t k = 0; k < live_count; k++) {
        bound_now += pods[live[k]].state == SOAK_BOUND;
        parked_now += pods[live[k]].state == SOAK_PENDING;
    }
    uint64_t rss_final = rss_kib();
    size_t heap_final = heap_in_use();
    /* what the live pods ask of the CPU the nodes have (the big pods, which fit nowhere, left
     * out), at the end of the churn */
    uint64_t demand = 0, supply = 0;
    for (uint32_t k = 0; k < live_count; k++)
        demand += pods[live[k]].big ? 0 : pods[live[k]].cpu;
    for (uint32_t n = 0; n < node_count; n++)
        supply += nodes[n].alive && !nodes[n].cordoned ? nodes[n].cpu : 0;
    /* what of the RSS is free memory malloc keeps rather than memory in use */
    malloc_trim(0);
    uint64_t rss_trimmed = rss_kib();
    double seconds = (double)(now_us() - start) / 1e6;
    printf("soak: %llu pods created, %llu deleted, %llu bindings (%llu refused: pod deleted "
           "meanwhile), %u bound and %u parked with a reason at the end, %llu Unschedulable "
           "reports\n",
           (unsigned long long)total.created, (unsigned long long)total.deleted,
           (unsigned long long)total.bound, (unsigned long long)total.bind_refused, bound_now,
           parked_now, (unsigned long long)total.parked_reports);
    printf("soak: over-commitment: the live pods ask %llu%% of the nodes' CPU at the end; %llu "
           "reports of a normal-sized pod parked because no node had room\n",
           (unsigned long long)(supply != 0 ? demand * 100 / supply : 0),
           (unsigned long long)total.parked_fit);
    printf("soak: churn: %llu pod deletions, %llu nodes added, %llu drained (%llu pods "
           "evicted and replaced), %llu removed\n",
           (unsigned long long)total.deleted, (unsigned long long)total.nodes_added,
           (unsigned long long)total.drains, (unsigned long long)total.evicted_by_drain,
           (unsigned long long)total.nodes_removed);
    printf("soak: %llu plugin hosts killed, %u host processes started in all; reloads: %llu plugin file "
           "replacements and %llu configuration reloads asked, %llu new plugin generations\n",
           (unsigned long long)total.host_kills, host_pid_count,
           (unsigned long long)total.plugin_reloads_asked,
           (unsigned long long)total.config_reloads_asked, (unsigned long long)generations);
    printf("soak: RSS: %llu KiB after warm-up (%llu pods created), peak %llu KiB (after "
           "warm-up %llu KiB), final %llu KiB (%llu KiB after malloc_trim); heap in use %zu KiB after warm-up, peak %zu KiB "
           "since, final %zu KiB; %llu steps in %.1f s\n",
           (unsigned long long)rss_warm, (unsigned long long)warm_at,
           (unsigned long long)rss_peak, (unsigned long long)rss_peak_after,
           (unsigned long long)rss_final, (unsigned long long)rss_trimmed, heap_warm / 1024, heap_peak_after / 1024,
           heap_final / 1024, (unsigned long long)total.steps, seconds);
    if (total.host_kills == 0 || generations == 0 || total.drains == 0 || total.nodes_added == 0)
        fail("the churn did not happen: %llu host kills, %llu reloads, %llu drains, %llu nodes "
             "added (too few steps for the periods?)",
             (unsigned long long)total.host_kills, (unsigned long long)generations,
             (unsigned long long)total.drains, (unsigned long long)total.nodes_added);
    /* a cluster with room for every pod never tries the scheduler's accounting */
    if (total.parked_fit == 0)
        fail("no normal-sized pod was ever parked with \"nodes are available\": the cluster was "
             "never full (raise --live)");
    /* flat: after the warm-up, what malloc holds in use grows by no more than a tenth plus
     * 1 MiB (the live set is steady: more is a leak), and RSS, which also counts the
     * allocator's free pages it has not given back, by no more than a fifth plus 16 MiB */
    if (opt.check_rss && heap_warm == 0) {
#if defined(__SANITIZE_ADDRESS__) || defined(KCYCLE_SOAK_CLANG_ASAN)
        printf("soak: heap check skipped: mallinfo2 does not see the AddressSanitizer's "
               "allocator (RSS is still checked)\n");
#else
        fail("heap check unavailable: mallinfo2 reports no heap in use");
#endif
    }
    if (opt.check_rss && heap_peak_after > heap_warm + heap_warm / 10 + 1024 * 1024)
        fail("the heap grew after the warm-up: %zu KiB in use then, peak %zu KiB since",
             heap_warm / 1024, heap_peak_after / 1024);
    if (opt.check_rss && rss_peak_after > rss_warm + rss_warm / 5 + 16 * 1024)
        fail("RSS grew after the warm-up: %llu KiB then, peak %llu KiB since",
             (unsigned long long)rss_warm, (unsigned long long)rss_peak_after);
    cleanup();
    free(pods);
    free(live);
    free(nodes);
    free(late_evictions);
    printf("soak: PASSED\n");
    return 0;
}
