/* Fuzz target for the scheduler's handling of plugin-host replies (kcycle.v1.Reply, what a
 * host answers over the socketpair; runtime/scheduler/remote.c). A scheduler whose plugins
 * run in a plugin host is given a small cluster and schedules it; the host is a thread of this
 * process serving the requests with the real host code (plugin_host_handle), except that some
 * replies are replaced by the input's.
 *
 * Input: byte 0 says how many requests (0-3) get their real reply first (0: the hello reply is
 * the first one replaced); then each frame (fuzz.h) replaces the next reply. A frame that
 * decodes as a Reply gets the request's id (a wrong id is one protocol error the mutator would
 * otherwise hit every time); one that does not is sent as it is. When the frames run out the
 * real replies follow. The scheduler must survive whatever comes back, and every pod it was
 * given must end up bound, waiting or still queued: none lost; and the cache's books must
 * balance (books.h: no assumed pod outside the binding pipeline).
 *
 * KCYCLE_FUZZ_RECORD=FILE writes the real replies of a run as frames into FILE: a seed. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bridge.pb-c.h"
#include "books.h"
#include "bridge_client.h"
#include "channel.h"
#include "fuzz.h"
#include "host.h"
#include "log.h"
#include "plugin.pb-c.h"
#include "proto_convert.h"
#include "remote.h"
#include "simfile.h"

#define MAX_HOSTS 16

/* Plugins in a host: filters, scores, reserve and the binder, so every reply kind is used. */
static const char config_yaml[] =
    "plugins:\n"
    "  - {name: prioritysort}\n"
    "  - {name: noderesources, isolation: process}\n"
    "  - {name: tainttoleration, isolation: process}\n"
    "  - {name: defaultbinder, isolation: process}\n"
    "pluginTimeout: 2s\n";

static const char cluster_yaml[] =
    "nodes:\n"
    "  - {name: small, count: 2, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}\n"
    "  - name: tainted\n"
    "    allocatable: {cpu: 8, memory: 16Gi}\n"
    "    taints: [{key: dedicated, value: gpu, effect: NoSchedule}]\n"
    "pods:\n"
    "  - {name: running, namespace: default, nodeName: small-0, requests: {cpu: 1}}\n"
    "  - {name: web-0, namespace: default, requests: {cpu: 500m, memory: 1Gi}}\n"
    "  - {name: web-1, namespace: default, requests: {cpu: 1500m, memory: 1Gi}}\n"
    "  - name: gpu-job\n"
    "    namespace: default\n"
    "    requests: {cpu: 4}\n"
    "    tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]\n"
    "  - {name: too-big, namespace: default, requests: {cpu: 64}}\n";

/* ---- the input, shared with the host threads ---- */

static struct {
    pthread_mutex_t lock;
    const uint8_t *data;
    size_t size;
    unsigned real_first; /* requests still to answer truly */
    FILE *record;
} input = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The reply to send for request, real (of len bytes) or from the input: malloc'd in *out. */
static void choose_reply(const uint8_t *request, size_t request_len, uint8_t **reply, size_t *len)
{
    pthread_mutex_lock(&input.lock);
    if (input.record != NULL) {
        uint8_t head[2] = {(uint8_t)*len, (uint8_t)(*len >> 8)};
        if (*len <= 0xffff) {
            fwrite(head, 1, 2, input.record);
            fwrite(*reply, 1, *len, input.record);
        }
    }
    const uint8_t *frame;
    size_t frame_len;
    bool replace = input.real_first == 0 &&
                   fuzz_next_frame(&input.data, &input.size, &frame, &frame_len);
    if (input.real_first > 0)
        input.real_first--;
    pthread_mutex_unlock(&input.lock);
    if (!replace)
        return;
    Kcycle__V1__Request *q = kcycle__v1__request__unpack(NULL, request_len, request);
    Kcycle__V1__Reply *r = kcycle__v1__reply__unpack(NULL, frame_len, frame);
    free(*reply);
    if (q != NULL && r != NULL) {
        r->id = q->id;
        *len = kcycle__v1__reply__get_packed_size(r);
        *reply = malloc(*len + 1);
        fuzz_check(*reply != NULL, "malloc", NULL);
        kcycle__v1__reply__pack(r, *reply);
    } else {
        *len = frame_len;
        *reply = malloc(frame_len + 1);
        fuzz_check(*reply != NULL, "malloc", NULL);
        memcpy(*reply, frame, frame_len);
    }
    if (q != NULL)
        kcycle__v1__request__free_unpacked(q, NULL);
    if (r != NULL)
        kcycle__v1__reply__free_unpacked(r, NULL);
}

struct host_thread {
    pthread_t thread;
    int fd;
};

static struct host_thread hosts[MAX_HOSTS];
static unsigned host_count;

/* Serves one host's channel until the scheduler closes its end. */
static void *serve(void *arg)
{
    struct host_thread *t = arg;
    struct plugin_host_options opts = {.fd = 0};
    struct plugin_host *host;
    struct kc_error err = {{0}};
    fuzz_check(plugin_host_open(&opts, &host, &err) == 0, "plugin_host_open", err.message);
    struct channel c;
    channel_init(&c, t->fd);
    for (;;) {
        const uint8_t *request;
        size_t len;
        if (channel_recv(&c, CHANNEL_REQUEST_MAX_BYTES, -1, &request, &len) < 0)
            break;
        uint8_t *reply = NULL;
        size_t reply_len = 0;
        fuzz_check(plugin_host_handle(host, request, len, &reply, &reply_len) == 0,
                   "plugin_host_handle", "out of memory");
        choose_reply(request, len, &reply, &reply_len);
        int rc = channel_send(&c, reply, reply_len, channel_now_ms() + 10000);
        free(reply);
        if (rc < 0)
            break;
    }
    channel_close(&c);
    plugin_host_close(host);
    return NULL;
}

static int spawn(void *ctx, const char *name, int fd)
{
    (void)ctx;
    (void)name;
    if (host_count == MAX_HOSTS)
        return -EAGAIN;
    struct host_thread *t = &hosts[host_count];
    t->fd = fd;
    if (pthread_create(&t->thread, NULL, serve, t) != 0)
        return -EAGAIN;
    host_count++;
    return 0;
}

/* ---- the scheduler's side ---- */

/* A file for a text, through a memfd: the loaders read paths. Kept open for the process. */
static const char *memfd_path(const char *name, const char *text)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    fuzz_check(fd >= 0, "memfd_create", strerror(errno));
    size_t len = strlen(text);
    fuzz_check(write(fd, text, len) == (ssize_t)len, "write", strerror(errno));
    char *path = malloc(64);
    fuzz_check(path != NULL, "malloc", NULL);
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return path;
}

/* The uids of the pending pods of the sync, to find each one after the input. */
static char *pending_uids[16];

/* The cluster as the bridge's first sync: packed once. */
static uint8_t *sync_message(size_t *len, uint32_t *pending)
{
    struct sim_spec spec;
    struct kc_error err = {{0}};
    char *path = (char *)memfd_path("kcycle-fuzz-cluster", cluster_yaml);
    fuzz_check(simfile_load(path, "kcycle", &spec, &err) == 0, "simfile_load", err.message);
    free(path);
    uint32_t count = spec.node_count + spec.pod_count;
    Kcycle__V1__ClusterChange *changes = calloc(count, sizeof(*changes));
    Kcycle__V1__ClusterChange **list = calloc(count, sizeof(*list));
    fuzz_check(changes != NULL && list != NULL, "calloc", NULL);
    *pending = 0;
    for (uint32_t i = 0; i < count; i++) {
        kcycle__v1__cluster_change__init(&changes[i]);
        list[i] = &changes[i];
        if (i < spec.node_count) {
            changes[i].change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT;
            changes[i].node_put = node_to_proto(spec.nodes[i]);
        } else {
            const struct pod *pod = spec.pods[i - spec.node_count];
            changes[i].change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT;
            changes[i].pod_put = pod_to_proto(pod);
            if (pod->node_name == NULL) {
                fuzz_check(*pending < sizeof(pending_uids) / sizeof(pending_uids[0]) &&
                               (pending_uids[*pending] = strdup(pod->uid)) != NULL,
                           "pending_uids", NULL);
                ++*pending;
            }
        }
        fuzz_check(changes[i].node_put != NULL, "to_proto", NULL);
    }
    Kcycle__V1__Leadership leader = KCYCLE__V1__LEADERSHIP__INIT;
    leader.leader = true;
    Kcycle__V1__ToScheduler m = KCYCLE__V1__TO_SCHEDULER__INIT;
    m.sync_begin = m.sync_end = true;
    m.leadership = &leader;
    m.n_changes = count;
    m.changes = list;
    *len = kcycle__v1__to_scheduler__get_packed_size(&m);
    uint8_t *out = malloc(*len + 1);
    fuzz_check(out != NULL, "malloc", NULL);
    kcycle__v1__to_scheduler__pack(&m, out);
    for (uint32_t i = 0; i < count; i++) {
        if (i < spec.node_count)
            node_proto_free(changes[i].node_put);
        else
            pod_proto_free(changes[i].pod_put);
    }
    free(changes);
    free(list);
    simfile_free(&spec);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *config_path;
    static uint8_t *sync;
    static size_t sync_len;
    static uint32_t pending;
    if (config_path == NULL) {
        log_set_level(getenv("KCYCLE_FUZZ_LOG") != NULL ? KC_LOG_DEBUG : KC_LOG_ERROR);
        config_path = memfd_path("kcycle-fuzz-config", config_yaml);
        sync = sync_message(&sync_len, &pending);
        remote_set_spawn_hook(spawn, NULL);
    }
    if (size == 0)
        return 0;
    input.real_first = data[0] % 4;
    input.data = data + 1;
    input.size = size - 1;
    const char *record = getenv("KCYCLE_FUZZ_RECORD");
    input.record = record != NULL ? fopen(record, "wb") : NULL;
    if (input.record != NULL)
        fputc(0, input.record);

    struct bridge_client b;
    struct bridge_client_options opt = {.url = "inproc://kcycle-fuzz-reply",
                                        .config_path = config_path};
    struct kc_error err = {{0}};
    int rc = bridge_client_open(&b, &opt, &err);
    if (rc == 0) {
        bridge_client_feed_connect(&b, 0, 0); /* the sync message carries session 0 */
        fuzz_check(bridge_client_feed(&b, sync, sync_len, 32, NULL, NULL) != -EPROTO,
                   "bridge_client_feed", "the answer to the bridge does not decode");
        /* every pending pod is somewhere: still the scheduler's (queued, parked with a
         * reason, waiting or binding), or bound: a Bind plugin in a host may bind the pod
         * itself and answer success without asking for the binding, and then the pod is
         * assigned in the cache, no longer pending */
        uint32_t known = b.sched.pods.count;
        for (uint32_t i = 0; i < pending; i++) {
            const struct cache_pod *cp = cache_pod(&b.sched.cache, pending_uids[i]);
            bool bound = cp != NULL && !cp->assumed;
            fuzz_check(strmap_get(&b.sched.pods, pending_uids[i]) != NULL || bound, "scheduler",
                       "a pending pod lost after bad host replies");
        }
        /* and no pod placed for good or held on a node by a half-done cycle */
        fuzz_check_books(&b.sched);
        if (getenv("KCYCLE_FUZZ_VERBOSE") != NULL)
            fprintf(stderr, "reply: %u pending pods, %u assumed or assigned, %u hosts started\n",
                    known, b.sched.cache.pods.count, host_count);
    }
    else if (getenv("KCYCLE_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "reply: the scheduler did not open: %s\n", err.message);
    /* a host that fails its hello fails the open: that is a handled error, not a finding */
    bridge_client_close(&b);
    for (unsigned i = 0; i < host_count; i++)
        pthread_join(hosts[i].thread, NULL);
    host_count = 0;
    if (input.record != NULL)
        fclose(input.record);
    input.record = NULL;
    return 0;
}
