/* libkcycle-plugintest (<kcycle/plugintest.h>, docs/plugin-testing.md): a plugin under test
 * runs in a real plugin host (the runtime's host API, not a fake), driven with the plugin host
 * protocol (proto/kcycle/v1/plugin.proto). One transport serves each isolation mode: the host
 * library called in this process, or a kcycle-plugin-host child over the socketpair the
 * scheduler would give it; everything above the transport is the same for both. */
#include <kcycle/plugintest.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "channel.h"
#include "host.h"
#include "model.h"
#include "plugin.pb-c.h"
#include "proto_convert.h"
#include "simfile.h"

#ifndef KC_PLUGINTEST_HOST_BINARY
#define KC_PLUGINTEST_HOST_BINARY "kcycle-plugin-host"
#endif

/* The replica's generation: the harness sends its cluster once, in the hello. */
#define HARNESS_GENERATION 1
#define HARNESS_TIMEOUT_MS 30000
/* the plugin under test and the ones it needs beside it (kc_harness_options.more_plugins) */
#define HARNESS_MAX_PLUGINS 16

struct transport {
    /* Send one packed Request, return the unpacked Reply (NULL: h->error says why). */
    Kcycle__V1__Reply *(*round_trip)(kc_harness *h, const uint8_t *request, size_t len);
    void (*close)(kc_harness *h);
};

struct kc_harness {
    const struct transport *transport;
    struct plugin_host *local; /* KC_HARNESS_IN_PROCESS */
    struct channel channel;    /* KC_HARNESS_PROCESS */
    pid_t pid;
    struct sim_spec spec;     /* the cluster kc_harness_open read */
    struct sim_spec *updates; /* and those of kc_harness_update, oldest first */
    uint32_t update_count;
    /* the replica's nodes in its order (a put appends a new node, a delete moves the last
     * one into the gap), so node indices mean the same on both sides */
    char **nodes;
    uint32_t node_count, node_capacity;
    uint64_t request_id;
    char message[2048];
    char error[1024];
    /* the last evaluation, by node index (the spec's node order is the replica's) */
    bool *feasible;
    int64_t *scores;
    char **reasons;
    uint32_t *reason_counts;
    uint32_t reason_total;
    struct kv_list annotations;
    bool bind_requested; /* the last phase call's */
    char **writes;       /* the last phase call's object writes, "Kind ns/name patch" */
    uint32_t write_count;
    char **logs;
    uint32_t log_count, log_capacity;
    uint32_t plugin_count; /* in the host: the plugin under test (index 0), then more_plugins */
    /* the last PostFilter's preemption: the nominated node (NULL: none chosen) and victims */
    char *nominated_node;
    char **victims;
    uint32_t victim_count;
    /* the last group_of: "namespace/name" (NULL: no group) and its quorum */
    char *group_name;
    uint32_t group_min_member;
    /* the latest status reported per object, "Kind namespace/name" -> status JSON */
    struct kv_list object_statuses;
    /* Added in 1.2 (kc_harness_set_clock and after): the last evaluation's skips by the plugin
     * under test, and the last kc_harness_cycle_string's answer */
    bool pre_filter_skipped, pre_score_skipped;
    char *cycle_string;
    bool pods_first; /* kc_harness_update_pods_first: the update's pods before its nodes */
    /* ---- added in 1.2: queue, binder and waiting-pod state ---- */
    bool pending_events;          /* kc_harness_options.pending_pods_as_events */
    char *plugin_name;            /* the plugin under test's own name (kc_harness_wait) */
    struct kv_list status_counts; /* "Kind namespace/name" -> how many statuses, in decimal */
    /* the last group_of's kc_group_info beyond its name and quorum */
    char *group_namespace, *group_short_name;
    uint32_t group_flags;
    int64_t group_timeout_ms, group_backoff_ms, group_creation_ms;
    int bind_result;            /* kc_harness_set_bind_result */
    uint32_t what_if_calls;     /* the last phase call's kc_filter_what_if calls */
    bool preempt_called;        /* the last phase call's kc_preempt, with or without a node */
    uint32_t permit_timeout_ms; /* the last phase call's Permit wait (KC_WAIT) */
    /* what plugins did to waiting pods: uid -> "ALLOWED REJECTED", and uid -> the last message */
    struct kv_list waiting_counts, waiting_messages;
    /* Added in 1.2 (kc_harness_nominate, kc_harness_requeue_events): the pending pods
     * nominated on nodes, sent with each evaluation; the plugin's requeue events from the
     * hello */
    struct pod **nominated_pods;
    char **nominated_nodes;
    uint32_t nomination_count;
    uint32_t requeue_events;
    int write_result; /* kc_harness_fail_writes: sent with each phase call */
    /* kc_harness_assume's pods, by uid, until kc_harness_forget: a second assumption would fail
     * in the host and leave its replica out of sync, so the harness refuses it first */
    char **assumed;
    uint32_t assumed_count;
};

static void set_error(kc_harness *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(kc_harness *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->error, sizeof(h->error), fmt, ap);
    va_end(ap);
}

/* ---- the two transports ---- */

static Kcycle__V1__Reply *local_round_trip(kc_harness *h, const uint8_t *request, size_t len)
{
    uint8_t *packed;
    size_t packed_len;
    if (plugin_host_handle(h->local, request, len, &packed, &packed_len) < 0) {
        set_error(h, "the plugin host library ran out of memory");
        return NULL;
    }
    Kcycle__V1__Reply *reply = kcycle__v1__reply__unpack(NULL, packed_len, packed);
    free(packed);
    if (reply == NULL)
        set_error(h, "a reply that does not decode");
    return reply;
}

static void local_close(kc_harness *h)
{
    plugin_host_close(h->local);
    h->local = NULL;
}

static const struct transport in_process = {local_round_trip, local_close};

static Kcycle__V1__Reply *child_round_trip(kc_harness *h, const uint8_t *request, size_t len)
{
    int64_t deadline = channel_now_ms() + HARNESS_TIMEOUT_MS;
    int rc = channel_send(&h->channel, request, len, deadline);
    const uint8_t *data = NULL;
    size_t data_len = 0;
    if (rc == 0)
        rc = channel_recv(&h->channel, CHANNEL_REPLY_MAX_BYTES, deadline, &data, &data_len);
    if (rc == -EPIPE) {
        int status = 0;
        if (h->pid > 0 && waitpid(h->pid, &status, 0) == h->pid) {
            h->pid = -1;
            if (WIFSIGNALED(status))
                set_error(h, "the plugin host died of signal %d", WTERMSIG(status));
            else
                set_error(h, "the plugin host exited with status %d", WEXITSTATUS(status));
        } else {
            set_error(h, "the plugin host closed the channel");
        }
        return NULL;
    }
    if (rc < 0) {
        set_error(h, "talking to the plugin host: %s", strerror(-rc));
        return NULL;
    }
    Kcycle__V1__Reply *reply = kcycle__v1__reply__unpack(NULL, data_len, data);
    if (reply == NULL)
        set_error(h, "a reply that does not decode");
    return reply;
}

static void child_close(kc_harness *h)
{
    /* the end of the channel stops the host: it unloads the plugin (fini) and exits */
    channel_close(&h->channel);
    if (h->pid > 0) {
        int status;
        int64_t deadline = channel_now_ms() + HARNESS_TIMEOUT_MS;
        while (waitpid(h->pid, &status, WNOHANG) == 0) {
            if (channel_now_ms() > deadline) {
                kill(h->pid, SIGKILL);
                waitpid(h->pid, &status, 0);
                break;
            }
            usleep(10000); /* polling for the exit, bounded by the deadline */
        }
        h->pid = -1;
    }
}

static const struct transport child_process = {child_round_trip, child_close};

static int spawn_host(kc_harness *h, const char *binary)
{
    char fd_text[16];
    snprintf(fd_text, sizeof(fd_text), "%d", CHANNEL_HOST_FD);
    const char *argv[] = {binary, "--fd", fd_text, "--name", "plugintest", NULL};
    int rc = channel_spawn(argv, "kcycle-plugintest: cannot run the plugin host\n", &h->channel,
                           &h->pid);
    if (rc < 0)
        set_error(h, "cannot start %s: %s", binary, strerror(-rc));
    return rc;
}

/* ---- requests ---- */

static void note_logs(kc_harness *h, const Kcycle__V1__Reply *reply)
{
    static const char *const levels[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    for (size_t i = 0; i < reply->n_logs; i++) {
        const Kcycle__V1__LogLine *line = reply->logs[i];
        void *grown = array_grow(h->logs, &h->log_capacity, h->log_count + 1, sizeof(*h->logs));
        if (grown == NULL)
            return;
        h->logs = grown;
        int level = line->level >= 0 && line->level <= 3 ? line->level : 3;
        size_t size = strlen(line->plugin) + strlen(line->message) + 16;
        char *text = malloc(size);
        if (text == NULL)
            return;
        snprintf(text, size, "%s %s: %s", levels[level], line->plugin, line->message);
        h->logs[h->log_count++] = text;
    }
}

static void note_harness_facts(kc_harness *h, const Kcycle__V1__Reply *reply);

static void count_object_status(kc_harness *h, const char *key);
static void note_waiting_actions(kc_harness *h, const Kcycle__V1__Reply *reply);

static void note_object_statuses(kc_harness *h, const Kcycle__V1__Reply *reply)
{
    for (size_t i = 0; i < reply->n_object_statuses; i++) {
        const Kcycle__V1__HarnessObjectStatus *st = reply->object_statuses[i];
        size_t size = strlen(st->kind) + strlen(st->namespace_) + strlen(st->name) + 4;
        char *key = malloc(size);
        if (key == NULL)
            return;
        snprintf(key, size, "%s %s%s%s", st->kind, st->namespace_, st->namespace_[0] ? "/" : "",
                 st->name);
        kv_list_set(&h->object_statuses, key, st->status_json);
        count_object_status(h, key);
        free(key);
    }
}

/* Pack req, send it, and return the reply (NULL with h->error set when the request failed,
 * the host's own error included). */
static Kcycle__V1__Reply *call(kc_harness *h, Kcycle__V1__Request *req)
{
    h->error[0] = '\0';
    req->id = ++h->request_id;
    req->generation = HARNESS_GENERATION;
    req->adopt_generation = req->call_case != KCYCLE__V1__REQUEST__CALL_HELLO;
    size_t len = kcycle__v1__request__get_packed_size(req);
    uint8_t *packed = malloc(len != 0 ? len : 1);
    if (packed == NULL) {
        set_error(h, "out of memory");
        return NULL;
    }
    kcycle__v1__request__pack(req, packed);
    Kcycle__V1__Reply *reply = h->transport->round_trip(h, packed, len);
    free(packed);
    if (reply == NULL)
        return NULL;
    note_logs(h, reply);
    note_object_statuses(h, reply);
    note_waiting_actions(h, reply);
    note_harness_facts(h, reply);
    if (reply->error != NULL && reply->error[0] != '\0') {
        set_error(h, "the plugin host: %s", reply->error);
        kcycle__v1__reply__free_unpacked(reply, NULL);
        return NULL;
    }
    return reply;
}

static struct pod *find_pod_in(const struct sim_spec *spec, const char *ns, size_t ns_len,
                               const char *name)
{
    for (uint32_t i = 0; i < spec->pod_count + spec->arrival_count; i++) {
        struct pod *p =
            i < spec->pod_count ? spec->pods[i] : spec->arrivals[i - spec->pod_count].pod;
        if (p != NULL && strcmp(p->name, name) == 0 && strlen(p->namespace) == ns_len &&
            strncmp(p->namespace, ns, ns_len) == 0)
            return p;
    }
    return NULL;
}

/* The pods a test may evaluate: those of the files without a node, and the workloads; the
 * latest update's first. */
static struct pod *find_pod(kc_harness *h, const char *ref)
{
    const char *slash = ref != NULL ? strchr(ref, '/') : NULL;
    const char *ns = "default", *name = ref;
    size_t ns_len = strlen(ns);
    if (slash != NULL) {
        ns = ref;
        ns_len = (size_t)(slash - ref);
        name = slash + 1;
    }
    for (uint32_t u = h->update_count; ref != NULL && u > 0; u--) {
        struct pod *p = find_pod_in(&h->updates[u - 1], ns, ns_len, name);
        if (p != NULL)
            return p;
    }
    struct pod *p = ref != NULL ? find_pod_in(&h->spec, ns, ns_len, name) : NULL;
    if (p != NULL)
        return p;
    set_error(h, "no pod '%s' in the cluster", ref != NULL ? ref : "(null)");
    return NULL;
}

static int node_position(kc_harness *h, const char *name)
{
    for (uint32_t i = 0; name != NULL && i < h->node_count; i++)
        if (strcmp(h->nodes[i], name) == 0)
            return (int)i;
    set_error(h, "no node '%s' in the cluster", name != NULL ? name : "(null)");
    return -1;
}

static void forget_evaluation(kc_harness *h)
{
    for (uint32_t i = 0; i < h->reason_total; i++)
        free(h->reasons[i]);
    free(h->reasons);
    free(h->reason_counts);
    h->reasons = NULL;
    h->reason_counts = NULL;
    h->reason_total = 0;
    for (uint32_t i = 0; i < h->node_count; i++) {
        h->feasible[i] = false;
        h->scores[i] = -1;
    }
}

static void keep_evaluation(kc_harness *h, const Kcycle__V1__EvaluateReply *e)
{
    forget_evaluation(h);
    for (size_t i = 0; i < e->n_feasible; i++) {
        if (e->feasible[i] >= h->node_count)
            continue;
        h->feasible[e->feasible[i]] = true;
        /* the plugin under test's scores (Hello index 0), per feasible node in order */
        for (size_t k = 0; k < e->n_scores; k++)
            if (e->scores[k]->plugin == 0 && i < e->scores[k]->n_scores)
                h->scores[e->feasible[i]] = e->scores[k]->scores[i];
    }
    h->reasons = calloc(e->n_reasons + 1, sizeof(*h->reasons));
    h->reason_counts = calloc(e->n_reasons + 1, sizeof(*h->reason_counts));
    if (h->reasons == NULL || h->reason_counts == NULL)
        return;
    size_t used = 0;
    h->message[0] = '\0';
    for (size_t i = 0; i < e->n_reasons; i++) {
        h->reasons[i] = strdup(e->reasons[i]->text);
        h->reason_counts[i] = e->reasons[i]->count;
        h->reason_total = (uint32_t)i + 1;
        used += (size_t)snprintf(h->message + used,
                                 used < sizeof(h->message) ? sizeof(h->message) - used : 0, "%s%s",
                                 i > 0 ? "; " : "", e->reasons[i]->text);
        if (used >= sizeof(h->message))
            used = sizeof(h->message) - 1;
    }
    if (e->message != NULL && e->message[0] != '\0')
        snprintf(h->message, sizeof(h->message), "%s", e->message);
}

static kc_status evaluate_as(kc_harness *h, const char *pod_ref, const uint32_t *candidates,
                             uint32_t count, bool score, Kcycle__V1__HarnessGroupCycle *group);

static int nominations_attach(kc_harness *h, const struct pod *pod, Kcycle__V1__Evaluate *ev);
static void nominations_detach(Kcycle__V1__Evaluate *ev);

static kc_status evaluate(kc_harness *h, const char *pod_ref, const uint32_t *candidates,
                          uint32_t count, bool score)
{
    return evaluate_as(h, pod_ref, candidates, count, score, NULL);
}

static kc_status evaluate_as(kc_harness *h, const char *pod_ref, const uint32_t *candidates,
                             uint32_t count, bool score, Kcycle__V1__HarnessGroupCycle *group)
{
    h->message[0] = '\0';
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL)
        return KC_ERROR;
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    if (msg == NULL) {
        set_error(h, "pod %s cannot be sent: %s", pod_ref, strerror(errno));
        return KC_ERROR;
    }
    Kcycle__V1__Evaluate ev = KCYCLE__V1__EVALUATE__INIT;
    ev.pod = msg;
    ev.candidates = (uint32_t *)candidates;
    ev.n_candidates = count;
    ev.want = count;
    ev.score = score;
    ev.harness_group = group;
    if (nominations_attach(h, pod, &ev) < 0) {
        nominations_detach(&ev);
        pod_proto_free(msg);
        set_error(h, "the nominated pods cannot be sent: %s", strerror(errno));
        return KC_ERROR;
    }
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE;
    req.evaluate = &ev;
    Kcycle__V1__Reply *reply = call(h, &req);
    pod_proto_free(msg);
    nominations_detach(&ev);
    if (reply == NULL)
        return KC_ERROR;
    kc_status st = KC_ERROR;
    if (reply->result_case == KCYCLE__V1__REPLY__RESULT_EVALUATE) {
        const Kcycle__V1__EvaluateReply *e = reply->evaluate;
        keep_evaluation(h, e);
        st = (kc_status)e->status;
        if (st == KC_SUCCESS && e->n_feasible == 0) {
            /* Filter's verdicts: unresolvable when every candidate was (preemption cannot
             * help), which for one candidate is that node's own status */
            const Kcycle__V1__Probe *probe = reply->probe;
            bool unresolvable = probe != NULL && count > 0;
            for (uint32_t i = 0; unresolvable && i < count; i++)
                unresolvable = candidates[i] < probe->node_status.len &&
                               probe->node_status.data[candidates[i]] == KC_UNRESOLVABLE;
            st = unresolvable ? KC_UNRESOLVABLE : KC_UNSCHEDULABLE;
        }
    } else {
        set_error(h, "the plugin host answered an evaluation with something else");
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return st;
}

KC_API kc_status kc_harness_filter(kc_harness *h, const char *pod, const char *node)
{
    int index = node_position(h, node);
    if (index < 0)
        return KC_ERROR;
    uint32_t candidate = (uint32_t)index;
    return evaluate(h, pod, &candidate, 1, false);
}

static kc_status evaluate_all(kc_harness *h, const char *pod, Kcycle__V1__HarnessGroupCycle *group)
{
    uint32_t *all = malloc((h->node_count + 1) * sizeof(*all));
    if (all == NULL)
        return KC_ERROR;
    for (uint32_t i = 0; i < h->node_count; i++)
        all[i] = i;
    kc_status st = evaluate_as(h, pod, all, h->node_count, true, group);
    free(all);
    return st;
}

KC_API kc_status kc_harness_evaluate(kc_harness *h, const char *pod)
{
    return evaluate_all(h, pod, NULL);
}

KC_API int kc_harness_feasible(kc_harness *h, const char *node)
{
    int index = node_position(h, node);
    return index >= 0 && h->feasible[index];
}

KC_API int64_t kc_harness_score(kc_harness *h, const char *node)
{
    int index = node_position(h, node);
    return index >= 0 ? h->scores[index] : -1;
}

KC_API uint32_t kc_harness_reason_count(kc_harness *h, const char *reason)
{
    for (uint32_t i = 0; reason != NULL && i < h->reason_total; i++)
        if (h->reasons[i] != NULL && strcmp(h->reasons[i], reason) == 0)
            return h->reason_counts[i];
    return 0;
}

static const Kcycle__V1__Phase wire_phases[] = {
    [KC_HARNESS_RESERVE] = KCYCLE__V1__PHASE__PHASE_RESERVE,
    [KC_HARNESS_UNRESERVE] = KCYCLE__V1__PHASE__PHASE_UNRESERVE,
    [KC_HARNESS_PERMIT] = KCYCLE__V1__PHASE__PHASE_PERMIT,
    [KC_HARNESS_PRE_BIND] = KCYCLE__V1__PHASE__PHASE_PRE_BIND,
    [KC_HARNESS_BIND] = KCYCLE__V1__PHASE__PHASE_BIND,
    [KC_HARNESS_POST_BIND] = KCYCLE__V1__PHASE__PHASE_POST_BIND,
};

static void forget_writes(kc_harness *h)
{
    for (uint32_t i = 0; i < h->write_count; i++)
        free(h->writes[i]);
    free(h->writes);
    h->writes = NULL;
    h->write_count = 0;
}

static void keep_writes(kc_harness *h, const Kcycle__V1__PhaseReply *r)
{
    h->writes = calloc(r->n_object_writes + 1, sizeof(*h->writes));
    for (size_t i = 0; h->writes != NULL && i < r->n_object_writes; i++) {
        const Kcycle__V1__ObjectWrite *w = r->object_writes[i];
        size_t size =
            strlen(w->kind) + strlen(w->namespace_) + strlen(w->name) + strlen(w->patch) + 8;
        char *text = malloc(size);
        if (text == NULL)
            return;
        snprintf(text, size, "%s %s/%s %s", w->kind, w->namespace_, w->name, w->patch);
        h->writes[h->write_count++] = text;
    }
}

static void forget_phase_results(kc_harness *h);
static kc_status call_phase(kc_harness *h, const char *pod_ref, Kcycle__V1__Phase phase,
                            const char *node);

KC_API kc_status kc_harness_call(kc_harness *h, const char *pod_ref, kc_harness_phase phase,
                                 const char *node)
{
    forget_phase_results(h);
    if (phase < KC_HARNESS_RESERVE || phase > KC_HARNESS_POST_BIND) {
        set_error(h, "phase %d is not one of kc_harness_phase", (int)phase);
        return KC_ERROR;
    }
    return call_phase(h, pod_ref, wire_phases[phase], node);
}

static void forget_preemption(kc_harness *h)
{
    free(h->nominated_node);
    h->nominated_node = NULL;
    for (uint32_t i = 0; i < h->victim_count; i++)
        free(h->victims[i]);
    free(h->victims);
    h->victims = NULL;
    h->victim_count = 0;
}

static void keep_preemption(kc_harness *h, const Kcycle__V1__PhaseReply *r)
{
    if (!r->preempted || r->nominated_node[0] == '\0')
        return; /* none chosen, or the plugin cleared the nomination */
    h->nominated_node = strdup(r->nominated_node);
    h->victims = calloc(r->n_victims + 1, sizeof(*h->victims));
    for (size_t i = 0; h->victims != NULL && i < r->n_victims; i++)
        if ((h->victims[h->victim_count] = strdup(r->victims[i])) != NULL)
            h->victim_count++;
}

/* What the last phase call left: its message, annotations, bind request, object writes and
 * preemption. */
static void forget_phase_results(kc_harness *h)
{
    h->message[0] = '\0';
    kv_list_free(&h->annotations);
    h->bind_requested = false;
    h->what_if_calls = 0;
    h->preempt_called = false;
    h->permit_timeout_ms = 0;
    forget_writes(h);
    forget_preemption(h);
}

static kc_status call_phase(kc_harness *h, const char *pod_ref, Kcycle__V1__Phase phase,
                            const char *node)
{
    forget_phase_results(h);
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL || (node != NULL && node_position(h, node) < 0))
        return KC_ERROR;
    Kcycle__V1__PhaseCall pc = KCYCLE__V1__PHASE_CALL__INIT;
    pc.phase = phase;
    pc.pod_uid = pod->uid;
    pc.node = (char *)(node != NULL ? node : "");
    pc.write_result = h->write_result;
    pc.harness_bind_result = h->bind_result;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_PHASE;
    req.phase = &pc;
    Kcycle__V1__Reply *reply = call(h, &req);
    if (reply == NULL)
        return KC_ERROR;
    kc_status st = KC_ERROR;
    if (reply->result_case == KCYCLE__V1__REPLY__RESULT_PHASE) {
        const Kcycle__V1__PhaseReply *r = reply->phase;
        st = (kc_status)r->status;
        h->bind_requested = r->bind_requested;
        h->what_if_calls = r->what_if_calls;
        h->preempt_called = r->preempted;
        h->permit_timeout_ms = r->timeout_ms;
        keep_writes(h, r);
        keep_preemption(h, r);
        snprintf(h->message, sizeof(h->message), "%s", r->message);
        for (size_t i = 0; i < r->n_annotations; i++)
            kv_list_set(&h->annotations, r->annotations[i]->key, r->annotations[i]->value);
    } else {
        set_error(h, "the plugin host answered a phase call with something else");
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return st;
}

/* ---- PostFilter and the queue's phases (a harness host serves them; docs/plugin-testing.md) */

KC_API kc_status kc_harness_post_filter(kc_harness *h, const char *pod_ref)
{
    return call_phase(h, pod_ref, KCYCLE__V1__PHASE__PHASE_POST_FILTER, NULL);
}

KC_API const char *kc_harness_nominated_node(kc_harness *h)
{
    return h->nominated_node;
}

KC_API uint32_t kc_harness_victim_count(kc_harness *h)
{
    return h->victim_count;
}

KC_API const char *kc_harness_victim_at(kc_harness *h, uint32_t index)
{
    return index < h->victim_count ? h->victims[index] : NULL;
}

/* Send a queue call for pod (and other, for less): the reply, or NULL with h->error set. */
static Kcycle__V1__Reply *queue_call(kc_harness *h, Kcycle__V1__QueueCall__Kind kind,
                                     const char *pod_ref, const char *other_ref)
{
    h->message[0] = '\0';
    h->error[0] = '\0'; /* a plugin's KC_ERROR answer leaves it "" (kc_harness_pre_enqueue) */
    struct pod *pod = find_pod(h, pod_ref);
    struct pod *other = pod != NULL && other_ref != NULL ? find_pod(h, other_ref) : NULL;
    if (pod == NULL || (other_ref != NULL && other == NULL))
        return NULL;
    Kcycle__V1__QueueCall qc = KCYCLE__V1__QUEUE_CALL__INIT;
    qc.kind = kind;
    qc.pod = pod_to_proto(pod);
    qc.other = other != NULL ? pod_to_proto(other) : NULL;
    qc.pod_enqueue_ms = pod->enqueue_ms; /* kc_harness_set_enqueue_ms */
    qc.other_enqueue_ms = other != NULL ? other->enqueue_ms : 0;
    Kcycle__V1__Reply *reply = NULL;
    if (qc.pod == NULL || (other != NULL && qc.other == NULL)) {
        set_error(h, "pod %s cannot be sent: %s", pod_ref, strerror(errno));
    } else {
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_QUEUE;
        req.queue = &qc;
        reply = call(h, &req);
    }
    pod_proto_free(qc.pod);
    pod_proto_free(qc.other);
    if (reply != NULL && reply->result_case != KCYCLE__V1__REPLY__RESULT_QUEUE) {
        set_error(h, "the plugin host answered a queue call with something else");
        kcycle__v1__reply__free_unpacked(reply, NULL);
        return NULL;
    }
    return reply;
}

KC_API int kc_harness_less(kc_harness *h, const char *pod_a, const char *pod_b)
{
    Kcycle__V1__Reply *reply = queue_call(h, KCYCLE__V1__QUEUE_CALL__KIND__KIND_LESS, pod_a,
                                          pod_b != NULL ? pod_b : "(null)");
    if (reply == NULL)
        return -1;
    int less = reply->queue->less;
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return less;
}

KC_API kc_status kc_harness_pre_enqueue(kc_harness *h, const char *pod_ref)
{
    Kcycle__V1__Reply *reply =
        queue_call(h, KCYCLE__V1__QUEUE_CALL__KIND__KIND_PRE_ENQUEUE, pod_ref, NULL);
    if (reply == NULL)
        return KC_ERROR;
    kc_status st = (kc_status)reply->queue->status;
    snprintf(h->message, sizeof(h->message), "%s", reply->queue->message);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return st;
}

static void forget_group_info(kc_harness *h);
static int keep_group_info(kc_harness *h, const Kcycle__V1__QueueReply *r);

KC_API kc_status kc_harness_group_of(kc_harness *h, const char *pod_ref)
{
    free(h->group_name);
    h->group_name = NULL;
    forget_group_info(h);
    h->group_min_member = 0;
    Kcycle__V1__Reply *reply = queue_call(h, KCYCLE__V1__QUEUE_CALL__KIND__KIND_GROUP_OF, pod_ref,
                                          NULL);
    if (reply == NULL)
        return KC_ERROR;
    const Kcycle__V1__QueueReply *r = reply->queue;
    kc_status st = (kc_status)r->status;
    if (st == KC_SUCCESS) {
        size_t size = strlen(r->group_namespace) + strlen(r->group_name) + 2;
        h->group_name = malloc(size);
        if (h->group_name != NULL)
            snprintf(h->group_name, size, "%s/%s", r->group_namespace, r->group_name);
        h->group_min_member = r->min_member != 0 ? r->min_member : 1;
        if (h->group_name == NULL || keep_group_info(h, r) < 0) {
            /* no half-kept group: kc_harness_group_info would answer one with no name */
            free(h->group_name);
            h->group_name = NULL;
            forget_group_info(h);
            set_error(h, "out of memory keeping pod %s's group", pod_ref);
            st = KC_ERROR;
        }
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return st;
}

KC_API const char *kc_harness_group_name(kc_harness *h)
{
    return h->group_name;
}

KC_API uint32_t kc_harness_group_min_member(kc_harness *h)
{
    return h->group_min_member;
}

KC_API const char *kc_harness_object_status(kc_harness *h, const char *kind, const char *object)
{
    if (kind == NULL || object == NULL)
        return NULL;
    char key[512];
    if ((size_t)snprintf(key, sizeof(key), "%s %s", kind, object) >= sizeof(key))
        return NULL;
    return kv_list_get(&h->object_statuses, key);
}

KC_API const char *kc_harness_message(kc_harness *h)
{
    return h->message;
}

KC_API uint32_t kc_harness_write_count(kc_harness *h)
{
    return h->write_count;
}

KC_API const char *kc_harness_write_at(kc_harness *h, uint32_t index)
{
    return index < h->write_count ? h->writes[index] : NULL;
}

KC_API int kc_harness_bind_requested(kc_harness *h)
{
    return h->bind_requested;
}

KC_API const char *kc_harness_annotation(kc_harness *h, const char *key)
{
    return kv_list_get(&h->annotations, key);
}

KC_API int kc_harness_cycle_has(kc_harness *h, const char *pod_ref, const char *key)
{
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL)
        return -1;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    req.sync = true;
    req.cycle_keys_of = pod->uid;
    Kcycle__V1__Reply *reply = call(h, &req);
    if (reply == NULL)
        return -1;
    /* an open cycle lists its keys; the harness cannot tell an open cycle without keys from
     * none, so a pod without keys answers 0 */
    int found = 0;
    const Kcycle__V1__Probe *probe = reply->probe;
    for (size_t i = 0; probe != NULL && i < probe->n_cycle_keys && key != NULL; i++)
        found |= strcmp(probe->cycle_keys[i], key) == 0;
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return found;
}

KC_API uint32_t kc_harness_log_count(kc_harness *h)
{
    return h->log_count;
}

KC_API const char *kc_harness_log_at(kc_harness *h, uint32_t index)
{
    return index < h->log_count ? h->logs[index] : NULL;
}

KC_API int kc_harness_logged(kc_harness *h, const char *text)
{
    for (uint32_t i = 0; text != NULL && i < h->log_count; i++)
        if (strstr(h->logs[i], text) != NULL)
            return 1;
    return 0;
}

KC_API void kc_harness_clear_logs(kc_harness *h)
{
    for (uint32_t i = 0; i < h->log_count; i++)
        free(h->logs[i]);
    h->log_count = 0;
}

KC_API const char *kc_harness_error(kc_harness *h)
{
    return h->error;
}

/* ---- open and close ---- */

/* The plugin's own name (the configuration must call it that): from its descriptor. */
static char *plugin_name(const char *path, char *error, size_t error_size)
{
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (so == NULL) {
        snprintf(error, error_size, "plugin %s: %s", path, dlerror());
        return NULL;
    }
    const kc_plugin_descriptor *(*query)(uint32_t) =
        (const kc_plugin_descriptor *(*)(uint32_t))dlsym(so, "kc_plugin_query");
    const kc_plugin_descriptor *d = query != NULL ? query(KC_ABI_VERSION) : NULL;
    char *name = d != NULL && d->name != NULL ? strdup(d->name) : NULL;
    if (name == NULL)
        snprintf(error, error_size, "plugin %s: %s", path,
                 query == NULL ? "not a kcycle plugin: no kc_plugin_query()"
                               : "kc_plugin_query() declined this SDK's ABI");
    dlclose(so);
    return name;
}

/* The names of the plugin under test and of options->more_plugins (read only when the
 * caller's struct has the field). */
static int plugin_names(kc_harness *h, const kc_harness_options *o, char **names, char *error,
                        size_t error_size)
{
    bool more = o->struct_size >= offsetof(kc_harness_options, more_args_json) +
                                      sizeof(o->more_args_json) &&
                o->more_plugins != NULL;
    h->plugin_count = 1;
    while (more && o->more_plugins[h->plugin_count - 1] != NULL) {
        if (h->plugin_count == HARNESS_MAX_PLUGINS) {
            snprintf(error, error_size, "more than %d plugins in one harness",
                     HARNESS_MAX_PLUGINS);
            return -E2BIG;
        }
        h->plugin_count++;
    }
    for (uint32_t i = 0; i < h->plugin_count; i++) {
        names[i] = plugin_name(i == 0 ? o->plugin : o->more_plugins[i - 1], error, error_size);
        if (names[i] == NULL)
            return -EINVAL;
    }
    return 0;
}

static int load_cluster(struct sim_spec *spec, const kc_harness_options *o, char *error,
                        size_t error_size)
{
    struct kc_error err = {{0}};
    char path[64] = "";
    const char *file = o->cluster_file;
    if (file == NULL && o->cluster_yaml != NULL) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof(path), "%s/plugintest-XXXXXX.yaml",
                 dir != NULL && strlen(dir) < 32 ? dir : "/tmp");
        int fd = mkstemps(path, 5);
        size_t len = strlen(o->cluster_yaml);
        if (fd < 0 || write(fd, o->cluster_yaml, len) != (ssize_t)len) {
            snprintf(error, error_size, "cannot write the cluster to %s: %s", path,
                     strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(path);
            }
            return -EIO;
        }
        close(fd);
        file = path;
    }
    if (file == NULL) {
        snprintf(error, error_size, "no cluster: set cluster_file or cluster_yaml");
        return -EINVAL;
    }
    int rc = simfile_load(file, "kcycle", spec, &err);
    if (path[0] != '\0')
        unlink(path);
    if (rc < 0)
        snprintf(error, error_size, "%s", err.message);
    return rc;
}

/* ---- the cluster: deltas, and the replica's node order mirrored ---- */

static int note_node_put(kc_harness *h, const char *name)
{
    for (uint32_t i = 0; i < h->node_count; i++)
        if (strcmp(h->nodes[i], name) == 0)
            return 0; /* replaced in place */
    uint32_t capacity = h->node_capacity;
    void *grown = array_grow(h->nodes, &h->node_capacity, h->node_count + 1, sizeof(*h->nodes));
    if (grown == NULL)
        return -ENOMEM;
    h->nodes = grown;
    if (h->node_capacity != capacity || h->feasible == NULL) {
        bool *feasible = realloc(h->feasible, h->node_capacity * sizeof(*feasible));
        if (feasible != NULL)
            h->feasible = feasible;
        int64_t *scores = realloc(h->scores, h->node_capacity * sizeof(*scores));
        if (scores != NULL)
            h->scores = scores;
        if (feasible == NULL || scores == NULL)
            return -ENOMEM;
    }
    if ((h->nodes[h->node_count] = strdup(name)) == NULL)
        return -ENOMEM;
    h->feasible[h->node_count] = false;
    h->scores[h->node_count] = -1;
    h->node_count++;
    return 0;
}

/* As the replica's cache removes a node: the last one takes its place. */
static void note_node_delete(kc_harness *h, uint32_t index)
{
    free(h->nodes[index]);
    h->nodes[index] = h->nodes[--h->node_count];
}

struct deltas {
    Kcycle__V1__Delta *items;
    Kcycle__V1__Delta **list;
    uint32_t count;
};

static void deltas_free(struct deltas *d)
{
    for (uint32_t i = 0; i < d->count; i++) {
        if (d->items[i].change_case == KCYCLE__V1__DELTA__CHANGE_NODE_PUT)
            node_proto_free(d->items[i].node_put);
        else if (d->items[i].change_case == KCYCLE__V1__DELTA__CHANGE_POD_PUT)
            pod_proto_free(d->items[i].pod_put);
        else if (d->items[i].change_case == KCYCLE__V1__DELTA__CHANGE_OBJECT_PUT)
            custom_object_proto_free(d->items[i].object_put);
    }
    free(d->items);
    free(d->list);
}

/* A put for each node, each pod with a node and each object of spec (in that order, so a
 * pod's node exists first). */
static int deltas_from_spec(kc_harness *h, const struct sim_spec *spec, struct deltas *d)
{
    uint32_t max = spec->node_count + spec->pod_count + spec->object_count;
    d->items = calloc(max + 1, sizeof(*d->items));
    d->list = calloc(max + 1, sizeof(*d->list));
    d->count = 0;
    if (d->items == NULL || d->list == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < max; i++) {
        Kcycle__V1__Delta *delta = &d->items[d->count];
        kcycle__v1__delta__init(delta);
        void *msg;
        if (i < spec->node_count) {
            delta->change_case = KCYCLE__V1__DELTA__CHANGE_NODE_PUT;
            msg = delta->node_put = node_to_proto(spec->nodes[i]);
            if (msg != NULL && note_node_put(h, spec->nodes[i]->name) < 0)
                return -ENOMEM;
        } else if (i < spec->node_count + spec->pod_count) {
            const struct pod *pod = spec->pods[i - spec->node_count];
            if (pod->node_name == NULL && !h->pending_events)
                continue; /* a pod the test evaluates, no cluster event (docs/plugin-testing.md) */
            delta->change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
            msg = delta->pod_put = pod_to_proto(pod);
        } else {
            delta->change_case = KCYCLE__V1__DELTA__CHANGE_OBJECT_PUT;
            msg = delta->object_put =
                custom_object_to_proto(&spec->objects[i - spec->node_count - spec->pod_count]);
        }
        if (msg == NULL)
            return errno == ENOMEM ? -ENOMEM : -EINVAL;
        d->list[d->count++] = delta;
    }
    return 0;
}

/* A plugin that failed to load or init: -EINVAL with error saying which and why. */
static int hello_errors(kc_harness *h, const Kcycle__V1__HelloReply *r, char *error,
                        size_t error_size)
{
    for (size_t i = 0; i < r->n_plugins; i++) {
        if (r->plugins[i]->error[0] == '\0')
            continue;
        /* init's failure says "see the plugin's log line": bring the line along */
        const char *said = h->log_count > 0 ? h->logs[h->log_count - 1] : NULL;
        snprintf(error, error_size, "%s%s%s%s%s", i > 0 ? r->plugins[i]->name : "",
                 i > 0 ? ": " : "", r->plugins[i]->error,
                 said != NULL ? "; the plugin logged: " : "", said != NULL ? said : "");
        return -EINVAL;
    }
    return 0;
}

/* name is in options->queue_sort_off (read only when the caller's struct has it). */
static bool queue_sort_left_out(const kc_harness_options *o, const char *name)
{
    if (o->struct_size < offsetof(kc_harness_options, queue_sort_off) + sizeof(o->queue_sort_off))
        return false;
    for (const char *const *off = o->queue_sort_off; off != NULL && *off != NULL; off++)
        if (strcmp(*off, name) == 0)
            return true;
    return false;
}

static void set_filter_threads(Kcycle__V1__Hello *hello, const kc_harness_options *o);

/* The hello: the plugins (the one under test first), and the whole cluster as the replica's
 * snapshot. */
static int hello(kc_harness *h, const kc_harness_options *o, char *const *names, char *error,
                 size_t error_size)
{
    struct deltas d;
    int rc = deltas_from_spec(h, &h->spec, &d);
    Kcycle__V1__Reply *reply = NULL;
    if (rc == 0) {
        Kcycle__V1__PluginSpec ps[HARNESS_MAX_PLUGINS];
        Kcycle__V1__PluginSpec *specs[HARNESS_MAX_PLUGINS];
        for (uint32_t i = 0; i < h->plugin_count; i++) {
            kcycle__v1__plugin_spec__init(&ps[i]);
            ps[i].name = names[i];
            ps[i].path = (char *)(i == 0 ? o->plugin : o->more_plugins[i - 1]);
            const char *args = i == 0 ? o->args_json
                               : o->more_args_json != NULL ? o->more_args_json[i - 1]
                                                           : NULL;
            ps[i].args_json = (char *)(args != NULL ? args : "{}");
            ps[i].queue_sort_off = queue_sort_left_out(o, names[i]);
            specs[i] = &ps[i];
        }
        Kcycle__V1__Hello hi = KCYCLE__V1__HELLO__INIT;
        hi.abi_version = KC_ABI_VERSION;
        hi.plugins = specs;
        hi.n_plugins = h->plugin_count;
        hi.parallelism = 1;
        hi.capture_logs = true;
        set_filter_threads(&hi, o);
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
        req.hello = &hi;
        req.snapshot = true;
        req.deltas = d.list;
        req.n_deltas = d.count;
        reply = call(h, &req);
        if (reply == NULL) {
            snprintf(error, error_size, "%s", h->error);
            rc = -EIO;
        } else if (reply->result_case != KCYCLE__V1__REPLY__RESULT_HELLO ||
                   reply->hello->n_plugins != h->plugin_count) {
            snprintf(error, error_size, "the plugin host answered the hello with something else");
            rc = -EPROTO;
        } else {
            rc = hello_errors(h, reply->hello, error, error_size);
            h->requeue_events = reply->hello->plugins[0]->requeue_events;
        }
    } else {
        snprintf(error, error_size, "the cluster cannot be sent: %s", strerror(-rc));
    }
    deltas_free(&d);
    if (reply != NULL)
        kcycle__v1__reply__free_unpacked(reply, NULL);
    return rc;
}

/* Send deltas with a sync call: 0, or -EIO with h->error set. */
static int sync_deltas(kc_harness *h, Kcycle__V1__Delta **list, uint32_t count)
{
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    req.sync = true;
    req.deltas = list;
    req.n_deltas = count;
    Kcycle__V1__Reply *reply = call(h, &req);
    if (reply == NULL)
        return -EIO;
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return 0;
}

static void deltas_pods_first(struct deltas *d);
static int assumed_position(const kc_harness *h, const char *uid);
static void assumed_drop(kc_harness *h, const char *uid);

/* An update that binds an assumed pod (a nodeName) ends the assumption: the host confirms it
 * and drops its assumed copy, so the harness drops the uid too. A pending pod's update keeps
 * it, as the scheduler's cache keeps an assumed pod whose object changes before its binding. */
static void drop_confirmed(kc_harness *h, const struct sim_spec *spec)
{
    for (uint32_t i = 0; i < spec->pod_count; i++)
        if (spec->pods[i]->node_name != NULL)
            assumed_drop(h, spec->pods[i]->uid);
}

KC_API int kc_harness_update(kc_harness *h, const char *cluster_yaml)
{
    kc_harness_options o = {.struct_size = sizeof(o), .cluster_yaml = cluster_yaml};
    struct sim_spec spec;
    memset(&spec, 0, sizeof(spec));
    h->error[0] = '\0';
    int rc = load_cluster(&spec, &o, h->error, sizeof(h->error));
    if (rc < 0)
        return rc;
    void *grown = realloc(h->updates, (h->update_count + 1) * sizeof(*h->updates));
    if (grown == NULL) {
        simfile_free(&spec);
        return -ENOMEM;
    }
    h->updates = grown;
    h->updates[h->update_count++] = spec; /* kept: its pods are evaluable */
    struct deltas d;
    rc = deltas_from_spec(h, &h->updates[h->update_count - 1], &d);
    if (rc == 0 && h->pods_first)
        deltas_pods_first(&d);
    if (rc == 0)
        rc = sync_deltas(h, d.list, d.count);
    if (rc == 0)
        drop_confirmed(h, &h->updates[h->update_count - 1]);
    else if (rc != -EIO)
        set_error(h, "the update cannot be sent: %s", strerror(-rc));
    deltas_free(&d);
    return rc;
}

KC_API int kc_harness_delete_node(kc_harness *h, const char *node)
{
    int index = node_position(h, node);
    if (index < 0)
        return -ENOENT;
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_NODE_DELETE;
    delta.node_delete = (char *)node;
    Kcycle__V1__Delta *list[] = {&delta};
    int rc = sync_deltas(h, list, 1);
    if (rc == 0)
        note_node_delete(h, (uint32_t)index);
    return rc;
}

KC_API int kc_harness_delete_pod(kc_harness *h, const char *pod_ref)
{
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL)
        return -ENOENT;
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_POD_DELETE;
    delta.pod_delete = pod->uid;
    /* an assumed pod is forgotten first, as the scheduler's cache forgets it when it goes */
    Kcycle__V1__Delta forget = KCYCLE__V1__DELTA__INIT;
    forget.change_case = KCYCLE__V1__DELTA__CHANGE_FORGET;
    forget.forget = pod->uid;
    bool assumed = assumed_position(h, pod->uid) >= 0;
    Kcycle__V1__Delta *list[] = {&forget, &delta};
    int rc = assumed ? sync_deltas(h, list, 2) : sync_deltas(h, &list[1], 1);
    if (rc == 0)
        assumed_drop(h, pod->uid);
    return rc;
}

static void additions_free(kc_harness *h);

KC_API int kc_harness_open(const kc_harness_options *o, kc_harness **out, char *error,
                           size_t error_size)
{
    char ignored[8];
    if (error == NULL || error_size == 0) {
        error = ignored;
        error_size = sizeof(ignored);
    }
    error[0] = '\0';
    *out = NULL;
    if (o == NULL || o->struct_size < sizeof(uint32_t) * 2 || o->plugin == NULL) {
        snprintf(error, error_size, "no options, or no plugin in them");
        return -EINVAL;
    }
    kc_harness *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    channel_init(&h->channel, -1);
    h->pid = -1;
    h->pending_events = o->struct_size >= offsetof(kc_harness_options, pending_pods_as_events) +
                                              sizeof(o->pending_pods_as_events) &&
                        o->pending_pods_as_events != 0;
    int rc = load_cluster(&h->spec, o, error, error_size);
    char *names[HARNESS_MAX_PLUGINS] = {NULL};
    if (rc == 0)
        rc = plugin_names(h, o, names, error, error_size);
    if (rc == 0 && (h->plugin_name = strdup(names[0])) == NULL)
        rc = -ENOMEM;
    if (rc == 0 && o->mode == KC_HARNESS_PROCESS) {
        const char *binary = o->host_binary != NULL ? o->host_binary : getenv("KCYCLE_PLUGIN_HOST");
        /* then the one installed with this library, then the PATH's (a staged install) */
        if (binary == NULL || binary[0] == '\0')
            binary = access(KC_PLUGINTEST_HOST_BINARY, X_OK) == 0 ? KC_PLUGINTEST_HOST_BINARY
                                                                  : "kcycle-plugin-host";
        h->transport = &child_process;
        rc = spawn_host(h, binary);
        if (rc < 0)
            snprintf(error, error_size, "%s", h->error);
    } else if (rc == 0) {
        struct plugin_host_options ho = {0};
        struct kc_error err = {{0}};
        h->transport = &in_process;
        rc = plugin_host_open(&ho, &h->local, &err);
        if (rc < 0)
            snprintf(error, error_size, "%s", err.message);
    }
    if (rc == 0)
        rc = hello(h, o, names, error, error_size);
    for (uint32_t i = 0; i < HARNESS_MAX_PLUGINS; i++)
        free(names[i]);
    if (rc < 0) {
        kc_harness_close(h);
        return rc;
    }
    *out = h;
    return 0;
}

KC_API void kc_harness_close(kc_harness *h)
{
    if (h == NULL)
        return;
    if (h->transport != NULL)
        h->transport->close(h);
    forget_evaluation(h);
    for (uint32_t i = 0; i < h->node_count; i++)
        free(h->nodes[i]);
    free(h->nodes);
    for (uint32_t i = 0; i < h->update_count; i++)
        simfile_free(&h->updates[i]);
    free(h->updates);
    free(h->feasible);
    free(h->scores);
    kv_list_free(&h->annotations);
    kv_list_free(&h->object_statuses);
    free(h->cycle_string);
    forget_preemption(h);
    free(h->group_name);
    forget_group_info(h);
    free(h->plugin_name);
    kv_list_free(&h->status_counts);
    kv_list_free(&h->waiting_counts);
    kv_list_free(&h->waiting_messages);
    forget_writes(h);
    kc_harness_clear_logs(h);
    free(h->logs);
    additions_free(h);
    simfile_free(&h->spec);
    free(h);
}

/* ---- Added in 1.2: the clock, pods assumed and forgotten, objects deleted, cycle strings and
 * skips (plugin.proto's HarnessControl and HarnessFacts; docs/plugin-testing.md) ---- */

/* The plugin under test is Hello index 0: its bit in the facts' plugin masks. */
static void note_harness_facts(kc_harness *h, const Kcycle__V1__Reply *reply)
{
    const Kcycle__V1__HarnessFacts *facts = reply->harness_facts;
    if (reply->result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE)
        return;
    h->pre_filter_skipped = facts != NULL && (facts->pre_filter_skipped & 1) != 0;
    h->pre_score_skipped = facts != NULL && (facts->pre_score_skipped & 1) != 0;
}

/* A sync request carrying control (NULL: none) and one delta (NULL: none): 0, or -EIO with
 * h->error set. */
static int sync_with(kc_harness *h, Kcycle__V1__HarnessControl *control, Kcycle__V1__Delta *delta)
{
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    req.sync = true;
    req.harness_control = control;
    Kcycle__V1__Delta *list[] = {delta};
    req.deltas = delta != NULL ? list : NULL;
    req.n_deltas = delta != NULL ? 1 : 0;
    Kcycle__V1__Reply *reply = call(h, &req);
    if (reply == NULL)
        return -EIO;
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return 0;
}

KC_API int kc_harness_set_clock(kc_harness *h, int64_t now_ms)
{
    Kcycle__V1__HarnessControl control = KCYCLE__V1__HARNESS_CONTROL__INIT;
    control.set_clock = true;
    control.now_ms = now_ms;
    return sync_with(h, &control, NULL);
}

KC_API const char *kc_harness_cycle_string(kc_harness *h, const char *pod_ref, const char *key)
{
    free(h->cycle_string);
    h->cycle_string = NULL;
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL || key == NULL)
        return NULL;
    Kcycle__V1__HarnessControl control = KCYCLE__V1__HARNESS_CONTROL__INIT;
    control.cycle_string_key = (char *)key;
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    req.sync = true;
    req.cycle_keys_of = pod->uid;
    req.harness_control = &control;
    Kcycle__V1__Reply *reply = call(h, &req);
    if (reply == NULL)
        return NULL;
    const Kcycle__V1__HarnessFacts *facts = reply->harness_facts;
    if (facts != NULL && facts->has_cycle_string)
        h->cycle_string = strdup(facts->cycle_string);
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return h->cycle_string;
}

KC_API int kc_harness_pre_filter_skipped(kc_harness *h)
{
    return h->pre_filter_skipped;
}

KC_API int kc_harness_pre_score_skipped(kc_harness *h)
{
    return h->pre_score_skipped;
}

/* The pod puts first, each group in its order: a stable partition of the list. */
static void deltas_pods_first(struct deltas *d)
{
    uint32_t placed = 0;
    for (uint32_t i = 0; i < d->count; i++) {
        if (d->list[i]->change_case != KCYCLE__V1__DELTA__CHANGE_POD_PUT)
            continue;
        Kcycle__V1__Delta *pod = d->list[i];
        memmove(&d->list[placed + 1], &d->list[placed], (i - placed) * sizeof(*d->list));
        d->list[placed++] = pod;
    }
}

KC_API int kc_harness_update_pods_first(kc_harness *h, const char *cluster_yaml)
{
    h->pods_first = true;
    int rc = kc_harness_update(h, cluster_yaml);
    h->pods_first = false;
    return rc;
}

/* ---- Added in 1.2 (docs/plugin-testing.md): what a plugin's tests used to need a
 * fake host for; each works the same in both modes, through the plugin host ---- */

static void count_object_status(kc_harness *h, const char *key)
{
    const char *was = kv_list_get(&h->status_counts, key);
    char count[16];
    snprintf(count, sizeof(count), "%lu", (was != NULL ? strtoul(was, NULL, 10) : 0) + 1);
    kv_list_set(&h->status_counts, key, count);
}

KC_API uint32_t kc_harness_object_status_count(kc_harness *h, const char *kind, const char *object)
{
    char key[512];
    if (kind == NULL || object == NULL ||
        (size_t)snprintf(key, sizeof(key), "%s %s", kind, object) >= sizeof(key))
        return 0;
    const char *count = kv_list_get(&h->status_counts, key);
    return count != NULL ? (uint32_t)strtoul(count, NULL, 10) : 0;
}

/* Reply.waiting_actions: each allow and rejection counted per pod uid ("ALLOWED REJECTED"). */
static void note_waiting_actions(kc_harness *h, const Kcycle__V1__Reply *reply)
{
    for (size_t i = 0; i < reply->n_waiting_actions; i++) {
        const Kcycle__V1__WaitingAction *a = reply->waiting_actions[i];
        const char *was = kv_list_get(&h->waiting_counts, a->uid);
        unsigned long allowed = 0, rejected = 0;
        if (was != NULL && sscanf(was, "%lu %lu", &allowed, &rejected) != 2)
            allowed = rejected = 0;
        if (a->reject) {
            rejected++;
            kv_list_set(&h->waiting_messages, a->uid, a->message);
        } else {
            allowed++;
        }
        char counts[48];
        snprintf(counts, sizeof(counts), "%lu %lu", allowed, rejected);
        kv_list_set(&h->waiting_counts, a->uid, counts);
    }
}

static uint32_t waiting_count(kc_harness *h, const char *pod_ref, bool rejected)
{
    struct pod *pod = find_pod(h, pod_ref);
    const char *counts = pod != NULL ? kv_list_get(&h->waiting_counts, pod->uid) : NULL;
    unsigned long allowed = 0, rejects = 0;
    if (counts == NULL || sscanf(counts, "%lu %lu", &allowed, &rejects) != 2)
        return 0;
    return (uint32_t)(rejected ? rejects : allowed);
}

KC_API uint32_t kc_harness_waiting_allowed(kc_harness *h, const char *pod)
{
    return waiting_count(h, pod, false);
}

KC_API uint32_t kc_harness_waiting_rejected(kc_harness *h, const char *pod)
{
    return waiting_count(h, pod, true);
}

KC_API const char *kc_harness_waiting_message(kc_harness *h, const char *pod_ref)
{
    struct pod *pod = find_pod(h, pod_ref);
    return pod != NULL ? kv_list_get(&h->waiting_messages, pod->uid) : NULL;
}

static void forget_group_info(kc_harness *h)
{
    free(h->group_namespace);
    free(h->group_short_name);
    h->group_namespace = h->group_short_name = NULL;
    h->group_flags = 0;
    h->group_timeout_ms = h->group_backoff_ms = h->group_creation_ms = 0;
}

/* 0, or -ENOMEM (the caller forgets the group). */
static int keep_group_info(kc_harness *h, const Kcycle__V1__QueueReply *r)
{
    h->group_namespace = strdup(r->group_namespace);
    h->group_short_name = strdup(r->group_name);
    if (h->group_namespace == NULL || h->group_short_name == NULL)
        return -ENOMEM;
    h->group_flags = r->group_flags;
    h->group_timeout_ms = r->schedule_timeout_ms;
    h->group_backoff_ms = r->backoff_ms;
    h->group_creation_ms = r->creation_ms;
    return 0;
}

KC_API int kc_harness_group_info(kc_harness *h, kc_group_info *out)
{
    if (out == NULL || out->struct_size < sizeof(uint32_t))
        return 0;
    uint32_t size = out->struct_size < sizeof(*out) ? out->struct_size : (uint32_t)sizeof(*out);
    kc_group_info full = {.struct_size = out->struct_size};
    int placed = h->group_name != NULL;
    if (placed) {
        full.flags = h->group_flags;
        full.namespace_name = h->group_namespace;
        full.name = h->group_short_name;
        full.min_member = h->group_min_member;
        full.schedule_timeout_ms = h->group_timeout_ms;
        full.backoff_ms = h->group_backoff_ms;
        full.creation_ms = h->group_creation_ms;
    }
    memcpy(out, &full, size);
    return placed;
}

KC_API int kc_harness_set_enqueue_ms(kc_harness *h, const char *pod_ref, int64_t enqueue_ms)
{
    h->error[0] = '\0';
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL)
        return -ENOENT;
    pod->enqueue_ms = enqueue_ms;
    return 0;
}

KC_API kc_status kc_harness_evaluate_in_group(kc_harness *h, const char *pod, uint32_t index,
                                              uint32_t count, uint32_t needed)
{
    Kcycle__V1__HarnessGroupCycle position = KCYCLE__V1__HARNESS_GROUP_CYCLE__INIT;
    position.index = index;
    position.count = count;
    position.needed = needed;
    return evaluate_all(h, pod, &position);
}

/* The plugin under test holds pod_ref's pod in Permit on node, as the scheduler's waiting list
 * would (a WaitingPod delta, sent with a sync call). A harness host refuses a pod with no open
 * cycle and no assumption: -ENOENT then, with h->error saying so. */
KC_API int kc_harness_wait(kc_harness *h, const char *pod_ref, const char *node)
{
    h->error[0] = '\0';
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL || node_position(h, node) < 0)
        return -ENOENT;
    Kcycle__V1__WaitingPod waiting = KCYCLE__V1__WAITING_POD__INIT;
    char *plugins[] = {h->plugin_name};
    waiting.uid = pod->uid;
    waiting.node = (char *)node;
    waiting.plugins = plugins;
    waiting.n_plugins = 1;
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_WAITING_PUT;
    delta.waiting_put = &waiting;
    Kcycle__V1__Delta *list[] = {&delta};
    int rc = sync_deltas(h, list, 1);
    if (rc < 0 && strstr(h->error, "cannot wait:") != NULL) {
        set_error(h,
                  "pod %s cannot wait on %s: it has no open cycle and is not assumed (evaluate "
                  "it or kc_harness_assume it first)",
                  pod_ref, node);
        return -ENOENT;
    }
    return rc;
}

KC_API void kc_harness_set_bind_result(kc_harness *h, int result)
{
    h->bind_result = result < 0 ? result : 0;
}

KC_API uint32_t kc_harness_what_if_count(kc_harness *h)
{
    return h->what_if_calls;
}

KC_API int kc_harness_preempt_called(kc_harness *h)
{
    return h->preempt_called;
}

KC_API uint32_t kc_harness_permit_timeout_ms(kc_harness *h)
{
    return h->permit_timeout_ms;
}

/* ---- end of the 1.2 additions for the queue, the binder and waiting pods ---- */

/* ---- Added in 1.2: nominated pods, assumed pods, object deletes, what-if views, requeue
 * events and PreFilter's Skip (docs/plugin-testing.md). Each goes through the plugin host
 * protocol, so both isolation modes serve it alike. ---- */

static int assumed_position(const kc_harness *h, const char *uid)
{
    for (uint32_t i = 0; i < h->assumed_count; i++)
        if (strcmp(h->assumed[i], uid) == 0)
            return (int)i;
    return -1;
}

/* The pod of uid is assumed no more (forgotten, deleted, or bound by an update). */
static void assumed_drop(kc_harness *h, const char *uid)
{
    int at = assumed_position(h, uid);
    if (at < 0)
        return;
    free(h->assumed[at]);
    h->assumed[at] = h->assumed[--h->assumed_count];
}

static void assumed_free(kc_harness *h)
{
    for (uint32_t i = 0; i < h->assumed_count; i++)
        free(h->assumed[i]);
    free(h->assumed);
    h->assumed = NULL;
    h->assumed_count = 0;
}

/* What the 1.2 additions keep: the nominations and the assumed pods. */
static void additions_free(kc_harness *h)
{
    assumed_free(h);
    for (uint32_t i = 0; i < h->nomination_count; i++)
        free(h->nominated_nodes[i]);
    free(h->nominated_nodes);
    free(h->nominated_pods);
    h->nominated_nodes = NULL;
    h->nominated_pods = NULL;
    h->nomination_count = 0;
}

/* The nominations that count for pod, as the scheduler picks them (preempt.c): not the pod
 * itself, and of at least its priority. */
static int nominations_attach(kc_harness *h, const struct pod *pod, Kcycle__V1__Evaluate *ev)
{
    ev->nominated = calloc(h->nomination_count + 1, sizeof(*ev->nominated));
    if (ev->nominated == NULL)
        return -1;
    for (uint32_t i = 0; i < h->nomination_count; i++) {
        const struct pod *other = h->nominated_pods[i];
        if (other == pod || strcmp(other->uid, pod->uid) == 0 || other->priority < pod->priority)
            continue;
        Kcycle__V1__NominatedPod *n = malloc(sizeof(*n));
        if (n == NULL)
            return -1;
        kcycle__v1__nominated_pod__init(n);
        ev->nominated[ev->n_nominated++] = n;
        n->node = h->nominated_nodes[i];
        if ((n->pod = pod_to_proto(other)) == NULL)
            return -1;
    }
    return 0;
}

static void nominations_detach(Kcycle__V1__Evaluate *ev)
{
    for (size_t i = 0; i < ev->n_nominated; i++) {
        pod_proto_free(ev->nominated[i]->pod);
        free(ev->nominated[i]);
    }
    free(ev->nominated);
    ev->nominated = NULL;
    ev->n_nominated = 0;
}

KC_API int kc_harness_nominate(kc_harness *h, const char *pod_ref, const char *node)
{
    h->error[0] = '\0';
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL || (node != NULL && node_position(h, node) < 0))
        return -ENOENT;
    uint32_t i = 0;
    /* by uid: an update redefines a pod (a new struct), still the same pod */
    while (i < h->nomination_count && strcmp(h->nominated_pods[i]->uid, pod->uid) != 0)
        i++;
    if (i < h->nomination_count) { /* renominated or taken back: drop the old one */
        free(h->nominated_nodes[i]);
        h->nomination_count--;
        memmove(&h->nominated_pods[i], &h->nominated_pods[i + 1],
                (h->nomination_count - i) * sizeof(*h->nominated_pods));
        memmove(&h->nominated_nodes[i], &h->nominated_nodes[i + 1],
                (h->nomination_count - i) * sizeof(*h->nominated_nodes));
    }
    if (node == NULL)
        return 0;
    struct pod **pods =
        realloc(h->nominated_pods, (h->nomination_count + 1) * sizeof(*h->nominated_pods));
    if (pods == NULL)
        return -ENOMEM;
    h->nominated_pods = pods;
    char **nodes =
        realloc(h->nominated_nodes, (h->nomination_count + 1) * sizeof(*h->nominated_nodes));
    if (nodes == NULL)
        return -ENOMEM;
    h->nominated_nodes = nodes;
    if ((nodes[h->nomination_count] = strdup(node)) == NULL)
        return -ENOMEM;
    pods[h->nomination_count++] = pod;
    return 0;
}

KC_API int kc_harness_assume(kc_harness *h, const char *pod_ref, const char *node)
{
    h->error[0] = '\0';
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL || node == NULL || node_position(h, node) < 0)
        return -ENOENT;
    if (pod->node_name != NULL || assumed_position(h, pod->uid) >= 0) {
        set_error(h, "pod %s is %s: only a pending pod is assumed, once until it is forgotten",
                  pod_ref, pod->node_name != NULL ? "placed on a node" : "assumed already");
        return -EEXIST;
    }
    char **grown = realloc(h->assumed, (h->assumed_count + 1) * sizeof(*h->assumed));
    if (grown == NULL)
        return -ENOMEM;
    h->assumed = grown;
    if ((h->assumed[h->assumed_count] = strdup(pod->uid)) == NULL)
        return -ENOMEM;
    Kcycle__V1__Assume assume = KCYCLE__V1__ASSUME__INIT;
    assume.node = (char *)node;
    if ((assume.pod = pod_to_proto(pod)) == NULL) {
        set_error(h, "pod %s cannot be sent: %s", pod_ref, strerror(errno));
        free(h->assumed[h->assumed_count]);
        return -ENOMEM;
    }
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_ASSUME;
    delta.assume = &assume;
    Kcycle__V1__Delta *list[] = {&delta};
    int rc = sync_deltas(h, list, 1);
    pod_proto_free(assume.pod);
    if (rc == 0)
        h->assumed_count++;
    else
        free(h->assumed[h->assumed_count]);
    return rc;
}

KC_API int kc_harness_forget(kc_harness *h, const char *pod_ref)
{
    h->error[0] = '\0';
    struct pod *pod = find_pod(h, pod_ref);
    if (pod == NULL)
        return -ENOENT;
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_FORGET;
    delta.forget = pod->uid;
    Kcycle__V1__Delta *list[] = {&delta};
    int rc = sync_deltas(h, list, 1);
    if (rc == 0)
        assumed_drop(h, pod->uid);
    return rc;
}

static const struct sim_object *find_object_in(const struct sim_spec *spec, const char *kind,
                                               const char *ns, size_t ns_len, const char *name)
{
    for (uint32_t i = spec->object_count; i > 0; i--) {
        const struct sim_object *o = &spec->objects[i - 1];
        const char *ons = o->namespace != NULL ? o->namespace : "";
        if (strcmp(o->kind, kind) == 0 && strcmp(o->name, name) == 0 &&
            strlen(ons) == ns_len && strncmp(ons, ns, ns_len) == 0)
            return o;
    }
    return NULL;
}

/* The object's latest content: the newest update's, else the cluster file's. */
static const struct sim_object *find_object(kc_harness *h, const char *kind, const char *ref)
{
    const char *slash = strchr(ref, '/');
    const char *ns = slash != NULL ? ref : "", *name = slash != NULL ? slash + 1 : ref;
    size_t ns_len = slash != NULL ? (size_t)(slash - ref) : 0;
    for (uint32_t u = h->update_count; u > 0; u--) {
        const struct sim_object *o = find_object_in(&h->updates[u - 1], kind, ns, ns_len, name);
        if (o != NULL)
            return o;
    }
    return find_object_in(&h->spec, kind, ns, ns_len, name);
}

KC_API int kc_harness_delete_object(kc_harness *h, const char *kind, const char *object)
{
    h->error[0] = '\0';
    const struct sim_object *o =
        kind != NULL && object != NULL ? find_object(h, kind, object) : NULL;
    if (o == NULL) {
        set_error(h, "no %s '%s' in the cluster", kind != NULL ? kind : "(null)",
                  object != NULL ? object : "(null)");
        return -ENOENT;
    }
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_OBJECT_DELETE;
    if ((delta.object_delete = custom_object_to_proto(o)) == NULL) {
        set_error(h, "the %s cannot be sent: %s", kind, strerror(errno));
        return -ENOMEM;
    }
    Kcycle__V1__Delta *list[] = {&delta};
    int rc = sync_deltas(h, list, 1);
    custom_object_proto_free(delta.object_delete);
    return rc;
}

/* Each of refs (NULL-terminated) as a pod of the cluster: the count, or -1 with h->error. */
static int what_if_pods(kc_harness *h, const char *const *refs, struct pod **out, int max)
{
    int n = 0;
    for (; refs != NULL && refs[n] != NULL; n++) {
        if (n == max) {
            set_error(h, "more than %d pods in a what-if view", max);
            return -1;
        }
        if ((out[n] = find_pod(h, refs[n])) == NULL)
            return -1;
    }
    return n;
}

static void keep_what_if(kc_harness *h, const Kcycle__V1__WhatIfVerdict *v)
{
    size_t used = 0;
    for (size_t i = 0; i < v->n_reasons; i++) {
        used += (size_t)snprintf(h->message + used,
                                 used < sizeof(h->message) ? sizeof(h->message) - used : 0,
                                 "%s%s", i > 0 ? "; " : "", v->reasons[i]);
        if (used >= sizeof(h->message))
            used = sizeof(h->message) - 1;
    }
}

#define HARNESS_WHAT_IF_MAX 64

KC_API kc_status kc_harness_what_if(kc_harness *h, const char *pod_ref, const char *node,
                                    const char *const *removed, const char *const *added)
{
    h->message[0] = '\0';
    h->error[0] = '\0';
    struct pod *pod = find_pod(h, pod_ref);
    int index = pod != NULL ? node_position(h, node) : -1;
    struct pod *gone[HARNESS_WHAT_IF_MAX], *more[HARNESS_WHAT_IF_MAX];
    int gone_count = index >= 0 ? what_if_pods(h, removed, gone, HARNESS_WHAT_IF_MAX) : -1;
    int more_count = gone_count >= 0 ? what_if_pods(h, added, more, HARNESS_WHAT_IF_MAX) : -1;
    if (more_count < 0)
        return KC_ERROR;
    char *uids[HARNESS_WHAT_IF_MAX + 1];
    uint32_t indices[HARNESS_WHAT_IF_MAX + 1];
    Kcycle__V1__Pod *nominated[HARNESS_WHAT_IF_MAX + 1];
    for (int i = 0; i < gone_count; i++)
        uids[i] = gone[i]->uid;
    int sent = 0;
    for (; sent < more_count; sent++) {
        indices[sent] = (uint32_t)sent;
        if ((nominated[sent] = pod_to_proto(more[sent])) == NULL)
            break;
    }
    Kcycle__V1__WhatIfNode item = KCYCLE__V1__WHAT_IF_NODE__INIT;
    item.node = (uint32_t)index;
    item.removed = uids;
    item.n_removed = (size_t)gone_count;
    item.added = indices;
    item.n_added = (size_t)more_count;
    Kcycle__V1__WhatIfNode *items[] = {&item};
    Kcycle__V1__WhatIf wi = KCYCLE__V1__WHAT_IF__INIT;
    wi.pod = pod_to_proto(pod);
    wi.nodes = items;
    wi.n_nodes = 1;
    wi.nominated = nominated;
    wi.n_nominated = (size_t)more_count;
    kc_status st = KC_ERROR;
    if (wi.pod == NULL || sent < more_count) {
        set_error(h, "the what-if view cannot be sent: %s", strerror(errno));
    } else {
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_WHAT_IF;
        req.what_if = &wi;
        Kcycle__V1__Reply *reply = call(h, &req);
        if (reply != NULL && reply->result_case == KCYCLE__V1__REPLY__RESULT_WHAT_IF &&
            reply->what_if->n_verdicts == 1) {
            st = (kc_status)reply->what_if->verdicts[0]->status;
            keep_what_if(h, reply->what_if->verdicts[0]);
        } else if (reply != NULL) {
            set_error(h, "the plugin host answered a what-if with something else");
        }
        if (reply != NULL)
            kcycle__v1__reply__free_unpacked(reply, NULL);
    }
    pod_proto_free(wi.pod);
    for (int i = 0; i < sent; i++)
        pod_proto_free(nominated[i]);
    return st;
}

KC_API uint32_t kc_harness_requeue_events(kc_harness *h)
{
    return h->requeue_events;
}

KC_API int kc_harness_fail_writes(kc_harness *h, int error)
{
    if (error > 0)
        return -EINVAL;
    h->write_result = error;
    return 0;
}

/* kc_harness_options.filter_threads, read only when the caller's struct has it: the host's
 * parallelism, and Filter on its threads in every evaluation. */
static void set_filter_threads(Kcycle__V1__Hello *hello, const kc_harness_options *o)
{
    bool has = o->struct_size >=
               offsetof(kc_harness_options, filter_threads) + sizeof(o->filter_threads);
    if (!has || o->filter_threads <= 1)
        return;
    hello->parallelism = (int32_t)(o->filter_threads > 64 ? 64 : o->filter_threads);
    hello->parallel_filter = true;
}

/* ---- end of the 1.2 additions for nominated, assumed and what-if ---- */
