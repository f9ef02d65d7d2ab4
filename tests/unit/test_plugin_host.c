/* kcycle-plugin-host: a host serving on ipc in a thread, driven over a REQ socket as the
 * scheduler drives it. Its evaluation must equal the in-process scheduler's on the same cluster;
 * bad requests, bad plugins and a replica out of sync must get error replies, never a crash.
 * Preemption's what-if and the nominated pods of an evaluation are judged on node views. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <pthread.h>

#include "channel.h"
#include "evaluate.h"
#include "host.h"
#include "model.h"
#include "plugin.pb-c.h"
#include "proto_convert.h"
#include "remote.h"
#include "scheduler.h"
#include "tree.h"

#define NODE_COUNT 20
#define WANT 5
#define ROTATION 7
#define MIB (1ll << 20)

#define NODERESOURCES_PATH KC_PLUGIN_BUILD_DIR "/noderesources/noderesources.so"
#define DEFAULTBINDER_PATH KC_PLUGIN_BUILD_DIR "/defaultbinder/defaultbinder.so"
#define MISSING_PATH "/nonexistent/kcycle-test/missing.so"
#define DEFAULTPREEMPTION_PATH KC_PLUGIN_BUILD_DIR "/defaultpreemption/defaultpreemption.so"
#define PRIORITYSORT_PATH KC_PLUGIN_BUILD_DIR "/prioritysort/prioritysort.so"
#define RECORDERHOST_PATH KC_TEST_PLUGIN_DIR "/recorderhost.so"

/* ---- the cluster: 20 nodes of varied capacity, 0..2 running pods on each ---- */

static struct node *make_node(int i)
{
    struct node *n = node_new();
    char text[32];
    snprintf(text, sizeof(text), "node-%02d", i);
    n->name = strdup(text);
    snprintf(text, sizeof(text), "node-uid-%02d", i);
    n->uid = strdup(text);
    res_list_set(&n->allocatable, KC_RESOURCE_CPU, 2000 + (i % 4) * 1000);
    res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, (1 + i % 3) * 1024 * MIB);
    res_list_set(&n->allocatable, KC_RESOURCE_PODS, 110);
    return n;
}

static struct pod *make_pod(const char *name, const char *node, int64_t cpu, int64_t memory)
{
    struct pod *p = pod_new();
    char uid[64];
    snprintf(uid, sizeof(uid), "uid-%s", name);
    p->name = strdup(name);
    p->namespace = strdup("default");
    p->uid = strdup(uid);
    p->scheduler_name = strdup("kcycle");
    p->node_name = node != NULL ? strdup(node) : NULL;
    p->phase = node != NULL ? POD_RUNNING : POD_PENDING;
    p->containers = calloc(1, sizeof(*p->containers));
    p->container_count = 1;
    p->containers[0].name = strdup("main");
    res_list_set(&p->containers[0].requests, KC_RESOURCE_CPU, cpu);
    res_list_set(&p->containers[0].requests, KC_RESOURCE_MEMORY, memory);
    assert_int_equal(pod_finish(p), 0);
    return p;
}

/* Pod k (0-based) of node i, for k < i % 3. */
static struct pod *make_running_pod(int i, int k)
{
    char name[32], node[32];
    snprintf(name, sizeof(name), "busy-%02d-%d", i, k);
    snprintf(node, sizeof(node), "node-%02d", i);
    return make_pod(name, node, 300 + 100 * k, 256 * MIB * (k + 1));
}

static struct pod *make_pending_pod(const char *name)
{
    return make_pod(name, NULL, 1800, 1536 * MIB);
}

static void rotated_candidates(uint32_t *candidates)
{
    for (uint32_t i = 0; i < NODE_COUNT; i++)
        candidates[i] = (i + ROTATION) % NODE_COUNT;
}

/* ---- what the in-process scheduler computes ---- */

struct expected {
    int status;
    uint32_t processed, found;
    uint32_t feasible[NODE_COUNT];
    uint64_t rejectors; /* framework indices */
    char *reasons[CYCLE_MAX_REASONS];
    uint32_t counts[CYCLE_MAX_REASONS];
    uint32_t reason_count;
    uint32_t scored;               /* Score plugins with scores */
    int64_t scores[4][NODE_COUNT]; /* by Score plugin in phase order */
    uint64_t generation;
};

static int ignore_bind(void *ctx, const struct pod *pod, const char *node,
                       const struct kv_list *annotations)
{
    return 0;
}

static void evaluate_in_process(struct expected *x)
{
    struct plugin_config plugins[2] = {
        {.name = (char *)"noderesources",
         .path = (char *)NODERESOURCES_PATH,
         .weight = 1,
         .required = true,
         .args_json = (char *)"{}"},
        {.name = (char *)"defaultbinder",
         .path = (char *)DEFAULTBINDER_PATH,
         .weight = 1,
         .required = true,
         .args_json = (char *)"{}"},
    };
    struct config cfg = {
        .scheduler_name = (char *)"kcycle",
        .plugins = plugins,
        .plugin_count = 2,
        .seed = 1,
        .parallelism = 1,
        .pod_initial_backoff_ms = 1000,
        .pod_max_backoff_ms = 10000,
        .unschedulable_flush_ms = 300000,
    };
    struct scheduler s;
    struct scheduler_sink sink = {.bind = ignore_bind};
    struct kc_error err = {{0}};
    if (scheduler_open(&s, &cfg, NULL, &sink, NULL, &err) != 0)
        fail_msg("scheduler_open: %s", err.message);
    for (int i = 0; i < NODE_COUNT; i++)
        assert_int_equal(scheduler_node_add(&s, make_node(i)), 0);
    for (int i = 0; i < NODE_COUNT; i++)
        for (int k = 0; k < i % 3; k++)
            assert_int_equal(scheduler_pod_add(&s, make_running_pod(i, k)), 0);
    struct pod *pod = make_pending_pod("pending");
    struct kc_cycle *cycle = evaluation_cycle_new(&s, pod);
    uint32_t candidates[NODE_COUNT];
    rotated_candidates(candidates);
    struct evaluation e;
    assert_int_equal(scheduler_evaluate(&s, cycle, candidates, NODE_COUNT, WANT, true, &e), 0);
    memset(x, 0, sizeof(*x));
    x->status = (int)e.status;
    x->processed = e.processed;
    x->found = e.found;
    x->rejectors = e.rejectors;
    for (uint32_t i = 0; i < e.found; i++)
        x->feasible[i] = s.feasible[i]->index;
    for (uint32_t i = 0; i < s.reason_count; i++) {
        x->reasons[i] = strdup(s.reasons[i].text);
        x->counts[i] = s.reasons[i].count;
    }
    x->reason_count = s.reason_count;
    for (uint32_t k = 0; k < s.fw->phase_count[PHASE_SCORE]; k++) {
        if (!(e.scored & (1ull << s.fw->phase[PHASE_SCORE][k]->index)))
            continue;
        assert_true(x->scored < 4);
        for (uint32_t i = 0; i < e.found; i++)
            x->scores[x->scored][i] = evaluation_score(&s, k, i);
        x->scored++;
    }
    x->generation = s.cache.generation;
    evaluation_clear(&e);
    evaluation_cycle_free(cycle);
    pod_free(pod);
    scheduler_close(&s);
}

static void expected_free(struct expected *x)
{
    for (uint32_t i = 0; i < x->reason_count; i++)
        free(x->reasons[i]);
}

/* ---- a host in a thread and a socketpair to it, as the scheduler gives one ---- */

struct client {
    struct plugin_host *host;
    pthread_t thread;
    struct channel channel;
    uint64_t next_id;
};

static void *serve(void *host)
{
    plugin_host_serve(host);
    return NULL;
}

static struct client *client_start(void)
{
    struct client *c = calloc(1, sizeof(*c));
    int ends[2];
    assert_int_equal(channel_pair(ends), 0);
    struct plugin_host_options opts = {.fd = ends[1]};
    struct kc_error err = {{0}};
    if (plugin_host_open(&opts, &c->host, &err) != 0)
        fail_msg("plugin_host_open: %s", err.message);
    channel_init(&c->channel, ends[0]);
    assert_int_equal(pthread_create(&c->thread, NULL, serve, c->host), 0);
    c->next_id = 1;
    return c;
}

/* Stop the host; counts (when not NULL) gets what its replica applied. */
static void client_stop_counting(struct client *c, struct plugin_host_counts *counts)
{
    channel_close(&c->channel); /* the host sees the end of its channel and returns */
    assert_int_equal(pthread_join(c->thread, NULL), 0);
    if (counts != NULL)
        plugin_host_counts(c->host, counts);
    plugin_host_close(c->host);
    free(c);
}

static void client_stop(struct client *c)
{
    client_stop_counting(c, NULL);
}

static Kcycle__V1__Reply *send_bytes(struct client *c, const void *data, size_t len)
{
    int64_t deadline = channel_now_ms() + 20000;
    assert_int_equal(channel_send(&c->channel, data, len, deadline), 0);
    const uint8_t *buf = NULL;
    size_t n = 0;
    assert_int_equal(channel_recv(&c->channel, CHANNEL_REPLY_MAX_BYTES, deadline, &buf, &n), 0);
    Kcycle__V1__Reply *reply = kcycle__v1__reply__unpack(NULL, n, buf);
    assert_non_null(reply);
    return reply;
}

static Kcycle__V1__Reply *roundtrip(struct client *c, Kcycle__V1__Request *req)
{
    req->id = c->next_id++;
    size_t len = kcycle__v1__request__get_packed_size(req);
    uint8_t *buf = malloc(len + 1);
    kcycle__v1__request__pack(req, buf);
    Kcycle__V1__Reply *reply = send_bytes(c, buf, len);
    free(buf);
    assert_int_equal(reply->id, req->id);
    return reply;
}

static void expect_error(Kcycle__V1__Reply *reply, const char *part)
{
    if (strstr(reply->error, part) == NULL)
        fail_msg("expected an error with '%s', got '%s'", part, reply->error);
    assert_int_equal(reply->result_case, KCYCLE__V1__REPLY__RESULT__NOT_SET);
    kcycle__v1__reply__free_unpacked(reply, NULL);
}

static void expect_ok(Kcycle__V1__Reply *reply, Kcycle__V1__Reply__ResultCase result)
{
    if (reply->error[0] != '\0')
        fail_msg("unexpected error reply: %s", reply->error);
    assert_int_equal(reply->result_case, result);
}

/* A phase reply (not a request error) with this status; message_part, when set, in its message. */
static void expect_phase(Kcycle__V1__Reply *reply, int status, const char *message_part)
{
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_PHASE);
    assert_int_equal(reply->phase->status, status);
    if (message_part != NULL && strstr(reply->phase->message, message_part) == NULL)
        fail_msg("expected '%s' in the phase message, got '%s'", message_part,
                 reply->phase->message);
    kcycle__v1__reply__free_unpacked(reply, NULL);
}

static Kcycle__V1__Reply *hello(struct client *c, const char *const *names,
                                const char *const *paths, const char *const *args, size_t n)
{
    Kcycle__V1__PluginSpec specs[4], *spec_ptrs[4];
    assert_true(n <= 4);
    for (size_t i = 0; i < n; i++) {
        kcycle__v1__plugin_spec__init(&specs[i]);
        specs[i].name = (char *)names[i];
        specs[i].path = (char *)paths[i];
        if (args != NULL && args[i] != NULL)
            specs[i].args_json = (char *)args[i];
        spec_ptrs[i] = &specs[i];
    }
    Kcycle__V1__Hello call = KCYCLE__V1__HELLO__INIT;
    call.abi_version = KC_ABI_VERSION;
    call.plugins = spec_ptrs;
    call.n_plugins = n;
    call.parallelism = 1;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
    req.hello = &call;
    return roundtrip(c, &req);
}

/* The host of the main scenario: a plugin that cannot load first, so the Hello's indices
 * differ from the framework's, then noderesources and defaultbinder. */
static Kcycle__V1__Reply *hello_standard(struct client *c)
{
    const char *names[] = {"missing", "noderesources", "defaultbinder"};
    const char *paths[] = {MISSING_PATH, NODERESOURCES_PATH, DEFAULTBINDER_PATH};
    return hello(c, names, paths, NULL, 3);
}

static Kcycle__V1__Reply *sync_request(struct client *c, uint64_t generation, bool snapshot,
                                       Kcycle__V1__Delta **deltas, size_t n)
{
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    req.snapshot = snapshot;
    req.deltas = deltas;
    req.n_deltas = n;
    req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    req.sync = true;
    return roundtrip(c, &req);
}

/* Sends the cluster as a snapshot; returns the replica's generation afterwards. */
static uint64_t send_snapshot(struct client *c, uint64_t generation)
{
    struct node *nodes[NODE_COUNT];
    struct pod *pods[NODE_COUNT * 2];
    Kcycle__V1__Node *node_msgs[NODE_COUNT];
    Kcycle__V1__Pod *pod_msgs[NODE_COUNT * 2];
    Kcycle__V1__Delta deltas[NODE_COUNT * 3], *delta_ptrs[NODE_COUNT * 3];
    size_t n = 0, pod_count = 0;
    for (int i = 0; i < NODE_COUNT; i++) {
        nodes[i] = make_node(i);
        node_msgs[i] = node_to_proto(nodes[i]);
        assert_non_null(node_msgs[i]);
        kcycle__v1__delta__init(&deltas[n]);
        deltas[n].change_case = KCYCLE__V1__DELTA__CHANGE_NODE_PUT;
        deltas[n].node_put = node_msgs[i];
        delta_ptrs[n] = &deltas[n];
        n++;
    }
    for (int i = 0; i < NODE_COUNT; i++) {
        for (int k = 0; k < i % 3; k++) {
            pods[pod_count] = make_running_pod(i, k);
            pod_msgs[pod_count] = pod_to_proto(pods[pod_count]);
            assert_non_null(pod_msgs[pod_count]);
            kcycle__v1__delta__init(&deltas[n]);
            deltas[n].change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
            deltas[n].pod_put = pod_msgs[pod_count];
            delta_ptrs[n] = &deltas[n];
            n++;
            pod_count++;
        }
    }
    Kcycle__V1__Reply *reply = sync_request(c, generation, true, delta_ptrs, n);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_SYNCED);
    assert_true(reply->synced);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    for (size_t i = 0; i < pod_count; i++) {
        pod_proto_free(pod_msgs[i]);
        pod_free(pods[i]);
    }
    for (int i = 0; i < NODE_COUNT; i++) {
        node_proto_free(node_msgs[i]);
        node_free(nodes[i]);
    }
    return generation;
}

/* An evaluation of a pending pod: over candidates, or (candidates NULL) every node from start. */
/* One Evaluate request at generation, answered. */
static Kcycle__V1__Reply *send_evaluate(struct client *c, uint64_t generation,
                                        Kcycle__V1__Evaluate *call)
{
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE;
    req.evaluate = call;
    return roundtrip(c, &req);
}

/* The scheduler's attempt id that evaluate_on and what_if send (0: not said). */
static uint64_t attempt_sent;

static Kcycle__V1__Reply *evaluate_on(struct client *c, uint64_t generation, const char *name,
                                      uint32_t *candidates, size_t count, uint32_t start)
{
    struct pod *pod = make_pending_pod(name);
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    Kcycle__V1__Evaluate call = KCYCLE__V1__EVALUATE__INIT;
    call.pod = msg;
    call.attempt = attempt_sent;
    call.candidates = candidates;
    call.n_candidates = candidates != NULL ? count : 0;
    call.all_nodes = candidates == NULL;
    call.start = start;
    call.want = WANT;
    call.score = true;
    Kcycle__V1__Reply *reply = send_evaluate(c, generation, &call);
    pod_proto_free(msg);
    pod_free(pod);
    return reply;
}

static Kcycle__V1__Reply *evaluate(struct client *c, uint64_t generation, const char *name)
{
    uint32_t candidates[NODE_COUNT];
    rotated_candidates(candidates);
    return evaluate_on(c, generation, name, candidates, NODE_COUNT, 0);
}

/* A phase call; with assume_node set, the request also carries the Assume delta. */
static Kcycle__V1__Reply *phase(struct client *c, uint64_t generation, Kcycle__V1__Phase which,
                                const char *pod_name, const char *node, bool assume)
{
    struct pod *pod = make_pending_pod(pod_name);
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    Kcycle__V1__Assume assume_msg = KCYCLE__V1__ASSUME__INIT;
    assume_msg.pod = msg;
    assume_msg.node = (char *)node;
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT, *delta_ptr = &delta;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_ASSUME;
    delta.assume = &assume_msg;
    Kcycle__V1__PhaseCall call = KCYCLE__V1__PHASE_CALL__INIT;
    call.phase = which;
    call.pod_uid = pod->uid;
    call.node = (char *)node;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    if (assume) {
        req.deltas = &delta_ptr;
        req.n_deltas = 1;
    }
    req.call_case = KCYCLE__V1__REQUEST__CALL_PHASE;
    req.phase = &call;
    Kcycle__V1__Reply *reply = roundtrip(c, &req);
    pod_proto_free(msg);
    pod_free(pod);
    return reply;
}

/* ---- tests ---- */

static void test_hello_reports_each_plugin_and_a_bad_path(void **state)
{
    struct client *c = client_start();
    Kcycle__V1__Reply *reply = hello_standard(c);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_HELLO);
    assert_int_equal(reply->hello->n_plugins, 3);
    Kcycle__V1__PluginInfo **info = reply->hello->plugins;
    assert_string_equal(info[0]->name, "missing");
    if (strstr(info[0]->error, MISSING_PATH) == NULL)
        fail_msg("the load error should name the file: '%s'", info[0]->error);
    assert_int_equal(info[0]->phases, 0);
    assert_string_equal(info[1]->name, "noderesources");
    assert_string_equal(info[1]->error, "");
    assert_int_equal(info[1]->abi_major, KC_ABI_MAJOR);
    assert_int_equal(info[1]->phases,
                     KCYCLE__V1__PHASE__PHASE_PRE_FILTER | KCYCLE__V1__PHASE__PHASE_FILTER |
                         KCYCLE__V1__PHASE__PHASE_PRE_SCORE | KCYCLE__V1__PHASE__PHASE_SCORE);
    assert_true(info[1]->requeue_events != 0);
    assert_string_equal(info[2]->name, "defaultbinder");
    assert_int_equal(info[2]->phases, KCYCLE__V1__PHASE__PHASE_BIND);
    assert_true(info[2]->version[0] != '\0');
    kcycle__v1__reply__free_unpacked(reply, NULL);

    expect_error(hello_standard(c), "second hello");
    client_stop(c);
}

static void test_evaluation_equals_the_in_process_scheduler(void **state)
{
    struct expected x;
    evaluate_in_process(&x);
    /* the cluster is built so that some nodes fail for cpu or memory before WANT fit */
    assert_int_equal(x.status, KC_SUCCESS);
    assert_int_equal(x.found, WANT);
    assert_true(x.processed > WANT);
    assert_true(x.reason_count > 0);
    assert_true(x.scored > 0);

    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, x.generation);
    Kcycle__V1__Reply *reply = evaluate(c, generation, "pending");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    Kcycle__V1__EvaluateReply *r = reply->evaluate;
    assert_int_equal(r->status, x.status);
    assert_int_equal(r->processed, x.processed);
    assert_int_equal(r->n_feasible, x.found);
    for (uint32_t i = 0; i < x.found; i++)
        assert_int_equal(r->feasible[i], x.feasible[i]);
    /* noderesources is framework plugin 0 in both, Hello plugin 1 in the host */
    assert_int_equal(x.rejectors, 1);
    assert_int_equal(r->rejectors, 1u << 1);
    assert_int_equal(r->n_reasons, x.reason_count);
    for (uint32_t i = 0; i < x.reason_count; i++) {
        assert_string_equal(r->reasons[i]->text, x.reasons[i]);
        assert_int_equal(r->reasons[i]->count, x.counts[i]);
    }
    assert_int_equal(r->n_scores, x.scored);
    assert_int_equal(r->scores[0]->plugin, 1);
    for (uint32_t k = 0; k < x.scored; k++) {
        assert_int_equal(r->scores[k]->n_scores, x.found);
        for (uint32_t i = 0; i < x.found; i++)
            assert_int_equal(r->scores[k]->scores[i], x.scores[k][i]);
    }
    char node[32];
    snprintf(node, sizeof(node), "node-%02u", r->feasible[0]);
    kcycle__v1__reply__free_unpacked(reply, NULL);

    /* Reserve with the Assume delta in the same request, then Bind and PostBind */
    reply = phase(c, generation + 1, KCYCLE__V1__PHASE__PHASE_RESERVE, "pending", node, true);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_PHASE);
    assert_int_equal(reply->phase->status, KC_SUCCESS);
    assert_false(reply->phase->bind_requested);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    generation++;

    reply = phase(c, generation, KCYCLE__V1__PHASE__PHASE_BIND, "pending", node, false);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_PHASE);
    assert_int_equal(reply->phase->status, KC_SUCCESS);
    assert_true(reply->phase->bind_requested);
    kcycle__v1__reply__free_unpacked(reply, NULL);

    reply = phase(c, generation, KCYCLE__V1__PHASE__PHASE_POST_BIND, "pending", node, false);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_PHASE);
    assert_int_equal(reply->phase->status, KC_SUCCESS);
    kcycle__v1__reply__free_unpacked(reply, NULL);

    /* PostBind ended the pod's cycle in the host; while the pod is still assumed in the
     * replica a later phase starts a new cycle on the assumed copy (as for a host that
     * evaluates nothing, a binder) */
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_BIND, "pending", node, false),
                 KC_SUCCESS, NULL);
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_UNRESERVE, "pending", node, false),
                 KC_SUCCESS, NULL);

    /* the assumed pod counts on its node: the same pod no longer fits there as before */
    reply = evaluate(c, generation, "second");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    for (size_t i = 0; i < reply->evaluate->n_feasible; i++)
        assert_int_not_equal(reply->evaluate->feasible[i], x.feasible[0]);
    kcycle__v1__reply__free_unpacked(reply, NULL);

    expect_error(sync_request(c, generation + 100, false, NULL, 0),
                 "replica out of sync: scheduler generation");
    /* only a harness (Hello.capture_logs) may skip the generation check */
    Kcycle__V1__Request adopt = KCYCLE__V1__REQUEST__INIT;
    adopt.generation = generation + 100;
    adopt.adopt_generation = true;
    adopt.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    adopt.sync = true;
    expect_error(roundtrip(c, &adopt), "adopt_generation is only for a test harness");
    reply = sync_request(c, generation, false, NULL, 0); /* the replica is unharmed */
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    client_stop(c);
    expected_free(&x);
}

static void test_pods_evaluated_but_not_chosen_are_dropped(void **state)
{
    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, 42);
    Kcycle__V1__Reply *reply = evaluate(c, generation, "first");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    char node[32];
    snprintf(node, sizeof(node), "node-%02u", reply->evaluate->feasible[0]);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    reply = evaluate(c, generation, "second");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    kcycle__v1__reply__free_unpacked(reply, NULL);

    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_RESERVE, "first", node, false),
                 KC_ERROR, "no evaluation");
    expect_phase(phase(c, generation + 1, KCYCLE__V1__PHASE__PHASE_RESERVE, "second", node, true),
                 KC_SUCCESS, NULL);
    generation++;
    /* a chosen pod survives the next evaluation and is freed by Unreserve */
    reply = evaluate(c, generation, "third");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_PERMIT, "second", node, false),
                 KC_SUCCESS, NULL);
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_UNRESERVE, "second", node, false),
                 KC_SUCCESS, NULL);
    /* still assumed (no Forget yet): a phase call starts a cycle on the assumed copy */
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_PRE_BIND, "second", node, false),
                 KC_SUCCESS, NULL);

    /* Forget undoes the assumption: the replica is back at the snapshot's load */
    Kcycle__V1__Delta forget = KCYCLE__V1__DELTA__INIT, *forget_ptr = &forget;
    forget.change_case = KCYCLE__V1__DELTA__CHANGE_FORGET;
    forget.forget = (char *)"uid-second";
    reply = sync_request(c, generation + 1, false, &forget_ptr, 1);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    generation++;

    /* a host without Unreserve or PostBind plugins hears of the end of an attempt from the
     * deltas: Forget after a failure, the pod seen bound after a success */
    reply = evaluate(c, generation, "fourth");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    expect_phase(phase(c, generation + 1, KCYCLE__V1__PHASE__PHASE_RESERVE, "fourth", node, true),
                 KC_SUCCESS, NULL);
    forget.forget = (char *)"uid-fourth";
    reply = sync_request(c, generation + 2, false, &forget_ptr, 1);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    generation += 2;
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_BIND, "fourth", node, false),
                 KC_ERROR, "no evaluation");

    reply = evaluate(c, generation, "fifth");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    expect_phase(phase(c, generation + 1, KCYCLE__V1__PHASE__PHASE_RESERVE, "fifth", node, true),
                 KC_SUCCESS, NULL);
    expect_phase(phase(c, generation + 1, KCYCLE__V1__PHASE__PHASE_BIND, "fifth", node, false),
                 KC_SUCCESS, NULL);
    /* bound: the pod comes back assigned, which confirms the assumption (two cache changes) */
    struct pod *bound = make_pod("fifth", node, 1800, 1536 * MIB);
    Kcycle__V1__Pod *bound_msg = pod_to_proto(bound);
    Kcycle__V1__Delta put = KCYCLE__V1__DELTA__INIT, *put_ptr = &put;
    put.change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
    put.pod_put = bound_msg;
    reply = sync_request(c, generation + 3, false, &put_ptr, 1);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    pod_proto_free(bound_msg);
    pod_free(bound);
    generation += 3;
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_POST_BIND, "fifth", node, false),
                 KC_SUCCESS, NULL);
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_PRE_BIND, "fifth", node, false),
                 KC_ERROR, "no evaluation");
    client_stop(c);
}

static void test_permit_wait_reports_hello_indices(void **state)
{
    struct client *c = client_start();
    const char *names[] = {"initfail", "recorder", "defaultbinder"};
    const char *paths[] = {KC_TEST_PLUGIN_DIR "/initfail.so", KC_TEST_PLUGIN_DIR "/recorder.so",
                           DEFAULTBINDER_PATH};
    const char *args[] = {NULL, "{\"permit\": \"wait\", \"timeout_ms\": 2500}", NULL};
    Kcycle__V1__Reply *reply = hello(c, names, paths, args, 3);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_HELLO);
    if (strstr(reply->hello->plugins[0]->error, "init failed") == NULL)
        fail_msg("initfail: '%s'", reply->hello->plugins[0]->error);
    assert_true(reply->hello->plugins[1]->phases & KCYCLE__V1__PHASE__PHASE_PERMIT);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    uint64_t generation = send_snapshot(c, 7);
    reply = evaluate(c, generation, "waiter");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    char node[32];
    snprintf(node, sizeof(node), "node-%02u", reply->evaluate->feasible[0]);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    reply = phase(c, generation + 1, KCYCLE__V1__PHASE__PHASE_RESERVE, "waiter", node, true);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_PHASE);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    reply = phase(c, generation + 1, KCYCLE__V1__PHASE__PHASE_PERMIT, "waiter", node, false);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_PHASE);
    assert_int_equal(reply->phase->status, KC_WAIT);
    assert_int_equal(reply->phase->timeout_ms, 2500);
    assert_int_equal(reply->phase->waiting, 1u << 1);
    assert_int_equal(reply->phase->plugin, 1);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    client_stop(c);
}

static void test_garbage_and_early_requests_get_error_replies(void **state)
{
    struct client *c = client_start();
    /* field 4 (deltas) says 80 bytes follow; one does */
    static const uint8_t garbage[] = {0x22, 0x50, 0x01};
    expect_error(send_bytes(c, garbage, sizeof(garbage)), "does not decode");
    expect_error(sync_request(c, 0, false, NULL, 0), "no hello yet");
    expect_error(evaluate(c, 0, "early"), "no hello yet");
    /* the host still serves */
    Kcycle__V1__Reply *reply = hello_standard(c);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_HELLO);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    Kcycle__V1__Request empty = KCYCLE__V1__REQUEST__INIT;
    expect_error(roundtrip(c, &empty), "no call");
    client_stop(c);
}

static void test_bad_requests_after_the_snapshot(void **state)
{
    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, 5);
    expect_error(sync_request(c, generation, true, NULL, 0), "needs a fresh host");

    /* a candidate beyond the replica's nodes */
    struct pod *pod = make_pending_pod("far");
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    uint32_t candidates[] = {3, NODE_COUNT};
    Kcycle__V1__Evaluate call = KCYCLE__V1__EVALUATE__INIT;
    call.pod = msg;
    call.candidates = candidates;
    call.n_candidates = 2;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE;
    req.evaluate = &call;
    expect_error(roundtrip(c, &req), "the replica has 20 nodes");
    pod_proto_free(msg);

    /* an unassigned pod in pod_put: the replica is no longer trusted */
    msg = pod_to_proto(pod);
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT, *delta_ptr = &delta;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
    delta.pod_put = msg;
    expect_error(sync_request(c, generation + 2, false, &delta_ptr, 1), "without node_name");
    expect_error(sync_request(c, generation + 2, false, NULL, 0), "restart the host");
    pod_proto_free(msg);
    pod_free(pod);
    client_stop(c);
}

/* The plugin test harness's calls (docs/plugin-testing.md): a host whose hello set
 * capture_logs serves QueueSort and records the preemption PostFilter chose; a scheduler's
 * host refuses the one and cannot preempt (kc_preempt answers -EOPNOTSUPP there). */
static void harness_calls_in(bool harness)
{
    struct client *c = client_start();
    const char *names[] = {"noderesources", "defaultpreemption", "prioritysort"};
    const char *paths[] = {NODERESOURCES_PATH, DEFAULTPREEMPTION_PATH, PRIORITYSORT_PATH};
    Kcycle__V1__PluginSpec specs[3], *spec_ptrs[3];
    for (int i = 0; i < 3; i++) {
        kcycle__v1__plugin_spec__init(&specs[i]);
        specs[i].name = (char *)names[i];
        specs[i].path = (char *)paths[i];
        spec_ptrs[i] = &specs[i];
    }
    Kcycle__V1__Hello call = KCYCLE__V1__HELLO__INIT;
    call.abi_version = KC_ABI_VERSION;
    call.plugins = spec_ptrs;
    call.n_plugins = 3;
    call.capture_logs = harness;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
    req.hello = &call;
    Kcycle__V1__Reply *reply = roundtrip(c, &req);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_HELLO);
    for (int i = 0; i < 3; i++)
        assert_string_equal(reply->hello->plugins[i]->error, "");
    kcycle__v1__reply__free_unpacked(reply, NULL);
    uint64_t generation = send_snapshot(c, 5);

    /* 4800m and 1.5 GiB fit no node: node-07, -11 and -19 (5000m) only without their pods */
    struct pod *urgent = make_pod("urgent", NULL, 4800, 1536 * MIB);
    struct pod *later = make_pod("later", NULL, 100, MIB);
    urgent->priority = 100;
    Kcycle__V1__Pod *urgent_msg = pod_to_proto(urgent), *later_msg = pod_to_proto(later);
    Kcycle__V1__QueueCall queue = KCYCLE__V1__QUEUE_CALL__INIT;
    queue.kind = KCYCLE__V1__QUEUE_CALL__KIND__KIND_LESS;
    queue.pod = urgent_msg;
    queue.other = later_msg;
    Kcycle__V1__Request less = KCYCLE__V1__REQUEST__INIT;
    less.generation = generation;
    less.call_case = KCYCLE__V1__REQUEST__CALL_QUEUE;
    less.queue = &queue;
    reply = roundtrip(c, &less);
    if (harness) {
        expect_ok(reply, KCYCLE__V1__REPLY__RESULT_QUEUE);
        assert_true(reply->queue->less); /* the higher priority first */
        assert_string_equal(reply->queue->plugin, "prioritysort");
        kcycle__v1__reply__free_unpacked(reply, NULL);
    } else {
        expect_error(reply, "queue calls are only for a test harness");
    }

    Kcycle__V1__Evaluate ev = KCYCLE__V1__EVALUATE__INIT;
    ev.pod = urgent_msg;
    ev.all_nodes = true;
    Kcycle__V1__Request eval = KCYCLE__V1__REQUEST__INIT;
    eval.generation = generation;
    eval.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE;
    eval.evaluate = &ev;
    reply = roundtrip(c, &eval);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    assert_int_equal(reply->evaluate->n_feasible, 0);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    Kcycle__V1__PhaseCall pc = KCYCLE__V1__PHASE_CALL__INIT;
    pc.phase = KCYCLE__V1__PHASE__PHASE_POST_FILTER;
    pc.pod_uid = urgent->uid;
    Kcycle__V1__Request post = KCYCLE__V1__REQUEST__INIT;
    post.generation = generation;
    post.call_case = KCYCLE__V1__REQUEST__CALL_PHASE;
    post.phase = &pc;
    reply = roundtrip(c, &post);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_PHASE);
    if (harness) {
        assert_int_equal(reply->phase->status, KC_SUCCESS);
        assert_true(reply->phase->preempted);
        assert_string_equal(reply->phase->nominated_node, "node-07");
        assert_int_equal(reply->phase->n_victims, 1);
        assert_string_equal(reply->phase->victims[0], "default/busy-07-0");
    } else {
        assert_int_not_equal(reply->phase->status, KC_SUCCESS);
        assert_false(reply->phase->preempted);
        assert_int_equal(reply->phase->n_victims, 0);
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
    pod_proto_free(urgent_msg);
    pod_proto_free(later_msg);
    pod_free(urgent);
    pod_free(later);
    client_stop(c);
}

/* A harness hello whose scheduler_open fails after a plugin's init reported an object status
 * (two QueueSort plugins refuse the framework after every init ran): the status lived in that
 * call's scratch, so the next hello's reply must hold its own statuses only. */
static Kcycle__V1__Reply *harness_hello(struct client *c, const char *status_name, bool twice)
{
    char args[96];
    snprintf(args, sizeof(args), "{\"status_on_init\": \"%s\"}", status_name);
    const char *names[] = {"recorderhost", "prioritysort", "prioritysort"};
    const char *paths[] = {RECORDERHOST_PATH, PRIORITYSORT_PATH, PRIORITYSORT_PATH};
    Kcycle__V1__PluginSpec specs[3], *spec_ptrs[3];
    for (int i = 0; i < 3; i++) {
        kcycle__v1__plugin_spec__init(&specs[i]);
        specs[i].name = (char *)names[i];
        specs[i].path = (char *)paths[i];
        specs[i].args_json = i == 0 ? args : (char *)"{}";
        spec_ptrs[i] = &specs[i];
    }
    Kcycle__V1__Hello call = KCYCLE__V1__HELLO__INIT;
    call.abi_version = KC_ABI_VERSION;
    call.plugins = spec_ptrs;
    call.n_plugins = twice ? 3 : 2;
    call.capture_logs = true;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
    req.hello = &call;
    return roundtrip(c, &req);
}

static void test_a_failed_harness_hello_forgets_its_object_statuses(void **state)
{
    (void)state;
    struct client *c = client_start();
    expect_error(harness_hello(c, "first", true), "both implement QueueSort");
    Kcycle__V1__Reply *reply = harness_hello(c, "second", false);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_HELLO);
    assert_int_equal(reply->n_object_statuses, 1);
    assert_string_equal(reply->object_statuses[0]->kind, "RecorderInit");
    assert_string_equal(reply->object_statuses[0]->name, "second");
    assert_string_equal(reply->object_statuses[0]->status_json, "{\"init\":true}");
    kcycle__v1__reply__free_unpacked(reply, NULL);
    client_stop(c);
}

/* PluginSpec.queue_sort_off is the harness's (kc_harness_options.queue_sort_off): the
 * scheduler runs QueueSort itself and never sends it, so a scheduler's host refuses a hello
 * with it; a harness host leaves that plugin's QueueSort out, and two sorters load. */
static Kcycle__V1__Reply *two_sorters_hello(struct client *c, bool harness)
{
    Kcycle__V1__PluginSpec specs[2], *spec_ptrs[2];
    for (int i = 0; i < 2; i++) {
        kcycle__v1__plugin_spec__init(&specs[i]);
        specs[i].name = (char *)"prioritysort";
        specs[i].path = (char *)PRIORITYSORT_PATH;
        spec_ptrs[i] = &specs[i];
    }
    specs[1].queue_sort_off = true;
    Kcycle__V1__Hello call = KCYCLE__V1__HELLO__INIT;
    call.abi_version = KC_ABI_VERSION;
    call.plugins = spec_ptrs;
    call.n_plugins = 2;
    call.capture_logs = harness;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
    req.hello = &call;
    return roundtrip(c, &req);
}

static void test_only_a_harness_host_leaves_a_queue_sort_out(void **state)
{
    (void)state;
    struct client *c = client_start();
    expect_error(two_sorters_hello(c, false),
                 "plugin prioritysort has queue_sort_off, which only a test harness");
    client_stop(c);
    c = client_start();
    Kcycle__V1__Reply *reply = two_sorters_hello(c, true);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_HELLO);
    assert_string_equal(reply->hello->plugins[0]->error, "");
    assert_string_equal(reply->hello->plugins[1]->error, "");
    kcycle__v1__reply__free_unpacked(reply, NULL);
    client_stop(c);
}

static void test_only_a_harness_host_serves_queue_calls_and_records_preemption(void **state)
{
    (void)state;
    harness_calls_in(false);
    harness_calls_in(true);
}

/* ---- a group's members in one request (EvaluateGroup) ---- */

#define GROUP_SIZE 4

/* The weighted total (weights 1) of feasible node i of a full evaluation reply. */
static int64_t total_of(const Kcycle__V1__EvaluateReply *r, size_t i)
{
    int64_t total = 0;
    for (size_t k = 0; k < r->n_scores; k++) {
        int64_t score = r->scores[k]->scores[i];
        total += score < 0 ? 0 : score > 100 ? 100 : score;
    }
    return total;
}

/* Each member of a group request is evaluated as it would be alone after the members before it
 * were assumed on the nodes the host chose; each choice has the highest total; member 1 asked
 * for a pick gets the choice instead of the lists; and the host's replica is left as it was
 * (its generation too), for the scheduler's own assumptions to come as deltas. */
static void test_group_members_see_the_ones_placed_before_them(void **state)
{
    struct client *group = client_start(), *alone = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(group), NULL);
    kcycle__v1__reply__free_unpacked(hello_standard(alone), NULL);
    uint64_t generation = send_snapshot(group, 100);
    assert_int_equal(send_snapshot(alone, 100), generation);

    char names[GROUP_SIZE][16];
    struct pod *pods[GROUP_SIZE];
    Kcycle__V1__Evaluate members[GROUP_SIZE], *member_ptrs[GROUP_SIZE];
    for (int k = 0; k < GROUP_SIZE; k++) {
        snprintf(names[k], sizeof(names[k]), "member-%d", k);
        pods[k] = make_pending_pod(names[k]);
        kcycle__v1__evaluate__init(&members[k]);
        members[k].pod = pod_to_proto(pods[k]);
        members[k].all_nodes = true;
        members[k].start = ROTATION;
        members[k].want = WANT;
        members[k].score = true;
        members[k].pick = k == 1;
        member_ptrs[k] = &members[k];
    }
    int64_t weights[3] = {1, 1, 1};
    Kcycle__V1__EvaluateGroup call = KCYCLE__V1__EVALUATE_GROUP__INIT;
    call.members = member_ptrs;
    call.n_members = GROUP_SIZE;
    call.rng = 7;
    call.weights = weights;
    call.n_weights = 3;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE_GROUP;
    req.evaluate_group = &call;
    Kcycle__V1__Reply *reply = roundtrip(group, &req);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE_GROUP);
    const Kcycle__V1__EvaluateGroupReply *g = reply->evaluate_group;
    assert_int_equal(g->n_members, GROUP_SIZE);
    assert_int_equal(g->n_chosen, GROUP_SIZE);
    assert_int_equal(g->n_starts, GROUP_SIZE);

    uint32_t start = ROTATION;
    uint64_t rng = call.rng;
    int placed = 0;
    for (int k = 0; k < GROUP_SIZE; k++) {
        assert_int_equal(g->starts[k], start);
        Kcycle__V1__Reply *ref = evaluate_on(alone, generation + placed, names[k], NULL, 0, start);
        expect_ok(ref, KCYCLE__V1__REPLY__RESULT_EVALUATE);
        const Kcycle__V1__EvaluateReply *want = ref->evaluate, *got = g->members[k];
        assert_int_equal(got->status, want->status);
        assert_int_equal(got->processed, want->processed);
        assert_int_equal(got->n_reasons, want->n_reasons);
        for (size_t i = 0; i < want->n_reasons; i++) {
            assert_string_equal(got->reasons[i]->text, want->reasons[i]->text);
            assert_int_equal(got->reasons[i]->count, want->reasons[i]->count);
        }
        if (want->n_feasible == 0) {
            assert_int_equal(g->chosen[k], -1);
            kcycle__v1__reply__free_unpacked(ref, NULL);
            continue;
        }
        /* the choice: a node with the highest total */
        int64_t best = 0, chosen_total = -1;
        for (size_t i = 0; i < want->n_feasible; i++) {
            int64_t t = total_of(want, i);
            best = t > best ? t : best;
            if ((int32_t)want->feasible[i] == g->chosen[k])
                chosen_total = t;
        }
        assert_int_equal(chosen_total, best);
        /* the very node the scheduler's selection picks, its ties broken by the group's
         * generator as the scheduler's would be, member after member */
        if (want->n_feasible > 1) {
            int64_t totals[NODE_COUNT];
            for (size_t i = 0; i < want->n_feasible; i++)
                totals[i] = total_of(want, i);
            uint32_t pick = scheduler_best_total(totals, (uint32_t)want->n_feasible, &rng);
            assert_int_equal(g->chosen[k], (int32_t)want->feasible[pick]);
        }
        if (k == 1)
            assert_true(got->rng == rng); /* where the scheduler's generator goes on from */
        if (k == 1) {
            assert_true(got->picked);
            assert_int_equal(got->n_feasible, 0);
            assert_int_equal(got->found, want->n_feasible);
            assert_int_equal(got->chosen, (uint32_t)g->chosen[k]);
            assert_int_equal(got->last_feasible, want->feasible[want->n_feasible - 1]);
            if (want->n_feasible > 1)
                assert_int_equal(got->chosen_total, best);
        } else {
            assert_false(got->picked);
            assert_int_equal(got->n_feasible, want->n_feasible);
            for (size_t i = 0; i < want->n_feasible; i++)
                assert_int_equal(got->feasible[i], want->feasible[i]);
        }
        if (want->n_feasible == WANT)
            start = (want->feasible[WANT - 1] + 1) % NODE_COUNT;
        char node[32];
        snprintf(node, sizeof(node), "node-%02d", g->chosen[k]);
        kcycle__v1__reply__free_unpacked(ref, NULL);
        /* the scheduler's assumption of this member, as the delta of its Reserve call */
        expect_phase(phase(alone, generation + placed + 1, KCYCLE__V1__PHASE__PHASE_RESERVE,
                           names[k], node, true),
                     KC_SUCCESS, NULL);
        placed++;
    }
    assert_true(placed >= 2); /* the cluster holds several members: later ones saw earlier */
    kcycle__v1__reply__free_unpacked(reply, NULL);
    /* the group's host assumed nothing for good: the same generation is still in sync */
    Kcycle__V1__Reply *synced = sync_request(group, generation, false, NULL, 0);
    expect_ok(synced, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(synced, NULL);
    for (int k = 0; k < GROUP_SIZE; k++) {
        pod_proto_free(members[k].pod);
        pod_free(pods[k]);
    }
    client_stop(group);
    client_stop(alone);
}

/* A group whose members repeat a pod is refused whole, before any member is evaluated (the
 * host keeps one evaluation per pod, so a repeat would free the one the group must undo), and
 * the host keeps serving: the same generation is still in sync and a proper group is answered. */
static void test_group_with_a_repeated_member_is_refused(void **state)
{
    (void)state;
    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, 100);
    struct pod *pods[2] = {make_pending_pod("twin"), make_pending_pod("other")};
    Kcycle__V1__Evaluate members[3], *member_ptrs[3];
    for (int k = 0; k < 3; k++) {
        kcycle__v1__evaluate__init(&members[k]);
        members[k].pod = pod_to_proto(pods[k == 1]); /* twin, other, twin */
        members[k].all_nodes = true;
        members[k].start = ROTATION;
        members[k].want = WANT;
        members[k].score = true;
        member_ptrs[k] = &members[k];
    }
    Kcycle__V1__EvaluateGroup call = KCYCLE__V1__EVALUATE_GROUP__INIT;
    call.members = member_ptrs;
    call.n_members = 3;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE_GROUP;
    req.evaluate_group = &call;
    Kcycle__V1__Reply *reply = roundtrip(c, &req);
    expect_error(reply, "member 2 repeats the pod"); /* frees the reply */
    /* twin and other only */
    call.n_members = 2;
    reply = roundtrip(c, &req);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE_GROUP);
    assert_int_equal(reply->evaluate_group->n_members, 2);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    Kcycle__V1__Reply *synced = sync_request(c, generation, false, NULL, 0);
    expect_ok(synced, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(synced, NULL);
    for (int k = 0; k < 3; k++)
        pod_proto_free(members[k].pod);
    pod_free(pods[0]);
    pod_free(pods[1]);
    client_stop(c);
}

/* ---- a group's kept assumptions (EvaluateGroup.keep_assumed, Assume.as_evaluated) ---- */

/* The pods the Assume deltas below point into (pod_to_proto borrows their strings). */
static struct pod *delta_pods[2 * GROUP_SIZE];
static size_t delta_pod_count;

/* An Assume delta of the pending pod `name` on node index `node`. */
static Kcycle__V1__Delta *assume_delta(const char *name, int node, bool as_evaluated)
{
    Kcycle__V1__Delta *d = calloc(1, sizeof(*d));
    Kcycle__V1__Assume *a = calloc(1, sizeof(*a));
    assert_non_null(d);
    assert_non_null(a);
    kcycle__v1__delta__init(d);
    kcycle__v1__assume__init(a);
    assert_true(delta_pod_count < 2 * GROUP_SIZE);
    struct pod *pod = make_pending_pod(name);
    delta_pods[delta_pod_count++] = pod;
    a->pod = pod_to_proto(pod);
    a->node = malloc(32);
    assert_non_null(a->node);
    snprintf(a->node, 32, "node-%02d", node);
    a->as_evaluated = as_evaluated;
    d->change_case = KCYCLE__V1__DELTA__CHANGE_ASSUME;
    d->assume = a;
    return d;
}

static Kcycle__V1__Delta *forget_delta(const char *name)
{
    Kcycle__V1__Delta *d = calloc(1, sizeof(*d));
    assert_non_null(d);
    kcycle__v1__delta__init(d);
    struct pod *pod = make_pending_pod(name);
    d->change_case = KCYCLE__V1__DELTA__CHANGE_FORGET;
    d->forget = strdup(pod->uid);
    pod_free(pod);
    return d;
}

static void deltas_free(Kcycle__V1__Delta **deltas, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (deltas[i]->change_case == KCYCLE__V1__DELTA__CHANGE_ASSUME) {
            pod_proto_free(deltas[i]->assume->pod);
            free(deltas[i]->assume->node);
            free(deltas[i]->assume);
        } else {
            free(deltas[i]->forget);
        }
        free(deltas[i]);
    }
    while (delta_pod_count > 0)
        pod_free(delta_pods[--delta_pod_count]);
}

/* A group of the pending pods "<prefix>-k" evaluated with keep_assumed; *chosen gets each
 * member's node (-1: not placed). */
static void evaluate_group_kept(struct client *c, uint64_t generation, const char *prefix,
                                int32_t *chosen)
{
    struct pod *pods[GROUP_SIZE];
    Kcycle__V1__Evaluate members[GROUP_SIZE], *member_ptrs[GROUP_SIZE];
    for (int k = 0; k < GROUP_SIZE; k++) {
        char name[32];
        snprintf(name, sizeof(name), "%s-%d", prefix, k);
        pods[k] = make_pending_pod(name);
        kcycle__v1__evaluate__init(&members[k]);
        members[k].pod = pod_to_proto(pods[k]);
        members[k].all_nodes = true;
        members[k].start = ROTATION;
        members[k].want = WANT;
        members[k].score = true;
        member_ptrs[k] = &members[k];
    }
    int64_t weights[3] = {1, 1, 1};
    Kcycle__V1__EvaluateGroup call = KCYCLE__V1__EVALUATE_GROUP__INIT;
    call.members = member_ptrs;
    call.n_members = GROUP_SIZE;
    call.rng = 11;
    call.weights = weights;
    call.n_weights = 3;
    call.keep_assumed = true;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE_GROUP;
    req.evaluate_group = &call;
    Kcycle__V1__Reply *reply = roundtrip(c, &req);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE_GROUP);
    assert_int_equal(reply->evaluate_group->n_chosen, GROUP_SIZE);
    for (int k = 0; k < GROUP_SIZE; k++)
        chosen[k] = reply->evaluate_group->chosen[k];
    kcycle__v1__reply__free_unpacked(reply, NULL);
    for (int k = 0; k < GROUP_SIZE; k++) {
        pod_proto_free(members[k].pod);
        pod_free(pods[k]);
    }
}

/* The same pod evaluated on both replicas gets the same answer: the replicas are the same. */
static void expect_same_replicas(struct client *a, struct client *b, uint64_t generation,
                                 const char *probe)
{
    Kcycle__V1__Reply *x = evaluate_on(a, generation, probe, NULL, 0, 0);
    Kcycle__V1__Reply *y = evaluate_on(b, generation, probe, NULL, 0, 0);
    expect_ok(x, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    expect_ok(y, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    const Kcycle__V1__EvaluateReply *p = x->evaluate, *q = y->evaluate;
    assert_int_equal(p->status, q->status);
    assert_int_equal(p->n_feasible, q->n_feasible);
    for (size_t i = 0; i < p->n_feasible; i++) {
        assert_int_equal(p->feasible[i], q->feasible[i]);
        assert_int_equal(total_of(p, i), total_of(q, i));
    }
    kcycle__v1__reply__free_unpacked(x, NULL);
    kcycle__v1__reply__free_unpacked(y, NULL);
}

/* A host that kept a group's assumptions ends every request's deltas with the replica a host
 * applying the same deltas one by one has: confirmed assumptions stay, a forgotten one goes,
 * one on another node than the host's is made anew, and whatever the deltas did not confirm
 * is undone; the generations agree at every step (each request checks them). */
static void test_kept_group_assumptions_end_as_the_deltas_say(void **state)
{
    (void)state;
    struct client *group = client_start(), *plain = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(group), NULL);
    kcycle__v1__reply__free_unpacked(hello_standard(plain), NULL);
    uint64_t generation = send_snapshot(group, 100);
    assert_int_equal(send_snapshot(plain, 100), generation);
    int32_t chosen[GROUP_SIZE];

    /* 1: the first two confirmed, the second then forgotten (a group rolled back) */
    evaluate_group_kept(group, generation, "kept-a", chosen);
    assert_true(chosen[0] >= 0 && chosen[1] >= 0);
    Kcycle__V1__Delta *first[3] = {assume_delta("kept-a-0", chosen[0], true),
                                   assume_delta("kept-a-1", chosen[1], true),
                                   forget_delta("kept-a-1")};
    Kcycle__V1__Reply *r = sync_request(group, generation + 3, false, first, 3);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    for (int i = 0; i < 2; i++)
        first[i]->assume->as_evaluated = false;
    r = sync_request(plain, generation + 3, false, first, 3);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    deltas_free(first, 3);
    generation += 3;
    expect_same_replicas(group, plain, generation, "probe-1");

    /* 2: the first confirmed, the second assumed on another node than the host chose */
    evaluate_group_kept(group, generation, "kept-b", chosen);
    assert_true(chosen[0] >= 0 && chosen[1] >= 0);
    int other = (chosen[1] + 1) % NODE_COUNT;
    Kcycle__V1__Delta *second[2] = {assume_delta("kept-b-0", chosen[0], true),
                                    assume_delta("kept-b-1", other, true)};
    r = sync_request(group, generation + 2, false, second, 2);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    r = sync_request(plain, generation + 2, false, second, 2);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    deltas_free(second, 2);
    generation += 2;
    expect_same_replicas(group, plain, generation, "probe-2");

    /* 3: nothing confirmed (the next request has no deltas): every kept assumption undone */
    evaluate_group_kept(group, generation, "kept-c", chosen);
    r = sync_request(group, generation, false, NULL, 0);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    expect_same_replicas(group, plain, generation, "probe-3");

    /* 4: an unmarked Assume of the host's own choice is applied as any (not confirmed) */
    evaluate_group_kept(group, generation, "kept-d", chosen);
    assert_true(chosen[0] >= 0);
    Kcycle__V1__Delta *fourth[1] = {assume_delta("kept-d-0", chosen[0], false)};
    r = sync_request(group, generation + 1, false, fourth, 1);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    r = sync_request(plain, generation + 1, false, fourth, 1);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    deltas_free(fourth, 1);
    generation += 1;
    expect_same_replicas(group, plain, generation, "probe-4");

    /* 5: all confirmed, then the host closes with nothing pending */
    evaluate_group_kept(group, generation, "kept-e", chosen);
    Kcycle__V1__Delta *fifth[GROUP_SIZE];
    size_t n = 0;
    for (int k = 0; k < GROUP_SIZE; k++) {
        char name[32];
        snprintf(name, sizeof(name), "kept-e-%d", k);
        if (chosen[k] >= 0)
            fifth[n++] = assume_delta(name, chosen[k], true);
    }
    r = sync_request(group, generation + n, false, fifth, n);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    for (size_t i = 0; i < n; i++)
        fifth[i]->assume->as_evaluated = false;
    r = sync_request(plain, generation + n, false, fifth, n);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    deltas_free(fifth, n);
    generation += n;
    expect_same_replicas(group, plain, generation, "probe-5");

    /* 6: a host closed while it keeps assumptions frees them (the sanitizers check) */
    evaluate_group_kept(group, generation, "kept-f", chosen);
    client_stop(group);
    client_stop(plain);
}

/* How many lines of the recorder's log at path say `what` (e.g. "Unreserve ride-1"). */
static int log_lines_with(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[256];
    int count = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        count += strstr(line, what) != NULL;
    fclose(f);
    return count;
}

/* An Evaluate of msg over every node from ROTATION, scored, that asks for a pick. */
static void pick_call_init(Kcycle__V1__Evaluate *call, Kcycle__V1__Pod *msg, uint64_t rng,
                           int64_t *weights, size_t n_weights)
{
    kcycle__v1__evaluate__init(call);
    call->pod = msg;
    call->all_nodes = true;
    call->start = ROTATION;
    call->want = WANT;
    call->score = true;
    call->pick = true;
    call->rng = rng;
    call->weights = weights;
    call->n_weights = n_weights;
}

/* Evaluate.pick answers what the scheduler would pick from the same evaluation's lists: the
 * highest weighted total of the clamped scores, ties broken by its generator (which the answer
 * carries on), the count found and the last feasible node; a scorer with no weight counts for
 * nothing (then every feasible node ties). */
static void test_pick_is_the_choice_from_the_lists(void **state)
{
    (void)state;
    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, 100);
    int64_t weights[3] = {5, 3, 7};
    for (size_t n_weights = 1; n_weights <= 3; n_weights += 2) {
        Kcycle__V1__Reply *ref = evaluate_on(c, generation, "picked", NULL, 0, ROTATION);
        expect_ok(ref, KCYCLE__V1__REPLY__RESULT_EVALUATE);
        const Kcycle__V1__EvaluateReply *want = ref->evaluate;
        size_t n = want->n_feasible;
        assert_true(n > 1 && n <= NODE_COUNT);
        assert_true(want->n_scores > 0);
        int64_t totals[NODE_COUNT] = {0};
        for (size_t k = 0; k < want->n_scores; k++)
            for (size_t i = 0; i < n && want->scores[k]->plugin < n_weights; i++)
                totals[i] += scheduler_score_clamped(want->scores[k]->scores[i]) *
                             weights[want->scores[k]->plugin];
        uint64_t rng = 11;
        uint32_t best = scheduler_best_total(totals, (uint32_t)n, &rng);

        struct pod *pod = make_pending_pod("picked");
        Kcycle__V1__Evaluate call;
        pick_call_init(&call, pod_to_proto(pod), 11, weights, n_weights);
        call.attempt = attempt_sent;
        Kcycle__V1__Reply *reply = send_evaluate(c, generation, &call);
        expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
        const Kcycle__V1__EvaluateReply *got = reply->evaluate;
        assert_true(got->picked);
        assert_int_equal(got->status, want->status);
        assert_int_equal(got->processed, want->processed);
        assert_int_equal(got->n_reasons, want->n_reasons);
        assert_int_equal(got->n_feasible, 0);
        assert_int_equal(got->n_scores, 0);
        assert_int_equal(got->found, n);
        assert_int_equal(got->chosen, want->feasible[best]);
        assert_true(got->chosen_total == totals[best]);
        assert_int_equal(got->last_feasible, want->feasible[n - 1]);
        assert_true(got->rng == rng);
        if (n_weights == 3)
            assert_true(got->chosen_total > 0);
        kcycle__v1__reply__free_unpacked(reply, NULL);
        kcycle__v1__reply__free_unpacked(ref, NULL);
        pod_proto_free(call.pod);
        pod_free(pod);
    }
    client_stop(c);
}

/* Evaluate.reserve on the pending pod `name`: the picked node (its index), with the Reserve
 * answer checked. */
static uint32_t evaluate_with_reserve(struct client *c, uint64_t generation, const char *name)
{
    struct pod *pod = make_pending_pod(name);
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    int64_t weights[2] = {1, 1};
    Kcycle__V1__Evaluate call;
    pick_call_init(&call, msg, 5, weights, 2);
    call.reserve = true;
    Kcycle__V1__Reply *reply = send_evaluate(c, generation, &call);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    assert_true(reply->evaluate->picked);
    assert_non_null(reply->evaluate->reserve);
    assert_int_equal(reply->evaluate->reserve->status, KC_SUCCESS);
    uint32_t chosen = reply->evaluate->chosen;
    kcycle__v1__reply__free_unpacked(reply, NULL);
    pod_proto_free(msg);
    pod_free(pod);
    return chosen;
}

/* Reserve with the evaluation: the host assumes the picked node and runs Reserve in the same
 * round trip. Confirmed by the scheduler's marked Assume, the pod stays reserved (its
 * Unreserve comes only when the scheduler calls it); unconfirmed, the host runs Unreserve and
 * forgets the assumption itself, and the generations agree either way. */
static void test_reserve_with_the_evaluation_is_kept_or_undone(void **state)
{
    (void)state;
    char log[] = "/tmp/kcycle-test-ride-XXXXXX";
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    close(fd);
    char args[128];
    snprintf(args, sizeof(args), "{\"log\": \"%s\"}", log);
    const char *names[] = {"noderesources", "recorderhost"};
    const char *paths[] = {NODERESOURCES_PATH, RECORDERHOST_PATH};
    const char *plugin_args[] = {NULL, args};
    struct client *c = client_start(), *plain = client_start();
    Kcycle__V1__Reply *r = hello(c, names, paths, plugin_args, 2);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_HELLO);
    kcycle__v1__reply__free_unpacked(r, NULL);
    const char *plain_args[] = {NULL, "{\"log\": \"/dev/null\"}"};
    r = hello(plain, names, paths, plain_args, 2); /* the same plugins, applying deltas alone */
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_HELLO);
    kcycle__v1__reply__free_unpacked(r, NULL);
    uint64_t generation = send_snapshot(c, 100);
    assert_int_equal(send_snapshot(plain, 100), generation);

    /* unconfirmed: the next request finds the assumption undone, after Unreserve */
    evaluate_with_reserve(c, generation, "ride-1");
    assert_int_equal(log_lines_with(log, "Reserve ride-1"), 1);
    assert_int_equal(log_lines_with(log, "Unreserve ride-1"), 0);
    r = sync_request(c, generation, false, NULL, 0);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    assert_int_equal(log_lines_with(log, "Unreserve ride-1"), 1);
    expect_same_replicas(c, plain, generation, "probe-ride-1");

    /* confirmed: kept, Reserve's effects with it, until the scheduler's Unreserve call */
    uint32_t node = evaluate_with_reserve(c, generation, "ride-2");
    Kcycle__V1__Delta *assume[1] = {assume_delta("ride-2", (int)node, true)};
    r = sync_request(c, generation + 1, false, assume, 1);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    assume[0]->assume->as_evaluated = false;
    r = sync_request(plain, generation + 1, false, assume, 1);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    deltas_free(assume, 1);
    generation++;
    assert_int_equal(log_lines_with(log, "Unreserve ride-2"), 0);
    expect_same_replicas(c, plain, generation, "probe-ride-2");
    char node_name[32];
    snprintf(node_name, sizeof(node_name), "node-%02u", node);
    expect_phase(phase(c, generation, KCYCLE__V1__PHASE__PHASE_UNRESERVE, "ride-2", node_name,
                       false),
                 KC_SUCCESS, NULL);
    assert_int_equal(log_lines_with(log, "Unreserve ride-2"), 1);
    client_stop(c);
    client_stop(plain);
    unlink(log);
}

/* ---- a pod bound as it was assumed: Delta.pod_bound ---- */

/* The short delta of pending pod `name` bound on node-<node>. */
static Kcycle__V1__Delta *bound_delta(const char *name, int node)
{
    Kcycle__V1__Delta *d = calloc(1, sizeof(*d));
    Kcycle__V1__PodBound *b = calloc(1, sizeof(*b));
    assert_non_null(d);
    assert_non_null(b);
    kcycle__v1__delta__init(d);
    kcycle__v1__pod_bound__init(b);
    struct pod *pod = make_pending_pod(name);
    b->uid = strdup(pod->uid);
    b->node = malloc(32);
    assert_non_null(b->node);
    snprintf(b->node, 32, "node-%02d", node);
    pod_free(pod);
    d->change_case = KCYCLE__V1__DELTA__CHANGE_POD_BOUND;
    d->pod_bound = b;
    return d;
}

static void bound_delta_free(Kcycle__V1__Delta *d)
{
    free(d->pod_bound->uid);
    free(d->pod_bound->node);
    free(d->pod_bound);
    free(d);
}

/* One sync at generation with the single delta d (freed), answered without error. */
static void sync_one(struct client *c, uint64_t generation, Kcycle__V1__Delta *d)
{
    Kcycle__V1__Reply *r = sync_request(c, generation, false, &d, 1);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    if (d->change_case == KCYCLE__V1__DELTA__CHANGE_POD_BOUND)
        bound_delta_free(d);
    else
        deltas_free(&d, 1);
}

/* The pod_put of pending pod `name` assigned to node-<node>: the pending object with
 * spec.nodeName set, nothing else changed. */
static void sync_assigned_put(struct client *c, uint64_t generation, const char *name, int node)
{
    struct pod *pod = make_pending_pod(name);
    char text[32];
    snprintf(text, sizeof(text), "node-%02d", node);
    pod->node_name = strdup(text);
    Kcycle__V1__Delta d = KCYCLE__V1__DELTA__INIT, *ptr = &d;
    d.change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
    d.pod_put = pod_to_proto(pod);
    Kcycle__V1__Reply *r = sync_request(c, generation, false, &ptr, 1);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_SYNCED);
    kcycle__v1__reply__free_unpacked(r, NULL);
    pod_proto_free(d.pod_put);
    pod_free(pod);
}

/* Whether node-<node> is feasible for a probe of the pending pods' size. */
static bool probe_fits(struct client *c, uint64_t generation, uint32_t node)
{
    Kcycle__V1__Reply *r = evaluate_on(c, generation, "probe-fit", &node, 1, 0);
    expect_ok(r, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    bool fits = r->evaluate->n_feasible == 1;
    kcycle__v1__reply__free_unpacked(r, NULL);
    return fits;
}

/* A host applies a PodBound as the pod_put of the assumed object with nodeName set: the same
 * generation (each request checks it), the same evaluations after, the pod assigned (not
 * assumed: a Forget leaves it, a second PodBound is refused); a PodBound the replica does not
 * hold assumed on that node is a protocol error naming the uid, after which the host refuses
 * every request until it is restarted. */
static void test_pod_bound_applies_as_the_pod_put_would(void **state)
{
    (void)state;
    struct client *a = client_start(), *b = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(a), NULL);
    kcycle__v1__reply__free_unpacked(hello_standard(b), NULL);
    uint64_t generation = send_snapshot(a, 100);
    assert_int_equal(send_snapshot(b, 100), generation);
    /* node-05 has room for one pending pod (2300m free), not two */
    assert_true(probe_fits(a, generation, 5));

    sync_one(a, generation + 1, assume_delta("bound-1", 5, false));
    sync_one(b, generation + 1, assume_delta("bound-1", 5, false));
    generation++;
    assert_false(probe_fits(a, generation, 5));
    /* assigned: the assumption leaves the cache and the assigned pod enters (two changes) */
    sync_one(a, generation + 2, bound_delta("bound-1", 5));
    sync_assigned_put(b, generation + 2, "bound-1", 5);
    generation += 2;
    expect_same_replicas(a, b, generation, "probe-bound-1");
    assert_false(probe_fits(a, generation, 5));
    assert_false(probe_fits(b, generation, 5));
    /* assigned, not assumed: a Forget changes nothing, a second PodBound has nothing to bind */
    sync_one(a, generation, forget_delta("bound-1"));
    assert_false(probe_fits(a, generation, 5));
    Kcycle__V1__Delta *again = bound_delta("bound-1", 5);
    expect_error(sync_request(a, generation + 2, false, &again, 1),
                 "pod_bound of pod uid uid-bound-1 on node node-05: the replica does not hold "
                 "that pod assumed");
    bound_delta_free(again);
    expect_error(sync_request(a, generation, false, NULL, 0), "restart the host");

    /* assumed on another node than the PodBound says */
    sync_one(b, generation + 1, assume_delta("elsewhere", 2, false));
    Kcycle__V1__Delta *wrong = bound_delta("elsewhere", 1);
    expect_error(sync_request(b, generation + 3, false, &wrong, 1),
                 "pod_bound of pod uid uid-elsewhere on node node-01: the replica holds it "
                 "assumed on node node-02");
    bound_delta_free(wrong);
    expect_error(sync_request(b, generation + 1, false, NULL, 0), "restart the host");

    struct plugin_host_counts ca, cb;
    client_stop_counting(a, &ca);
    client_stop_counting(b, &cb);
    assert_int_equal(ca.pods_bound, 1);
    assert_int_equal(cb.pods_bound, 0);
    assert_int_equal(cb.pod_puts, ca.pod_puts + 1);
}

/* ---- the scheduler's side: hosts as threads of the test (remote_set_spawn_hook) ---- */

#define SPAWNED_MAX 4

struct spawned_host {
    char name[64];
    struct plugin_host *host;
    pthread_t thread;
};

static struct spawned_host spawned[SPAWNED_MAX];
static uint32_t spawned_count;

static int spawn_thread(void *ctx, const char *name, int fd)
{
    (void)ctx;
    if (spawned_count == SPAWNED_MAX)
        return -EAGAIN;
    struct spawned_host *t = &spawned[spawned_count];
    struct plugin_host_options opts = {.fd = fd};
    struct kc_error err = {{0}};
    if (plugin_host_open(&opts, &t->host, &err) != 0)
        fail_msg("plugin_host_open: %s", err.message);
    snprintf(t->name, sizeof(t->name), "%s", name);
    if (pthread_create(&t->thread, NULL, serve, t->host) != 0) {
        plugin_host_close(t->host);
        return -EAGAIN;
    }
    spawned_count++;
    return 0;
}

/* After scheduler_close (which closed their channels): what each host applied, by name. */
static void spawned_stop(struct plugin_host_counts *counts, const char *const *names, size_t n)
{
    for (uint32_t i = 0; i < spawned_count; i++) {
        assert_int_equal(pthread_join(spawned[i].thread, NULL), 0);
        for (size_t k = 0; k < n; k++)
            if (strcmp(spawned[i].name, names[k]) == 0)
                plugin_host_counts(spawned[i].host, &counts[k]);
        plugin_host_close(spawned[i].host);
    }
    spawned_count = 0;
    remote_set_spawn_hook(NULL, NULL);
}

struct bind_sink {
    bool async;          /* answer 1: the result comes through scheduler_bind_result */
    char asked[128];     /* the uid of the last binding asked for */
    uint32_t bound;
};

static int sink_bind_async(void *ctx, const struct pod *pod, const char *node,
                           const struct kv_list *annotations)
{
    struct bind_sink *k = ctx;
    snprintf(k->asked, sizeof(k->asked), "%s", pod->uid);
    return k->async ? 1 : 0;
}

static void sink_bound_count(void *ctx, const struct pod *pod, const char *node)
{
    ((struct bind_sink *)ctx)->bound++;
}

static struct pod *pod_json(const char *json)
{
    struct tree *t;
    struct kc_error err = {{0}};
    if (tree_parse_buffer("pod.json", json, strlen(json), &t, &err) != 0)
        fail_msg("%s", err.message);
    struct pod *pod = NULL;
    if (pod_from_tree(t, &pod, &err) != 0)
        fail_msg("%s", err.message);
    tree_free(t);
    return pod;
}

/* A 100m pod with label app=<app> and, when affine is set, a required pod affinity to the
 * pods labelled app=<affine> on the same node. */
static struct pod *labelled_pod(const char *name, const char *app, const char *affine)
{
    char affinity[512] = "";
    if (affine != NULL)
        snprintf(affinity, sizeof(affinity),
                 "\"affinity\": {\"podAffinity\": {\"requiredDuringSchedulingIgnoredDuring"
                 "Execution\": [{\"labelSelector\": {\"matchLabels\": {\"app\": \"%s\"}}, "
                 "\"topologyKey\": \"kubernetes.io/hostname\"}]}}, ",
                 affine);
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"metadata\": {\"name\": \"%s\", \"namespace\": \"default\", \"labels\": "
             "{\"app\": \"%s\"}}, \"spec\": {\"schedulerName\": \"kcycle\", %s\"containers\": "
             "[{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"100m\"}}}]}}",
             name, app, affinity);
    return pod_json(json);
}

static void run_idle(struct scheduler *s)
{
    for (int i = 0; i < 10000; i++) {
        int rc = scheduler_schedule_one(s);
        int bound = scheduler_tick(s);
        if (rc <= 0 && bound == 0 && !scheduler_busy(s))
            return;
    }
    fail_msg("the scheduler never went idle");
}

/* Schedules pod until its binding is asked for (the sink answers 1); returns where it is
 * assumed. */
static const char *assumed_until_bound(struct scheduler *s, struct bind_sink *k, const char *uid)
{
    for (int i = 0; i < 1000 && strcmp(k->asked, uid) != 0; i++) {
        scheduler_schedule_one(s);
        scheduler_tick(s);
    }
    assert_string_equal(k->asked, uid);
    const struct cache_pod *cp = cache_pod(&s->cache, uid);
    assert_non_null(cp);
    assert_true(cp->assumed);
    return cp->node_name;
}

static void expect_bound_on(const struct scheduler *s, const char *uid, const char *node)
{
    const char *at = NULL, *reason = NULL;
    if (scheduler_pod_status(s, uid, &at, &reason) != 1)
        fail_msg("pod %s is not bound: %s", uid, reason != NULL ? reason : "(no reason)");
    assert_string_equal(at, node);
}

/* The scheduler sends a binding that brings back the assumed object as a PodBound, to every
 * host (the evaluating one, which kept its Reserve's assumption, and the binder's); an assigned
 * object that differs from the assumed one (labels changed before the binding's answer), and an
 * update after the binding, go whole, and the hosts' plugins see the new labels: a pod affine
 * to the new label lands beside it, through interpodaffinity in the host. */
static void test_pods_bound_as_assumed_go_short_and_changed_ones_whole(void **state)
{
    (void)state;
    const char *hosts[2] = {"evaluating", "binding"};
    struct plugin_config plugins[4] = {
        {.name = (char *)"noderesources", .path = (char *)NODERESOURCES_PATH},
        {.name = (char *)"interpodaffinity",
         .path = (char *)KC_PLUGIN_BUILD_DIR "/interpodaffinity/interpodaffinity.so"},
        {.name = (char *)"recorderhost", .path = (char *)RECORDERHOST_PATH}, /* Reserve */
        {.name = (char *)"defaultbinder", .path = (char *)DEFAULTBINDER_PATH},
    };
    for (int i = 0; i < 4; i++) {
        plugins[i].weight = 1;
        plugins[i].required = true;
        plugins[i].args_json = (char *)"{}";
        plugins[i].isolation = ISOLATION_PROCESS;
        plugins[i].host = (char *)hosts[i == 3];
    }
    struct config cfg = {
        .scheduler_name = (char *)"kcycle",
        .plugins = plugins,
        .plugin_count = 4,
        .seed = 1,
        .parallelism = 1,
        .pod_initial_backoff_ms = 1000,
        .pod_max_backoff_ms = 10000,
        .unschedulable_flush_ms = 300000,
        .plugin_timeout_ms = 120000, /* not what this test is about: time for a loaded machine */
    };
    struct bind_sink k = {0};
    struct scheduler_sink sink = {.ctx = &k, .bind = sink_bind_async, .bound = sink_bound_count};
    remote_set_spawn_hook(spawn_thread, NULL);
    struct scheduler s;
    struct kc_error err = {{0}};
    if (scheduler_open(&s, &cfg, NULL, &sink, NULL, &err) != 0)
        fail_msg("scheduler_open: %s", err.message);
    assert_int_equal(spawned_count, 2);
    for (int i = 0; i < 4; i++) {
        struct node *n = node_new();
        char name[32];
        snprintf(name, sizeof(name), "node-%d", i);
        n->name = strdup(name);
        kv_list_set(&n->labels, "kubernetes.io/hostname", name);
        res_list_set(&n->allocatable, KC_RESOURCE_CPU, 4000);
        res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, 32ll << 30);
        res_list_set(&n->allocatable, KC_RESOURCE_PODS, 110);
        assert_int_equal(scheduler_node_add(&s, n), 0);
    }

    /* bound as assumed: short */
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof(name), "web-%d", i);
        assert_int_equal(scheduler_pod_add(&s, labelled_pod(name, "web", NULL)), 0);
    }
    run_idle(&s);
    assert_int_equal(k.bound, 6);
    assert_int_equal(s.remote.bound.sent, 6);

    /* the assigned object comes back relabelled before the binding's answer: whole */
    k.async = true;
    assert_int_equal(scheduler_pod_add(&s, labelled_pod("changing", "old", NULL)), 0);
    char changed_on[64];
    snprintf(changed_on, sizeof(changed_on), "%s",
             assumed_until_bound(&s, &k, "default/changing"));
    struct pod *assigned = labelled_pod("changing", "new", NULL);
    assigned->node_name = strdup(changed_on);
    assert_int_equal(scheduler_pod_add(&s, assigned), 0);
    assert_int_equal(scheduler_bind_result(&s, "default/changing", 0, NULL), 0);
    run_idle(&s);
    assert_int_equal(s.remote.bound.sent, 6);

    /* bound as assumed (short), then updated: the update goes whole */
    assert_int_equal(scheduler_pod_add(&s, labelled_pod("renamed", "before", NULL)), 0);
    char renamed_on[64];
    snprintf(renamed_on, sizeof(renamed_on), "%s",
             assumed_until_bound(&s, &k, "default/renamed"));
    assert_int_equal(scheduler_bind_result(&s, "default/renamed", 0, NULL), 0);
    run_idle(&s);
    assert_int_equal(s.remote.bound.sent, 7);
    struct pod *update = labelled_pod("renamed", "after", NULL);
    update->node_name = strdup(renamed_on);
    assert_int_equal(scheduler_pod_update(&s, update), 0);

    /* the hosts' interpodaffinity sees the labels of now: each probe goes beside its pod */
    k.async = false;
    assert_int_equal(scheduler_pod_add(&s, labelled_pod("near-new", "probe", "new")), 0);
    assert_int_equal(scheduler_pod_add(&s, labelled_pod("near-after", "probe", "after")), 0);
    run_idle(&s);
    expect_bound_on(&s, "default/near-new", changed_on);
    expect_bound_on(&s, "default/near-after", renamed_on);
    assert_int_equal(s.remote.bound.sent, 9);
    /* deltas ride on the next request to each host: one more pod takes those to both */
    assert_int_equal(scheduler_pod_add(&s, labelled_pod("last", "web", NULL)), 0);
    run_idle(&s);
    assert_int_equal(s.remote.bound.sent, 10);
    scheduler_close(&s);

    struct plugin_host_counts counts[2];
    memset(counts, 0, sizeof(counts));
    spawned_stop(counts, hosts, 2);
    for (int h = 0; h < 2; h++) {
        /* web-0..5, renamed, near-new, near-after short; changing and renamed's update whole */
        assert_int_equal(counts[h].pods_bound, 9);
        assert_int_equal(counts[h].pod_puts, 2);
    }
}

/* ---- preemption's what-if (WhatIf) and nominated pods (Evaluate.nominated) ---- */

static Kcycle__V1__Reply *what_if(struct client *c, uint64_t generation, const struct pod *pod,
                                  Kcycle__V1__WhatIfNode **items, size_t n,
                                  const struct pod *nominated)
{
    Kcycle__V1__Pod *msg = pod != NULL ? pod_to_proto(pod) : NULL;
    Kcycle__V1__Pod *nominated_msg = nominated != NULL ? pod_to_proto(nominated) : NULL;
    Kcycle__V1__WhatIf call = KCYCLE__V1__WHAT_IF__INIT;
    call.pod = msg;
    call.nodes = items;
    call.n_nodes = n;
    call.nominated = &nominated_msg;
    call.n_nominated = nominated != NULL ? 1 : 0;
    call.attempt = attempt_sent;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.generation = generation;
    req.call_case = KCYCLE__V1__REQUEST__CALL_WHAT_IF;
    req.what_if = &call;
    Kcycle__V1__Reply *reply = roundtrip(c, &req);
    pod_proto_free(msg);
    pod_proto_free(nominated_msg);
    return reply;
}

static void expect_verdict(const Kcycle__V1__WhatIfVerdict *v, int status, uint32_t plugin,
                           const char *reason)
{
    assert_int_equal(v->status, status);
    assert_int_equal(v->plugin, plugin);
    if (reason == NULL) {
        assert_int_equal(v->n_reasons, 0);
        return;
    }
    assert_int_equal(v->n_reasons, 1);
    assert_string_equal(v->reasons[0], reason);
}

static void test_what_if_judges_node_views_and_names_the_refusing_plugin(void **state)
{
    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, 42);
    Kcycle__V1__Reply *reply = evaluate(c, generation, "preemptor");
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    kcycle__v1__reply__free_unpacked(reply, NULL);

    /* node-04: 2 CPUs, busy-04-0 holds 300m of them; the preemptor asks 1800m */
    struct pod *preemptor = make_pending_pod("preemptor");
    struct pod *nominated = make_pod("nominated", NULL, 500, 64 * MIB);
    char *victim[] = {(char *)"uid-busy-04-0"}, *nobody[] = {(char *)"uid-nobody"},
         *elsewhere[] = {(char *)"uid-busy-05-0"};
    uint32_t first = 0, twice[] = {0, 0};
    Kcycle__V1__WhatIfNode items[4], *item_ptrs[4];
    for (int i = 0; i < 4; i++) {
        kcycle__v1__what_if_node__init(&items[i]);
        items[i].node = 4;
        item_ptrs[i] = &items[i];
    }
    /* as it is; without the pod; without it but with the nominated pod */
    items[1].removed = items[2].removed = victim;
    items[1].n_removed = items[2].n_removed = 1;
    items[2].added = &first;
    items[2].n_added = 1;
    reply = what_if(c, generation, preemptor, item_ptrs, 3, nominated);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_WHAT_IF);
    assert_int_equal(reply->what_if->n_verdicts, 3);
    /* noderesources is Hello plugin 1 ("missing" did not load): plugin 1 + 1 */
    expect_verdict(reply->what_if->verdicts[0], KC_UNSCHEDULABLE, 2, "Insufficient cpu");
    expect_verdict(reply->what_if->verdicts[1], KC_SUCCESS, 0, NULL);
    expect_verdict(reply->what_if->verdicts[2], KC_UNSCHEDULABLE, 2, "Insufficient cpu");
    kcycle__v1__reply__free_unpacked(reply, NULL);

    /* a removed pod the replica lacks, or has on another node: the replica is desynced, and
     * a verdict would be on another cluster; a nominated pod added twice is no view either */
    items[3].removed = nobody;
    items[3].n_removed = 1;
    expect_error(what_if(c, generation, preemptor, &item_ptrs[3], 1, NULL),
                 "removes pod uid-nobody, which the replica does not count on node node-04");
    items[3].removed = elsewhere;
    expect_error(what_if(c, generation, preemptor, &item_ptrs[3], 1, NULL),
                 "removes pod uid-busy-05-0");
    items[3].n_removed = 0;
    items[3].added = twice;
    items[3].n_added = 2;
    expect_error(what_if(c, generation, preemptor, &item_ptrs[3], 1, nominated),
                 "adds nominated pod 0 twice");

    /* a pod this host never evaluated: its PreFilter runs first, then the same view */
    struct pod *stranger = make_pending_pod("stranger");
    reply = what_if(c, generation, stranger, &item_ptrs[1], 1, NULL);
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_WHAT_IF);
    assert_int_equal(reply->what_if->n_verdicts, 1);
    expect_verdict(reply->what_if->verdicts[0], KC_SUCCESS, 0, NULL);
    kcycle__v1__reply__free_unpacked(reply, NULL);

    /* what the replica does not have is refused, not guessed */
    items[0].node = NODE_COUNT;
    expect_error(what_if(c, generation, preemptor, item_ptrs, 1, NULL), "replica has 20 nodes");
    items[0].node = 4;
    items[0].added = &first;
    items[0].n_added = 1;
    expect_error(what_if(c, generation, preemptor, item_ptrs, 1, NULL), "adds nominated pod 0");
    expect_error(what_if(c, generation, NULL, item_ptrs, 1, nominated), "without a pod");
    pod_free(stranger);
    pod_free(nominated);
    pod_free(preemptor);
    client_stop(c);
}

/* A what-if reuses the PreFilter state of the pod's evaluation in the same attempt only: an
 * evaluation of an earlier attempt is stale, and PreFilter runs afresh on the pod sent. */
static void test_what_if_runs_prefilter_again_for_another_attempt(void **state)
{
    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, 42);
    attempt_sent = 7;
    Kcycle__V1__Reply *reply = evaluate(c, generation, "preemptor"); /* asks 1800m */
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    /* the same uid, asking 100m now: node-04 has 1700m free */
    struct pod *smaller = make_pod("preemptor", NULL, 100, 64 * MIB);
    Kcycle__V1__WhatIfNode item = KCYCLE__V1__WHAT_IF_NODE__INIT, *items[] = {&item};
    item.node = 4;
    reply = what_if(c, generation, smaller, items, 1, NULL); /* attempt 7: its state */
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_WHAT_IF);
    expect_verdict(reply->what_if->verdicts[0], KC_UNSCHEDULABLE, 2, "Insufficient cpu");
    kcycle__v1__reply__free_unpacked(reply, NULL);
    attempt_sent = 8;
    reply = what_if(c, generation, smaller, items, 1, NULL); /* stale: PreFilter again */
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_WHAT_IF);
    expect_verdict(reply->what_if->verdicts[0], KC_SUCCESS, 0, NULL);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    attempt_sent = 0;
    pod_free(smaller);
    client_stop(c);
}

/* An evaluation of a 1-CPU pod on node-03 (5 CPUs, empty), with a pod nominated there. */
static Kcycle__V1__Reply *evaluate_nominated(struct client *c, uint64_t generation,
                                             const struct pod *pod, const struct pod *holder,
                                             const char *node)
{
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    Kcycle__V1__NominatedPod nomination = KCYCLE__V1__NOMINATED_POD__INIT, *list = &nomination;
    nomination.pod = holder != NULL ? pod_to_proto(holder) : NULL;
    nomination.node = (char *)node;
    uint32_t candidate = 3;
    Kcycle__V1__Evaluate call = KCYCLE__V1__EVALUATE__INIT;
    call.pod = msg;
    call.candidates = &candidate;
    call.n_candidates = 1;
    call.nominated = &list;
    call.n_nominated = holder != NULL ? 1 : 0;
    Kcycle__V1__Reply *reply = send_evaluate(c, generation, &call);
    pod_proto_free(msg);
    pod_proto_free(nomination.pod);
    return reply;
}

static void expect_feasible(Kcycle__V1__Reply *reply, size_t feasible, const char *reason)
{
    expect_ok(reply, KCYCLE__V1__REPLY__RESULT_EVALUATE);
    assert_int_equal(reply->evaluate->status, KC_SUCCESS);
    assert_int_equal(reply->evaluate->n_feasible, feasible);
    if (reason != NULL) {
        assert_int_equal(reply->evaluate->n_reasons, 1);
        assert_string_equal(reply->evaluate->reasons[0]->text, reason);
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
}

static void test_evaluation_counts_the_nominated_pods_it_is_sent(void **state)
{
    struct client *c = client_start();
    kcycle__v1__reply__free_unpacked(hello_standard(c), NULL);
    uint64_t generation = send_snapshot(c, 42);
    struct pod *pod = make_pod("small", NULL, 1000, 512 * MIB);
    struct pod *holder = make_pod("holder", NULL, 4500, 64 * MIB);
    pod->priority = 10;
    holder->priority = 10;
    /* the holder's 4.5 CPUs count on node-03: 1 CPU does not fit in the 0.5 left */
    expect_feasible(evaluate_nominated(c, generation, pod, holder, "node-03"), 0,
                    "Insufficient cpu");
    /* for that evaluation only */
    expect_feasible(evaluate_nominated(c, generation, pod, NULL, NULL), 1, NULL);
    /* nominated elsewhere, or of lower priority: it does not count here */
    expect_feasible(evaluate_nominated(c, generation, pod, holder, "node-04"), 1, NULL);
    holder->priority = 5;
    expect_feasible(evaluate_nominated(c, generation, pod, holder, "node-03"), 1, NULL);
    expect_error(evaluate_nominated(c, generation, pod, holder, ""), "without a pod or a node");
    pod_free(holder);
    pod_free(pod);
    client_stop(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_reports_each_plugin_and_a_bad_path),
        cmocka_unit_test(test_evaluation_equals_the_in_process_scheduler),
        cmocka_unit_test(test_pods_evaluated_but_not_chosen_are_dropped),
        cmocka_unit_test(test_permit_wait_reports_hello_indices),
        cmocka_unit_test(test_garbage_and_early_requests_get_error_replies),
        cmocka_unit_test(test_bad_requests_after_the_snapshot),
        cmocka_unit_test(test_only_a_harness_host_serves_queue_calls_and_records_preemption),
        cmocka_unit_test(test_group_members_see_the_ones_placed_before_them),
        cmocka_unit_test(test_pick_is_the_choice_from_the_lists),
        cmocka_unit_test(test_group_with_a_repeated_member_is_refused),
        cmocka_unit_test(test_kept_group_assumptions_end_as_the_deltas_say),
        cmocka_unit_test(test_reserve_with_the_evaluation_is_kept_or_undone),
        cmocka_unit_test(test_pod_bound_applies_as_the_pod_put_would),
        cmocka_unit_test(test_pods_bound_as_assumed_go_short_and_changed_ones_whole),
        cmocka_unit_test(test_what_if_judges_node_views_and_names_the_refusing_plugin),
        cmocka_unit_test(test_what_if_runs_prefilter_again_for_another_attempt),
        cmocka_unit_test(test_evaluation_counts_the_nominated_pods_it_is_sent),
        cmocka_unit_test(test_a_failed_harness_hello_forgets_its_object_statuses),
        cmocka_unit_test(test_only_a_harness_host_leaves_a_queue_sort_out),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed;
}
