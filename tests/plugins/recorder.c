/* A test plugin that implements every phase and appends "<name> <Phase>" lines to the file
 * named by args "log", so tests can assert the phase order. Behaviour is set by args:
 *   filter: accept | reject | silent | error   permit: allow | wait | reject
 *          (silent: Filter rejects every node without a reason, so the runtime names the plugin)
 *   reserve: ok | fail                   timeout_ms: Permit wait timeout
 *   hold_until_nodes: PreEnqueue holds pods while the cluster has fewer nodes (0: never)
 *   hold_label: PreEnqueue holds pods that carry this label (empty: none)
 *   allow_when_waiting: N: Permit waits until N pods wait, then allows them all
 *   reject_when_waiting: N: Permit waits until N pods wait, then rejects them all and itself
 *   restrict: space-separated node names PreFilter restricts the attempt to (SDK 1.2); "-"
 *             restricts it to no name at all
 *   restrict_late: a node name PreScore and Score try to restrict the attempt to; the call
 *          must fail (-EINVAL outside PreFilter), else the phase returns an error
 *   write: PreBind writes the selected-node annotation on this PersistentVolumeClaim of the
 *          pod's namespace (kc_cycle_write_object; empty: no write)
 *   reject_name: with filter: accept, Filter rejects the nodes whose name contains this text
 *          (empty: none), so tests can make plugins disagree about some nodes only
 *   score_by_name: yes: Score is a hash of the node's name (0..100) instead of 50
 *   score_by_clock: yes: the scheduler clock's tenths of a second (kc_now_ms) are added to
 *          the score (mod 101), so a run whose plugins read another clock scores otherwise
 *   status_on_init: init reports a status of the custom object RecorderInit of this name
 *          (kc_object_status; empty: none), as a plugin that publishes state at start does */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/kcycle.h>

#ifndef RECORDER_NAME
#define RECORDER_NAME "recorder"
#endif

KC_PLUGIN_DEFINE_HOST;

struct recorder {
    char log[512];
    char filter[16];
    char permit[16];
    char reserve[16];
    unsigned timeout_ms;
    unsigned hold_until_nodes;
    char hold_label[64];
    unsigned allow_when_waiting; /* Permit: wait until this many pods wait, then allow them all */
    unsigned reject_when_waiting; /* Permit: wait until this many pods wait, then reject them */
    char restrict_nodes[256];
    char restrict_late[64];
    char write[64];               /* PreBind: the claim to write, or "" */
    char reject_name[64];         /* Filter: reject nodes whose name contains it, or "" */
    char score_by_name[8];        /* "yes": Score from the node's name */
    char score_by_clock[8];       /* "yes": the scheduler clock moves the score */
};

/* Test-only args reader: the value of "key": "value" or "key": number. */
static void arg(const char *json, const char *key, char *out, size_t size, const char *dflt)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "\"%s\"", key);
    const char *p = strstr(json, pattern);
    snprintf(out, size, "%s", dflt);
    if (p == NULL)
        return;
    p += strlen(pattern);
    while (*p == ' ' || *p == ':' || *p == '"')
        p++;
    size_t n = strcspn(p, "\",}");
    if (n >= size)
        n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static void record(struct recorder *r, const char *phase, const kc_pod *pod)
{
    FILE *f = fopen(r->log, "a");
    if (f == NULL)
        return;
    fprintf(f, "%s %s %s\n", RECORDER_NAME, phase, pod != NULL ? kc_pod_name(pod) : "-");
    fclose(f);
}

static int init(const kc_host_api *host, const char *args, void **self)
{
    if (kc_plugin_attach(host) != 0)
        return -22;
    struct recorder *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -12;
    char timeout[32];
    arg(args, "log", r->log, sizeof(r->log), "/dev/null");
    arg(args, "filter", r->filter, sizeof(r->filter), "accept");
    arg(args, "permit", r->permit, sizeof(r->permit), "allow");
    arg(args, "reserve", r->reserve, sizeof(r->reserve), "ok");
    arg(args, "timeout_ms", timeout, sizeof(timeout), "1000");
    r->timeout_ms = (unsigned)strtoul(timeout, NULL, 10);
    arg(args, "hold_until_nodes", timeout, sizeof(timeout), "0");
    r->hold_until_nodes = (unsigned)strtoul(timeout, NULL, 10);
    arg(args, "hold_label", r->hold_label, sizeof(r->hold_label), "");
    arg(args, "restrict", r->restrict_nodes, sizeof(r->restrict_nodes), "");
    arg(args, "restrict_late", r->restrict_late, sizeof(r->restrict_late), "");
    arg(args, "allow_when_waiting", timeout, sizeof(timeout), "0");
    r->allow_when_waiting = (unsigned)strtoul(timeout, NULL, 10);
    arg(args, "reject_when_waiting", timeout, sizeof(timeout), "0");
    r->reject_when_waiting = (unsigned)strtoul(timeout, NULL, 10);
    arg(args, "write", r->write, sizeof(r->write), "");
    arg(args, "reject_name", r->reject_name, sizeof(r->reject_name), "");
    arg(args, "score_by_name", r->score_by_name, sizeof(r->score_by_name), "no");
    arg(args, "score_by_clock", r->score_by_clock, sizeof(r->score_by_clock), "no");
    char status_name[64];
    arg(args, "status_on_init", status_name, sizeof(status_name), "");
    if (status_name[0] != '\0')
        kc_object_status("RecorderInit", NULL, status_name, "{\"init\":true}");
    *self = r;
    return 0;
}

static void fini(void *self)
{
    free(self);
}

#ifndef RECORDER_NO_PRE_ENQUEUE
static kc_status pre_enqueue(void *self, const kc_pod *pod)
{
    struct recorder *r = self;
    record(r, "PreEnqueue", pod);
    if (r->hold_label[0] != '\0' && kc_pod_label(pod, r->hold_label) != NULL)
        return KC_UNSCHEDULABLE;
    return kc_node_count() < r->hold_until_nodes ? KC_UNSCHEDULABLE : KC_SUCCESS;
}
#endif

#ifdef RECORDER_GROUP_OF
/* Declares no group: enough for a plugin host to report that the plugin implements group_of. */
static kc_status group_of(void *self, const kc_pod *pod, kc_group_info *out)
{
    record(self, "GroupOf", pod);
    return KC_SKIP;
}
#endif

#ifdef RECORDER_QUEUE_SORT
/* By name: enough for a second QueueSort beside another (the harness's queue_sort_off). */
static int queue_less(void *self, const kc_pod *a, const kc_pod *b)
{
    (void)self;
    return strcmp(kc_pod_name(a), kc_pod_name(b)) < 0;
}
#endif

static kc_status pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct recorder *r = self;
    record(r, "PreFilter", pod);
    if (r->restrict_nodes[0] == '\0')
        return KC_SUCCESS;
    char copy[sizeof(r->restrict_nodes)];
    const char *names[32];
    uint32_t count = 0;
    snprintf(copy, sizeof(copy), "%s", r->restrict_nodes);
    for (char *save = NULL, *p = strtok_r(copy, " ", &save); p != NULL && count < 32;
         p = strtok_r(NULL, " ", &save))
        if (strcmp(p, "-") != 0)
            names[count++] = p;
    return kc_cycle_restrict_nodes(cycle, RECORDER_NAME, names, count) == 0 ? KC_SUCCESS
                                                                            : KC_ERROR;
}

static kc_status filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct recorder *r = self;
    record(r, "Filter", pod);
    if (strcmp(r->filter, "reject") == 0) {
        kc_cycle_reject(cycle, "node(s) rejected by " RECORDER_NAME);
        return KC_UNSCHEDULABLE;
    }
    if (strcmp(r->filter, "silent") == 0)
        return KC_UNSCHEDULABLE;
    if (r->reject_name[0] != '\0' && strstr(kc_node_name(node), r->reject_name) != NULL) {
        kc_cycle_reject(cycle, "node(s) rejected by name by " RECORDER_NAME);
        return KC_UNSCHEDULABLE;
    }
    return strcmp(r->filter, "error") == 0 ? KC_ERROR : KC_SUCCESS;
}

static kc_status post_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    record(self, "PostFilter", pod);
    return KC_UNSCHEDULABLE;
}

/* restrict_late: a restriction outside PreFilter is refused with -EINVAL (ok), anything else
 * is a host bug the phase reports as an error. */
static kc_status restrict_late(const struct recorder *r, kc_cycle *cycle)
{
    if (r->restrict_late[0] == '\0')
        return KC_SUCCESS;
    const char *names[1] = {r->restrict_late};
    return kc_cycle_restrict_nodes(cycle, RECORDER_NAME, names, 1) == -22 ? KC_SUCCESS
                                                                          : KC_ERROR;
}

static kc_status pre_score(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    record(self, "PreScore", pod);
    return restrict_late(self, cycle);
}

static kc_status score(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                       int64_t *out)
{
    const struct recorder *r = self;
    record(self, "Score", pod);
    *out = 50;
    if (strcmp(r->score_by_name, "yes") == 0) {
        uint32_t hash = 2166136261u; /* FNV-1a */
        for (const char *c = kc_node_name(node); *c != '\0'; c++)
            hash = (hash ^ (uint8_t)*c) * 16777619u;
        *out = hash % 101;
    }
    if (strcmp(r->score_by_clock, "yes") == 0)
        *out = (*out + kc_now_ms() / 100) % 101;
    return restrict_late(self, cycle);
}

static kc_status normalize(void *self, kc_cycle *cycle, const kc_pod *pod,
                           const kc_node *const *nodes, int64_t *scores, uint32_t count)
{
    record(self, "NormalizeScore", pod);
    return KC_SUCCESS;
}

static kc_status reserve(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct recorder *r = self;
    record(r, "Reserve", pod);
    return strcmp(r->reserve, "fail") == 0 ? KC_UNSCHEDULABLE : KC_SUCCESS;
}

static void unreserve(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    record(self, "Unreserve", pod);
}

static kc_status permit(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                        uint32_t *timeout_ms)
{
    struct recorder *r = self;
    record(r, "Permit", pod);
    if (r->allow_when_waiting > 0) {
        /* a tiny gang: the last of N arrivals lets the others go */
        if (kc_waiting_pod_count() + 1 < r->allow_when_waiting) {
            *timeout_ms = r->timeout_ms;
            return KC_WAIT;
        }
        for (uint32_t i = kc_waiting_pod_count(); i-- > 0;)
            kc_waiting_pod_allow(kc_waiting_pod_at(i), RECORDER_NAME);
        return KC_SUCCESS;
    }
    if (r->reject_when_waiting > 0) {
        /* a gang that cannot complete: the last of N arrivals turns them all away */
        if (kc_waiting_pod_count() + 1 < r->reject_when_waiting) {
            *timeout_ms = r->timeout_ms;
            return KC_WAIT;
        }
        for (uint32_t i = kc_waiting_pod_count(); i-- > 0;)
            kc_waiting_pod_reject(kc_waiting_pod_at(i), RECORDER_NAME,
                                  RECORDER_NAME " rejected the waiting pods");
        kc_cycle_reject(cycle, RECORDER_NAME " rejected the last of the waiting pods");
        return KC_UNSCHEDULABLE;
    }
    if (strcmp(r->permit, "wait") == 0) {
        *timeout_ms = r->timeout_ms;
        return KC_WAIT;
    }
    if (strcmp(r->permit, "reject") == 0) {
        kc_cycle_reject(cycle, RECORDER_NAME " rejected the pod in Permit");
        return KC_UNSCHEDULABLE;
    }
    return KC_SUCCESS;
}

static kc_status pre_bind(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct recorder *r = self;
    record(self, "PreBind", pod);
    if (r->write[0] == '\0')
        return KC_SUCCESS;
    char patch[256];
    snprintf(patch, sizeof(patch),
             "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":\"%s\"}}}",
             kc_node_name(node));
    return kc_cycle_write_object(cycle, "PersistentVolumeClaim", kc_pod_namespace(pod), r->write,
                                 patch) == 0
               ? KC_SUCCESS
               : KC_ERROR;
}

static kc_status bind(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    record(self, "Bind", pod);
    return KC_SKIP; /* leave binding to the next Bind plugin */
}

static void post_bind(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    record(self, "PostBind", pod);
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = init,
    .fini = fini,
#ifndef RECORDER_NO_PRE_ENQUEUE /* PreEnqueue cannot run in a plugin host */
    .pre_enqueue = pre_enqueue,
#endif
    .pre_filter = pre_filter,
    .filter = filter,
    .post_filter = post_filter,
    .pre_score = pre_score,
    .score = score,
    .normalize_score = normalize,
    .reserve = reserve,
    .unreserve = unreserve,
    .permit = permit,
    .pre_bind = pre_bind,
    .bind = bind,
    .post_bind = post_bind,
#ifdef RECORDER_GROUP_OF
    .group_of = group_of,
#endif
#ifdef RECORDER_QUEUE_SORT
    .queue_less = queue_less,
#endif
};

static const kc_plugin_descriptor descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(RECORDER_NAME, "1.0.0", &ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &descriptor;
}
