/* The scheduler side of out-of-process plugins (docs/architecture.md). Each host is a child
 * process holding the other end of a socketpair (core/channel.h): requests go out in order,
 * one blocking round trip each, and every one carries the journal's deltas since the previous
 * one, so the host's replica is exact when its plugins run. Nothing is ever resent: a request
 * that crashed a host is never replayed into the new one. */
#include "remote.h"
#include "remote_placement.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "cycle_internal.h"
#include "evaluate.h"
#include "log.h"
#include "model.h"
#include "plugin.pb-c.h"
#include "preempt.h"
#include "proto_convert.h"
#include "monotonic.h"
#include "sched_metrics.h"
#include "scheduler.h"

#define RESTART_BACKOFF_MIN_MS 100
#define RESTART_BACKOFF_MAX_MS 10000
#define CIRCUIT_BREAKER_FAILURES 5
#define DEFAULT_TIMEOUT_MS 5000

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the journal ---- */

static void group_note(struct remote *r, const Kcycle__V1__Delta *delta);
static bool ride_as_evaluated(struct remote *r, const struct pod *pod, const char *node);
static bool group_as_evaluated(const struct remote *r, const struct pod *pod, const char *node);

static int journal_append(struct remote *r, const Kcycle__V1__Delta *delta)
{
    group_note(r, delta);
    size_t len = kcycle__v1__delta__get_packed_size(delta);
    uint8_t *data = malloc(len + 1);
    if (data == NULL)
        return -ENOMEM;
    kcycle__v1__delta__pack(delta, data);
    void *grown =
        array_grow(r->journal, &r->journal_capacity, r->journal_count + 1, sizeof(*r->journal));
    if (grown == NULL) {
        free(data);
        return -ENOMEM;
    }
    r->journal = grown;
    r->journal[r->journal_count].data = data;
    r->journal[r->journal_count].len = (uint32_t)len;
    r->journal_count++;
    return 0;
}

/* Drop the deltas every live host has received. */
static void journal_trim(struct remote *r)
{
    uint64_t end = r->journal_base + r->journal_count, low = end;
    for (uint32_t i = 0; i < r->host_count; i++)
        if (r->hosts[i]->state == REMOTE_UP && r->hosts[i]->cursor < low)
            low = r->hosts[i]->cursor;
    uint32_t drop = (uint32_t)(low - r->journal_base);
    if (drop == 0)
        return;
    for (uint32_t i = 0; i < drop; i++)
        free(r->journal[i].data);
    memmove(r->journal, r->journal + drop, (r->journal_count - drop) * sizeof(*r->journal));
    r->journal_count -= drop;
    r->journal_base = low;
}

static bool host_wants_events(const struct remote *r)
{
    for (uint32_t i = 0; i < r->host_count; i++)
        if (r->hosts[i]->state == REMOTE_UP)
            return true;
    return false;
}

static void journal_pod(struct remote *r, int which, const struct pod *pod, const char *node,
                        bool trial)
{
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    delta.trial = trial;
    Kcycle__V1__Assume assume = KCYCLE__V1__ASSUME__INIT;
    Kcycle__V1__Pod *msg = NULL;
    switch (which) {
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE:
        msg = pod_to_proto(pod);
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
        delta.pod_put = msg;
        break;
    case KC_EVENT_POD_DELETE:
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_POD_DELETE;
        delta.pod_delete = pod->uid;
        break;
    case KC_EVENT_POD_ASSUME:
        msg = pod_to_proto(pod);
        assume.pod = msg;
        assume.node = (char *)node;
        assume.as_evaluated =
            !trial && (group_as_evaluated(r, pod, node) || ride_as_evaluated(r, pod, node));
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_ASSUME;
        delta.assume = &assume;
        break;
    case KC_EVENT_POD_FORGET:
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_FORGET;
        delta.forget = pod->uid;
        break;
    default: return;
    }
    if ((which == KC_EVENT_POD_ADD || which == KC_EVENT_POD_UPDATE ||
         which == KC_EVENT_POD_ASSUME) &&
        msg == NULL) {
        log_error("plugin hosts: pod %s/%s cannot be sent: %s", pod->namespace, pod->name,
                  strerror(errno));
        return;
    }
    journal_append(r, &delta);
    pod_proto_free(msg);
}

/* A pod seen assigned: a PodBound when it is the object the hosts hold assumed on that node
 * (remote_bound.h), else the whole pod. */
static void journal_assigned(struct remote *r, const struct pod *pod)
{
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    if (msg == NULL) {
        log_error("plugin hosts: pod %s/%s cannot be sent: %s", pod->namespace, pod->name,
                  strerror(errno));
        remote_bound_drop(&r->bound, pod->uid); /* its Assume's bytes serve no more */
        return;
    }
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    Kcycle__V1__PodBound bound = KCYCLE__V1__POD_BOUND__INIT;
    if (remote_bound_take(&r->bound, msg)) {
        bound.uid = msg->uid;
        bound.node = msg->node_name;
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_POD_BOUND;
        delta.pod_bound = &bound;
    } else {
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
        delta.pod_put = msg;
    }
    journal_append(r, &delta);
    pod_proto_free(msg);
}

/* A pod event that is no binding (assume, forget, update, delete) and was not trial: the Assume
 * keeps the bytes it carried, for the PodBound of its binding. */
static void journal_pod_event(struct remote *r, kc_event_type type, const struct pod *pod,
                              const char *node)
{
    uint32_t before = r->journal_count;
    journal_pod(r, (int)type, pod, node, false);
    if (type == KC_EVENT_POD_ASSUME && r->journal_count == before + 1)
        remote_bound_note_assume(&r->bound, pod->uid, node, r->journal[before].data,
                                 r->journal[before].len);
}

void remote_journal(struct scheduler *s, kc_event_type type, const struct pod *pod,
                    const struct cache_node *node, const char *object_kind,
                    const char *object_namespace, const char *object_name, const char *object_json)
{
    struct remote *r = &s->remote;
    if (r->host_count == 0)
        return;
    bool wanted = host_wants_events(r);
    /* the hosts' copy of the pod changes (or none holds it): nothing kept for a PodBound */
    if (pod != NULL && (!wanted || type != KC_EVENT_POD_ADD || pod->node_name == NULL))
        remote_bound_drop(&r->bound, pod->uid);
    if (!wanted)
        return;
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    switch (type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_UPDATE: {
        Kcycle__V1__Node *msg = node_to_proto(node->node);
        if (msg == NULL)
            return;
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_NODE_PUT;
        delta.node_put = msg;
        journal_append(r, &delta);
        node_proto_free(msg);
        return;
    }
    case KC_EVENT_NODE_DELETE:
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_NODE_DELETE;
        delta.node_delete = node->node->name;
        journal_append(r, &delta);
        return;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
    case KC_EVENT_OBJECT_DELETE: {
        struct sim_object o = {(char *)object_kind, (char *)object_namespace, (char *)object_name,
                               (char *)object_json};
        Kcycle__V1__CustomObject *msg = custom_object_to_proto(&o);
        if (msg == NULL)
            return;
        if (type == KC_EVENT_OBJECT_DELETE) {
            delta.change_case = KCYCLE__V1__DELTA__CHANGE_OBJECT_DELETE;
            delta.object_delete = msg;
        } else {
            delta.change_case = KCYCLE__V1__DELTA__CHANGE_OBJECT_PUT;
            delta.object_put = msg;
        }
        journal_append(r, &delta);
        custom_object_proto_free(msg);
        return;
    }
    default:
        /* pending pods live in the scheduler only: hosts see assigned and assumed pods */
        if (pod == NULL ||
            (pod->node_name == NULL && type != KC_EVENT_POD_ASSUME && type != KC_EVENT_POD_FORGET))
            return;
        if (type == KC_EVENT_POD_ADD)
            journal_assigned(r, pod);
        else
            journal_pod_event(r, type, pod, node != NULL ? node->node->name : NULL);
    }
}

void remote_journal_trial(struct scheduler *s, kc_event_type type, const struct pod *pod,
                          const char *node)
{
    struct remote *r = &s->remote;
    if (r->host_count == 0)
        return;
    remote_bound_drop(&r->bound, pod->uid); /* its replicas' copy may be the trial's now */
    if (!host_wants_events(r))
        return;
    journal_pod(r, (int)type, pod, node, true);
}

void remote_journal_waiting(struct scheduler *s, const struct kc_waiting_pod *w, bool put)
{
    struct remote *r = &s->remote;
    if (r->host_count == 0 || !host_wants_events(r))
        return;
    Kcycle__V1__Delta delta = KCYCLE__V1__DELTA__INIT;
    if (!put) {
        delta.change_case = KCYCLE__V1__DELTA__CHANGE_WAITING_DELETE;
        delta.waiting_delete = w->cycle->sp->pod->uid;
        journal_append(r, &delta);
        return;
    }
    /* the pending bits are positions in the generation the pod's cycle runs on */
    const struct framework *fw = w->cycle->fw;
    char *names[FRAMEWORK_MAX_PLUGINS];
    size_t count = 0;
    for (uint32_t i = 0; i < fw->count && i < 64; i++)
        if (w->pending & (1ull << i))
            names[count++] = fw->plugins[i].name;
    Kcycle__V1__WaitingPod msg = KCYCLE__V1__WAITING_POD__INIT;
    msg.uid = w->cycle->sp->pod->uid;
    msg.node = w->cycle->node_name;
    msg.n_plugins = count;
    msg.plugins = names;
    delta.change_case = KCYCLE__V1__DELTA__CHANGE_WAITING_PUT;
    delta.waiting_put = &msg;
    journal_append(r, &delta);
}

/* Allows and rejections that plugins in a host gave while serving the request. */
/* The object updates a host's PreBind asked for, kept on the cycle for this process's binder. */
static int take_writes(struct kc_cycle *cycle, const Kcycle__V1__PhaseReply *pr)
{
    for (size_t i = 0; i < pr->n_object_writes; i++) {
        const Kcycle__V1__ObjectWrite *w = pr->object_writes[i];
        int rc = cycle_write_object(cycle, w->kind, w->namespace_, w->name, w->patch);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void apply_waiting_actions(struct scheduler *s, const Kcycle__V1__Reply *reply)
{
    for (size_t i = 0; i < reply->n_waiting_actions; i++) {
        const Kcycle__V1__WaitingAction *a = reply->waiting_actions[i];
        struct kc_waiting_pod *w = waiting_pod_find(s, a->uid);
        if (w == NULL)
            continue; /* it left WaitOnPermit meanwhile */
        if (!a->reject) {
            waiting_pod_allow(w, a->plugin);
        } else if (!w->rejected) {
            w->rejected = true;
            free(w->reject_message);
            w->reject_message = strdup(a->message != NULL ? a->message : "rejected in Permit");
        }
    }
}

/* ---- one request ---- */

static void host_set_error(struct remote_host *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void host_set_error(struct remote_host *h, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    free(h->last_error);
    h->last_error = strdup(text);
}

static void host_stop(struct remote_host *h)
{
    channel_close(&h->channel);
    if (h->pid > 0) {
        kill(h->pid, SIGKILL);
        waitpid(h->pid, NULL, 0);
        h->pid = 0;
    }
}

/* A host that is no longer needed: asked to stop (SIGTERM: it closes its plugins and its
 * listener) without waiting, so the scheduler thread goes on; remote_reap_stopped reaps it,
 * and kills it if it has not stopped within the grace period. */
#define STOP_GRACE_MS 2000
static void host_stop_gently(struct remote *r, struct remote_host *h)
{
    channel_close(&h->channel); /* the host sees the end of its channel and stops too */
    if (h->pid <= 0)
        return;
    void *grown =
        array_grow(r->stopping, &r->stopping_capacity, r->stopping_count + 1, sizeof(*r->stopping));
    if (grown == NULL) {
        host_stop(h);
        return;
    }
    r->stopping = grown;
    struct stopping_host *st = &r->stopping[r->stopping_count++];
    st->pid = h->pid;
    st->since_ms = now_ms();
    kill(h->pid, SIGTERM);
    h->pid = 0;
}

static void stopped(struct remote *r, uint32_t i)
{
    memmove(&r->stopping[i], &r->stopping[i + 1],
            (r->stopping_count - i - 1) * sizeof(*r->stopping));
    r->stopping_count--;
}

void remote_reap_stopped(struct scheduler *s, bool wait)
{
    struct remote *r = &s->remote;
    for (uint32_t i = 0; i < r->stopping_count;) {
        struct stopping_host *st = &r->stopping[i];
        if (waitpid(st->pid, NULL, WNOHANG) != 0) { /* reaped, or not ours any more */
            stopped(r, i);
            continue;
        }
        if (now_ms() - st->since_ms >= STOP_GRACE_MS) {
            log_warn("plugin host (pid %d) did not stop within %d ms of SIGTERM: killed",
                     (int)st->pid, STOP_GRACE_MS);
            kill(st->pid, SIGKILL);
            waitpid(st->pid, NULL, 0);
            stopped(r, i);
            continue;
        }
        if (wait)
            usleep(1000);
        else
            i++;
    }
}

/* The host process was reaped with `status`: say how it ended. */
static void host_exited(struct remote_host *h, int status)
{
    h->pid = 0;
    if (WIFSIGNALED(status))
        host_set_error(h, "the host process died of signal %d (%s)", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
    else if (WEXITSTATUS(status) == 127)
        host_set_error(h, "the plugin host program could not be run (exit status 127; "
                          "is kcycle-plugin-host installed, or KCYCLE_PLUGIN_HOST set?)");
    else
        host_set_error(h, "the host process exited with status %d", WEXITSTATUS(status));
}

/* The end of the channel (EOF on receive, EPIPE on send) means the host exited or died: the
 * kernel closes a dying process's sockets before it can be reaped, so poll for it a bounded
 * while and the error can say how (a crash's signal), without blocking on a host that only
 * closed its socket. */
#define HOST_GONE_WAIT_MS 500
static void host_gone(struct remote_host *h)
{
    int status;
    for (int64_t until = now_ms() + HOST_GONE_WAIT_MS; h->pid > 0;) {
        pid_t got = waitpid(h->pid, &status, WNOHANG);
        if (got == h->pid) {
            host_exited(h, status);
            return;
        }
        if (got < 0 || now_ms() >= until)
            break;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    host_set_error(h, "the host closed its channel");
}

static bool flight_settle(struct scheduler *s, const struct remote_host *h);

/* The host failed (crash, deadline, protocol error): stop it and schedule a restart. */
static void host_fail(struct scheduler *s, struct remote_host *h)
{
    flight_settle(s, h); /* a batch it answered before it died is kept */
    int status = 0;
    if (h->pid > 0 && waitpid(h->pid, &status, WNOHANG) == h->pid)
        host_exited(h, status);
    host_stop(h);
    h->state = REMOTE_DOWN;
    h->consecutive_failures++;
    int64_t backoff = RESTART_BACKOFF_MIN_MS;
    for (uint32_t i = 1; i < h->consecutive_failures && backoff < RESTART_BACKOFF_MAX_MS; i++)
        backoff *= 2;
    if (backoff > RESTART_BACKOFF_MAX_MS)
        backoff = RESTART_BACKOFF_MAX_MS;
    /* on the scheduler's clock: under --simulate a killed host comes back within the run's
     * simulated time, as it would in a cluster, however fast the simulation runs */
    h->next_start_ms = scheduler_now(s) + backoff;
    if (h->consecutive_failures >= CIRCUIT_BREAKER_FAILURES) {
        h->state = REMOTE_BROKEN;
        log_error("plugin host %s is circuit-broken after %u failures in a row; its plugins are "
                  "left out until the scheduler restarts: %s",
                  h->name, h->consecutive_failures,
                  h->last_error != NULL ? h->last_error : "no detail");
    } else {
        log_warn("plugin host %s failed (%s); restart in %lld ms", h->name,
                 h->last_error != NULL ? h->last_error : "no detail", (long long)backoff);
    }
    journal_trim(&s->remote);
}

/* The request's bytes (malloc'd): the packed request without deltas, then every delta the host
 * has not seen as field 4 (protobuf parsers accept fields in any order). */
static int build_request(struct scheduler *s, struct remote_host *h, Kcycle__V1__Request *req,
                         uint8_t **out, size_t *out_len)
{
    struct remote *r = &s->remote;
    size_t len = kcycle__v1__request__get_packed_size(req);
    uint64_t end = r->journal_base + r->journal_count;
    /* room for every delta at once (a snapshot is thousands of them) */
    size_t total = len;
    for (uint64_t seq = h->cursor; seq < end; seq++)
        total += r->journal[seq - r->journal_base].len + 6;
    uint8_t *msg = malloc(total + 1);
    if (msg == NULL)
        return -ENOMEM;
    kcycle__v1__request__pack(req, msg);
    size_t at = len;
    for (uint64_t seq = h->cursor; seq < end; seq++) {
        const struct journal_entry *e = &r->journal[seq - r->journal_base];
        msg[at++] = (4 << 3) | 2; /* field 4, length-delimited */
        for (uint32_t v = e->len;; v >>= 7) {
            msg[at++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            if (v <= 0x7f)
                break;
        }
        memcpy(msg + at, e->data, e->len);
        at += e->len;
    }
    *out = msg;
    *out_len = at;
    return 0;
}

static int send_request(struct scheduler *s, struct remote_host *h, Kcycle__V1__Request *req)
{
    if (!flight_settle(s, h))
        return -EIO; /* no good answer: the caller fails the host, not another deadline */
    req->id = ++h->request_id;
    req->generation = s->cache.generation - (uint64_t)h->generation_offset;
    /* a simulation's clock is the scheduler's own: the replica reads it too */
    if (s->clock.now_ms != NULL) {
        req->scheduler_clock = true;
        req->scheduler_now_ms = scheduler_now(s);
    }
    uint8_t *msg;
    size_t len;
    int rc = build_request(s, h, req, &msg, &len);
    if (rc < 0)
        return rc;
    if (len > CHANNEL_REQUEST_MAX_BYTES) {
        free(msg);
        host_set_error(h, "a request of %zu bytes, over the limit of %zu", len,
                       (size_t)CHANNEL_REQUEST_MAX_BYTES);
        return -EMSGSIZE;
    }
    rc = channel_send(&h->channel, msg, len, now_ms() + s->remote.timeout_ms);
    free(msg);
    if (rc < 0) {
        if (rc == -ETIMEDOUT)
            host_set_error(h, "the host took no request within the deadline of %lld ms",
                           (long long)s->remote.timeout_ms);
        else if (rc == -EPIPE)
            host_gone(h);
        else
            host_set_error(h, "sending to the host: %s", strerror(-rc));
        return -EIO;
    }
    h->cursor = s->remote.journal_base + s->remote.journal_count;
    h->round_trips++;
    h->sent_ns = sched_metrics_now(s);
    return 0;
}

static Kcycle__V1__Reply *receive_reply(struct scheduler *s, struct remote_host *h)
{
    struct remote *r = &s->remote;
    const uint8_t *data;
    size_t len;
    int rc = channel_recv(&h->channel, CHANNEL_REPLY_MAX_BYTES, now_ms() + r->timeout_ms, &data,
                          &len);
    if (rc == -EPIPE) {
        host_gone(h);
        return NULL;
    }
    if (rc == -ETIMEDOUT) {
        host_set_error(h, "no answer within the deadline of %lld ms", (long long)r->timeout_ms);
        return NULL;
    }
    if (rc == -EMSGSIZE || rc == -EPROTO) {
        host_set_error(h, "protocol error: %s",
                       rc == -EMSGSIZE ? "an answer over the size limit"
                                       : "records that do not form a message");
        return NULL;
    }
    if (rc < 0) {
        host_set_error(h, "receiving from the host: %s", strerror(-rc));
        return NULL;
    }
    Kcycle__V1__Reply *reply = kcycle__v1__reply__unpack(NULL, len, data);
    if (reply == NULL) {
        host_set_error(h, "an answer that does not decode as kcycle.v1.Reply");
        return NULL;
    }
    if (reply->id != h->request_id) {
        host_set_error(h, "answer %llu to request %llu", (unsigned long long)reply->id,
                       (unsigned long long)h->request_id);
        kcycle__v1__reply__free_unpacked(reply, NULL);
        return NULL;
    }
    if (reply->error != NULL && reply->error[0] != '\0') {
        host_set_error(h, "%s", reply->error);
        kcycle__v1__reply__free_unpacked(reply, NULL);
        return NULL;
    }
    sched_metrics_round_trip(s, h->sent_ns); /* 0: a batch in the air, not a round trip */
    apply_waiting_actions(s, reply);
    return reply;
}

static Kcycle__V1__Reply *round_trip(struct scheduler *s, struct remote_host *h,
                                     Kcycle__V1__Request *req)
{
    if (send_request(s, h, req) < 0)
        return NULL;
    return receive_reply(s, h);
}

/* ---- starting a host ---- */

static char *find_host_binary(void)
{
    const char *env = getenv("KCYCLE_PLUGIN_HOST");
    if (env != NULL && env[0] != '\0')
        return strdup(env);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            static const char *const tries[] = {
                "%s/kcycle-plugin-host",
                "%s/../plugin-host/kcycle-plugin-host",
                "%s/../../runtime/plugin-host/kcycle-plugin-host",
            };
            for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
                char path[PATH_MAX + 64];
                snprintf(path, sizeof(path), tries[i], exe);
                if (access(path, X_OK) == 0)
                    return strdup(path);
            }
        }
    }
    return strdup("kcycle-plugin-host"); /* from PATH */
}

/* ---- hosts started in-process: the fuzz target of host replies (tests/fuzz/fuzz_reply.c) ---- */

static remote_spawn_fn spawn_hook;
static void *spawn_hook_ctx;

void remote_set_spawn_hook(remote_spawn_fn fn, void *ctx)
{
    spawn_hook = fn;
    spawn_hook_ctx = ctx;
}

/* The hook's host has no process: pid stays 0, so nothing is signalled or waited for, and
 * closing the scheduler's end of the channel is what stops it. */
static int spawn_by_hook(struct remote_host *h, int ends[2])
{
    int rc = spawn_hook(spawn_hook_ctx, h->name, ends[1]);
    if (rc < 0) {
        close(ends[0]);
        close(ends[1]);
        host_set_error(h, "cannot start the host: %s", strerror(-rc));
        return rc;
    }
    h->pid = 0;
    channel_close(&h->channel);
    channel_init(&h->channel, ends[0]);
    return 0;
}

/* Start the host as a child holding one end of a new socketpair as fd CHANNEL_HOST_FD. Both
 * ends are close-on-exec, so no other host (and nothing the host starts) inherits them, and
 * the end of the channel is seen as soon as one side exits. */
static int spawn(struct remote *r, struct remote_host *h)
{
    remote_placement_unpin(r); /* the child must not start on the cycle thread's one CPU */
    if (spawn_hook != NULL) {
        int ends[2];
        int rc = channel_pair(ends);
        if (rc < 0) {
            host_set_error(h, "cannot create a socketpair: %s", strerror(-rc));
            return rc;
        }
        return spawn_by_hook(h, ends);
    }
    /* the scheduler's verbosity and log format reach the plugins: -v for info, -vv for debug */
    char fd_text[16];
    snprintf(fd_text, sizeof(fd_text), "%d", CHANNEL_HOST_FD);
    const char *argv[] = {r->host_binary, "--fd", fd_text, "--name", h->name,
                          NULL,           NULL,   NULL,    NULL,     NULL};
    int argc = 5;
    kc_log_level level = log_level();
    if (level >= KC_LOG_INFO)
        argv[argc++] = "-v";
    if (level >= KC_LOG_DEBUG)
        argv[argc++] = "-v";
    if (log_json()) {
        argv[argc++] = "--log-format";
        argv[argc++] = "json";
    }
    int rc = channel_spawn(argv, "kcycle: cannot run the plugin host program\n", &h->channel,
                           &h->pid);
    if (rc < 0)
        host_set_error(h, "cannot start the plugin host: %s", strerror(-rc));
    return rc;
}

static Kcycle__V1__PluginSpec **plugin_specs(struct remote_host *h)
{
    Kcycle__V1__PluginSpec **specs = calloc(h->plugin_count, sizeof(*specs) + sizeof(**specs));
    if (specs == NULL)
        return NULL;
    Kcycle__V1__PluginSpec *items = (Kcycle__V1__PluginSpec *)(specs + h->plugin_count);
    for (uint32_t i = 0; i < h->plugin_count; i++) {
        kcycle__v1__plugin_spec__init(&items[i]);
        items[i].name = h->plugins[i]->name;
        items[i].path = h->plugins[i]->path;
        items[i].args_json = h->plugins[i]->args_json;
        specs[i] = &items[i];
    }
    return specs;
}

static int hello(struct scheduler *s, struct remote_host *h, struct kc_error *err)
{
    Kcycle__V1__Hello hi = KCYCLE__V1__HELLO__INIT;
    hi.abi_version = KC_ABI_VERSION;
    hi.parallelism = s->cfg->parallelism;
    hi.n_plugins = h->plugin_count;
    hi.plugins = plugin_specs(h);
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
    req.hello = &hi;
    /* the hello carries no deltas: the snapshot follows */
    h->cursor = s->remote.journal_base + s->remote.journal_count;
    Kcycle__V1__Reply *reply = hi.plugins != NULL ? round_trip(s, h, &req) : NULL;
    free(hi.plugins);
    if (reply == NULL || reply->result_case != KCYCLE__V1__REPLY__RESULT_HELLO ||
        reply->hello->n_plugins != h->plugin_count) {
        if (reply != NULL)
            kcycle__v1__reply__free_unpacked(reply, NULL);
        return kc_error_set(err, -EIO, "plugin host %s did not start: %s", h->name,
                            h->last_error != NULL ? h->last_error : "bad hello answer");
    }
    int rc = 0;
    h->phases = 0;
    for (uint32_t i = 0; i < h->plugin_count; i++) {
        const Kcycle__V1__PluginInfo *info = reply->hello->plugins[i];
        struct plugin *p = h->plugins[i];
        if (info->error != NULL && info->error[0] != '\0') {
            p->disabled = true;
            host_set_error(h, "plugin %s (in plugin host %s): %s", p->name, h->name, info->error);
            if (p->required)
                rc = kc_error_set(err, KC_ERR_PLUGIN, "plugin %s (in plugin host %s): %s", p->name,
                                  h->name, info->error);
            else
                log_error("plugin %s (in plugin host %s) left out (required: false): %s", p->name,
                          h->name, info->error);
            continue;
        }
        /* they run for queue operations: a round trip each is out of the question (and a
         * group_of in a host would silently never form a group) */
        const char *queue_phases = NULL;
        if (info->phases &
            (KCYCLE__V1__PHASE__PHASE_QUEUE_SORT | KCYCLE__V1__PHASE__PHASE_PRE_ENQUEUE))
            queue_phases = "QueueSort or PreEnqueue, which run for every queue operation";
        else if (info->phases & KCYCLE__V1__PHASE__PHASE_GROUP_OF)
            queue_phases = "group_of (pod groups), which runs for queue operations";
        else if ((info->phases & KCYCLE__V1__PHASE__PHASE_POST_FILTER) &&
                 !(info->phases & (KCYCLE__V1__PHASE__PHASE_PRE_FILTER |
                                   KCYCLE__V1__PHASE__PHASE_FILTER)))
            /* a host runs PostFilter on its own evaluation of the pod, which it makes only for
             * plugins with Filter; and its binder cannot evict (preemption) */
            queue_phases = "PostFilter without Filter (preemption), which needs the scheduler's "
                           "view of the attempt";
        if (queue_phases != NULL) {
            p->disabled = true;
            rc = kc_error_set(err, -EINVAL,
                              "plugin %s implements %s and cannot run in a plugin host; "
                              "configure it with isolation: inprocess",
                              p->name, queue_phases);
            continue;
        }
        p->disabled = false;
        p->remote_phases = info->phases;
        p->requeue_mask = info->requeue_events != 0 ? info->requeue_events : KC_EVENT_MASK_ALL;
        p->abi_major = (uint16_t)info->abi_major;
        p->abi_minor = (uint16_t)info->abi_minor;
        free(p->version);
        p->version = strdup(info->version != NULL ? info->version : "");
        h->phases |= info->phases;
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
    return rc;
}

/* The replica from nothing: nodes in index order (so indices match), assigned pods, the
 * pods assumed by cycles in flight. Returns the cache operations the host will perform. */
static int64_t snapshot_into_journal(struct scheduler *s)
{
    struct remote *r = &s->remote;
    int64_t ops = 0;
    for (uint32_t i = 0; i < s->cache.node_count; i++, ops++)
        remote_journal(s, KC_EVENT_NODE_ADD, NULL, &s->cache.nodes[i], NULL, NULL, NULL, NULL);
    for (uint32_t i = 0; i < s->assigned.capacity; i++) {
        const struct pod *pod = s->assigned.entries[i].value;
        if (pod != NULL) {
            journal_pod(r, KC_EVENT_POD_ADD, pod, pod->node_name, false);
            ops++;
        }
    }
    for (uint32_t i = 0; i < s->objects.capacity; i++) {
        const struct kept_object *k = s->objects.entries[i].value;
        if (k != NULL)
            remote_journal(s, KC_EVENT_OBJECT_ADD, NULL, NULL, k->object.kind, k->object.namespace,
                           k->object.name, k->object.json);
    }
    for (uint32_t i = 0; i < s->pods.capacity; i++) {
        const struct sched_pod *sp = s->pods.entries[i].value;
        if (sp == NULL || (sp->state != SP_WAITING && sp->state != SP_BINDING))
            continue;
        const struct cache_pod *cp = cache_pod(&s->cache, sp->pod->uid);
        if (cp != NULL && cp->assumed) {
            journal_pod(r, KC_EVENT_POD_ASSUME, sp->pod, cp->node_name, false);
            ops++;
        }
    }
    /* the pods held in Permit, so this host's plugins may allow them too (a host started by
     * a reload sees the pods that wait on the replaced generation) */
    for (uint32_t i = 0; i < s->waiting_count; i++)
        remote_journal_waiting(s, s->waiting[i], true);
    return ops;
}

static int start_host(struct scheduler *s, struct remote_host *h, struct kc_error *err)
{
    struct remote *r = &s->remote;
    h->starts++;
    h->request_id = 0;
    h->generation_offset = 0;
    int rc = spawn(r, h);
    if (rc < 0) {
        host_fail(s, h);
        return kc_error_set(err, rc, "plugin host %s: %s", h->name,
                            h->last_error != NULL ? h->last_error : strerror(-rc));
    }
    h->state = REMOTE_UP;
    rc = hello(s, h, err);
    if (rc < 0 && rc != KC_ERR_PLUGIN) {
        host_fail(s, h);
        return rc;
    }
    int hello_rc = rc;
    /* The snapshot is this host's alone: it is written at the end of the shared journal, sent
     * from there, then taken out again so the other hosts never see it. */
    uint32_t mark = r->journal_count;
    h->cursor = r->journal_base + r->journal_count;
    int64_t ops = snapshot_into_journal(s);
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.snapshot = true;
    req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    req.sync = true;
    h->generation_offset = (int64_t)s->cache.generation - ops;
    Kcycle__V1__Reply *reply = round_trip(s, h, &req);
    /* a host started now holds assumed only the pods the snapshot lists (those in Permit or
     * binding: a pod assumed before a Reserve or Permit call restarted it is not among them),
     * so no kept Assume says what it holds: their bindings go whole */
    remote_bound_clear(&r->bound);
    for (uint32_t i = mark; i < r->journal_count; i++)
        free(r->journal[i].data);
    r->journal_count = mark;
    h->cursor = r->journal_base + r->journal_count;
    if (reply == NULL) {
        host_fail(s, h);
        return kc_error_set(err, -EIO, "plugin host %s: snapshot failed: %s", h->name,
                            h->last_error != NULL ? h->last_error : "no detail");
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
    journal_trim(r);
    /* consecutive_failures is reset by a request served, not by a start: a host that starts
     * and then fails every request (a crash on each pod, a protocol error) is circuit-broken */
    return hello_rc;
}

/* Bring back a host that is down and due. 0 when the host is up afterwards. */
static int ensure_up(struct scheduler *s, struct remote_host *h)
{
    if (h->state == REMOTE_UP)
        return 0;
    if (h->state == REMOTE_BROKEN || h->retiring || scheduler_now(s) < h->next_start_ms)
        return -EAGAIN;
    h->restarts++;
    struct kc_error err;
    int rc = start_host(s, h, &err);
    if (rc < 0 && rc != KC_ERR_PLUGIN) {
        log_warn("%s", err.message);
        return rc;
    }
    log_info("plugin host %s restarted (%u restarts)", h->name, h->restarts);
    return 0;
}

void remote_set_timeout(struct scheduler *s, int64_t timeout_ms)
{
    s->remote.timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
}

/* A host for fw's plugins of host group name, added to the live hosts. */
static struct remote_host *host_new(struct remote *r, const char *name, uint32_t plugins,
                                    uint64_t generation)
{
    void *grown = array_grow(r->hosts, &r->host_capacity, r->host_count + 1, sizeof(*r->hosts));
    struct remote_host *h = calloc(1, sizeof(*h));
    if (grown != NULL)
        r->hosts = grown;
    if (grown == NULL || h == NULL) {
        free(h);
        return NULL;
    }
    h->name = strdup(name);
    h->plugins = calloc(plugins, sizeof(*h->plugins));
    if (h->name == NULL || h->plugins == NULL) {
        free(h->name);
        free(h->plugins);
        free(h);
        return NULL;
    }
    channel_init(&h->channel, -1);
    h->generation = generation;
    r->hosts[r->host_count++] = h;
    return h;
}

static void ride_drop(struct remote *r);

static void host_free(struct remote *r, struct remote_host *h)
{
    if (r->ride.host == h)
        ride_drop(r); /* a Reserve answer of a host that goes is nobody's */
    host_stop_gently(r, h);
    for (uint32_t k = 0; k < r->host_count; k++) {
        if (r->hosts[k] == h) {
            memmove(&r->hosts[k], &r->hosts[k + 1], (r->host_count - k - 1) * sizeof(*r->hosts));
            r->host_count--;
            break;
        }
    }
    free(h->name);
    free(h->plugins);
    free(h->last_error);
    free(h);
}

/* Group fw's isolation: process plugins into hosts (fw->hosts), not started yet. */
static int group_hosts(struct scheduler *s, struct framework *fw, struct kc_error *err)
{
    struct remote *r = &s->remote;
    uint32_t remote_plugins = 0;
    for (uint32_t i = 0; i < fw->count; i++)
        remote_plugins += fw->plugins[i].remote;
    if (remote_plugins == 0)
        return 0;
    fw->hosts = calloc(remote_plugins, sizeof(*fw->hosts));
    if (fw->hosts == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < fw->count; i++) {
        struct plugin *p = &fw->plugins[i];
        if (!p->remote)
            continue;
        struct remote_host *h = NULL;
        for (uint32_t k = 0; k < fw->host_count && h == NULL; k++)
            if (strcmp(fw->hosts[k]->name, p->host_group) == 0)
                h = fw->hosts[k];
        if (h == NULL) {
            h = host_new(r, p->host_group, remote_plugins, fw->generation);
            if (h == NULL)
                return kc_error_set(err, -ENOMEM, "out of memory");
            fw->hosts[fw->host_count++] = h;
        }
        p->host = h;
        p->remote_index = h->plugin_count;
        h->plugins[h->plugin_count++] = p;
    }
    return 0;
}

static int remote_setup(struct scheduler *s, struct kc_error *err)
{
    struct remote *r = &s->remote;
    if (r->host_binary != NULL)
        return 0;
    r->timeout_ms = s->cfg->plugin_timeout_ms > 0 ? s->cfg->plugin_timeout_ms : DEFAULT_TIMEOUT_MS;
    signal(SIGPIPE, SIG_IGN);
    r->host_binary = find_host_binary();
    if (r->host_binary == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    return 0;
}

/* The hosts of fw, not started: 0 (none), 1 (some) or an error. */
static int prepare_hosts(struct scheduler *s, struct framework *fw, struct kc_error *err)
{
    uint32_t remote_plugins = 0;
    for (uint32_t i = 0; i < fw->count; i++)
        remote_plugins += fw->plugins[i].remote;
    if (remote_plugins == 0)
        return 0;
    int rc = remote_setup(s, err);
    if (rc == 0)
        rc = group_hosts(s, fw, err);
    return rc < 0 ? rc : 1;
}

int remote_open(struct scheduler *s, struct kc_error *err)
{
    struct framework *fw = s->fw;
    int rc = prepare_hosts(s, fw, err);
    if (rc <= 0)
        return rc;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        rc = start_host(s, h, err);
        if (rc == 0)
            continue;
        bool required = false;
        for (uint32_t i = 0; i < h->plugin_count; i++)
            required |= h->plugins[i]->required && (rc != KC_ERR_PLUGIN || h->plugins[i]->disabled);
        if (required)
            return rc;
        if (rc != KC_ERR_PLUGIN)
            log_error("%s; its plugins are left out until it starts (required: false)",
                      err->message);
    }
    log_info("plugin hosts started: %u", fw->host_count);
    return 0;
}

int remote_trial(struct scheduler *s, const struct config *cfg, const char *plugin_dir,
                 struct kc_error *err)
{
    struct remote *r = &s->remote;
    uint32_t count = 0;
    for (uint32_t i = 0; i < cfg->plugin_count; i++)
        count += cfg->plugins[i].isolation == ISOLATION_INPROCESS;
    if (count == 0)
        return 0;
    int rc = remote_setup(s, err);
    if (rc < 0)
        return rc;
    struct plugin *trial = calloc(count, sizeof(*trial));
    struct remote_host *h = trial != NULL ? host_new(r, "reload-trial", count, 0) : NULL;
    if (h == NULL) {
        free(trial);
        return kc_error_set(err, -ENOMEM, "out of memory");
    }
    char files[512] = "";
    for (uint32_t i = 0; i < cfg->plugin_count; i++) {
        const struct plugin_config *pc = &cfg->plugins[i];
        if (pc->isolation != ISOLATION_INPROCESS)
            continue;
        struct plugin *p = &trial[h->plugin_count];
        p->name = pc->name;
        p->args_json = pc->args_json;
        p->path = loader_find(pc->name, pc->path, plugin_dir);
        h->plugins[h->plugin_count++] = p;
        snprintf(files + strlen(files), sizeof(files) - strlen(files), "%s%s",
                 files[0] != '\0' ? ", " : "", p->path != NULL ? p->path : pc->name);
    }
    /* the host loads and inits the files as the scheduler would: one that dies or hangs there
     * would take the scheduler with it in process. Anything else (a file that fails to load,
     * a QueueSort plugin a host may not serve) is the in-process load's to report. */
    struct kc_error ignored = {{0}};
    rc = spawn(r, h);
    if (rc < 0) {
        /* no plugin host to try them in (not installed?): load them directly, as at start */
        log_warn("hot reload: cannot try the new plugins in a plugin host first (%s): a crash "
                 "in their init would end the scheduler",
                 h->last_error != NULL ? h->last_error : strerror(-rc));
        rc = 0;
    } else {
        h->state = REMOTE_UP;
        rc = hello(s, h, &ignored);
    }
    if (rc == -EIO)
        rc = kc_error_set(err, -EIO,
                          "a plugin crashed or hung in init when tried in a throwaway plugin "
                          "host (loading %s): %s",
                          files, h->last_error != NULL ? h->last_error : "no answer");
    else
        rc = 0;
    for (uint32_t i = 0; i < h->plugin_count; i++) {
        free(trial[i].path);
        free(trial[i].version);
    }
    host_free(r, h);
    free(trial);
    return rc;
}

int remote_build(struct scheduler *s, struct framework *fw, struct kc_error *err)
{
    int rc = prepare_hosts(s, fw, err);
    if (rc == 0)
        return 0;
    rc = rc < 0 ? rc : 0;
    for (uint32_t k = 0; rc == 0 && k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        rc = start_host(s, h, err);
        if (rc < 0 && rc != KC_ERR_PLUGIN) {
            /* it died or hung loading them (a crash in init): name the files */
            char files[512] = "";
            for (uint32_t i = 0; i < h->plugin_count; i++)
                snprintf(files + strlen(files), sizeof(files) - strlen(files), "%s%s",
                         i > 0 ? ", " : "", h->plugins[i]->path);
            char why[sizeof(err->message)];
            snprintf(why, sizeof(why), "%s", err->message);
            kc_error_set(err, rc, "%s (loading %s)", why, files);
            break;
        }
        /* a plugin the host could not load: refused, unless the serving generation runs
         * without it too (required: false, left out before) */
        rc = 0;
        for (uint32_t i = 0; i < h->plugin_count && rc == 0; i++) {
            const struct plugin *p = h->plugins[i];
            const struct plugin *old = s->fw != NULL ? framework_plugin(s->fw, p->name) : NULL;
            if (p->disabled && (p->required || old == NULL || !old->disabled))
                rc = kc_error_set(err, KC_ERR_PLUGIN, "%s",
                                  h->last_error != NULL ? h->last_error : "a plugin not loaded");
        }
    }
    if (rc < 0)
        remote_release(s, fw);
    return rc;
}

void remote_retire(struct framework *fw)
{
    for (uint32_t k = 0; k < fw->host_count; k++)
        fw->hosts[k]->retiring = true;
}

void remote_release(struct scheduler *s, struct framework *fw)
{
    for (uint32_t k = 0; k < fw->host_count; k++)
        host_free(&s->remote, fw->hosts[k]);
    free(fw->hosts);
    fw->hosts = NULL;
    fw->host_count = 0;
    journal_trim(&s->remote);
}

static void drop_filter_replies(struct remote *r);
static void group_drop(struct remote *r);

void remote_close(struct scheduler *s)
{
    remote_colocation_release(s);
    group_drop(&s->remote);
    ride_drop(&s->remote);
    struct remote *r = &s->remote;
    drop_filter_replies(r);
    while (r->host_count > 0)
        host_free(r, r->hosts[r->host_count - 1]);
    remote_reap_stopped(s, true);
    free(r->stopping);
    free(r->hosts);
    for (uint32_t i = 0; i < r->journal_count; i++)
        free(r->journal[i].data);
    free(r->journal);
    free(r->host_binary);
    remote_bound_free(&r->bound);
    memset(r, 0, sizeof(*r));
}

/* ---- evaluation ---- */

static bool host_fails_pods(const struct remote_host *h)
{
    for (uint32_t i = 0; i < h->plugin_count; i++)
        if (!h->plugins[i]->disabled && h->plugins[i]->failure_policy == FAILURE_FAIL)
            return true;
    return false;
}

/* The position in fw (the generation a cycle runs on) of the host's plugin i. h->plugins[]
 * are the active generation's entries (a reload adopts the hosts): an older generation's cycle
 * numbers its plugins differently, so the plugin is looked up by name there. Every generation
 * has the same plugins in hosts (a reload cannot change them); 0 should one be missing. */
static uint32_t plugin_in(const struct remote_host *h, uint32_t i, const struct framework *fw)
{
    const struct plugin *p = i < h->plugin_count ? h->plugins[i] : NULL;
    if (p == NULL)
        return 0;
    if (p->index < fw->count && &fw->plugins[p->index] == p)
        return p->index;
    const struct plugin *same = framework_plugin(fw, p->name);
    return same != NULL ? same->index : 0;
}

static uint64_t map_plugins(const struct remote_host *h, const struct framework *fw,
                            uint64_t host_bits)
{
    uint64_t bits = 0;
    for (uint32_t i = 0; i < h->plugin_count && i < 64; i++)
        if (host_bits & (1ull << i))
            bits |= 1ull << plugin_in(h, i, fw);
    return bits;
}

#define EVALUATE_PHASES                                                                            \
    (KCYCLE__V1__PHASE__PHASE_PRE_FILTER | KCYCLE__V1__PHASE__PHASE_FILTER |                       \
     KCYCLE__V1__PHASE__PHASE_PRE_SCORE | KCYCLE__V1__PHASE__PHASE_SCORE |                         \
     KCYCLE__V1__PHASE__PHASE_NORMALIZE_SCORE)

/* Add a host's weighted scores for the nodes that made the final list. Both lists are in
 * candidate order and the final list is a subsequence of the host's feasible list. */
static void add_scores(struct scheduler *s, const struct remote_host *h,
                       const Kcycle__V1__EvaluateReply *e, uint32_t found)
{
    for (size_t k = 0; k < e->n_scores; k++) {
        const Kcycle__V1__PluginScores *ps = e->scores[k];
        if (ps->plugin >= h->plugin_count || ps->n_scores != e->n_feasible)
            continue;
        int64_t weight = h->plugins[ps->plugin]->weight;
        uint32_t j = 0;
        for (size_t i = 0; i < e->n_feasible && j < found; i++) {
            if (e->feasible[i] != s->feasible[j]->index)
                continue;
            s->totals[j++] += scheduler_score_clamped(ps->scores[i]) * weight;
        }
    }
}

/* A reply may name only the request's candidates (marked), each once: a host that answers for
 * other nodes is not trusted with any. FEASIBLE_MARK is set on the nodes of a reply while it
 * is checked (a repeat anywhere in the list finds it set), and cleared before returning. */
#define CANDIDATE_MARK 0x8000u
#define FEASIBLE_MARK 0x4000u
static void clear_feasible_marks(struct scheduler *s, const Kcycle__V1__EvaluateReply *e,
                                 size_t count)
{
    for (size_t i = 0; i < count; i++)
        s->remote_marks[e->feasible[i]] &= (uint16_t)~FEASIBLE_MARK;
}

static bool only_candidates(struct scheduler *s, const Kcycle__V1__EvaluateReply *e,
                            uint32_t candidate_count)
{
    if (e->n_feasible > candidate_count)
        return false;
    uint16_t candidate = s->remote.all_candidates ? 0 : CANDIDATE_MARK;
    for (size_t i = 0; i < e->n_feasible; i++) {
        uint32_t node = e->feasible[i];
        if (node >= s->cache.node_count ||
            (s->remote_marks[node] & (CANDIDATE_MARK | FEASIBLE_MARK)) != candidate) {
            clear_feasible_marks(s, e, i);
            return false;
        }
        s->remote_marks[node] |= FEASIBLE_MARK;
    }
    clear_feasible_marks(s, e, e->n_feasible);
    return true;
}

/* Every node was a candidate (no CANDIDATE_MARK was set): the counts the merge left on the
 * nodes the replies named go back to 0. */
static void clear_reply_marks(struct scheduler *s, const struct framework *fw,
                              Kcycle__V1__Reply **replies)
{
    for (uint32_t k = 0; k < fw->host_count; k++) {
        const Kcycle__V1__EvaluateReply *e = replies[k] != NULL ? replies[k]->evaluate : NULL;
        for (size_t i = 0; e != NULL && i < e->n_feasible; i++)
            s->remote_marks[e->feasible[i]] = 0;
    }
}

/* With Evaluate.node_rejectors, a successful reply carries one verdict per candidate
 * (plugin.proto), each a known value: 0, NODE_REJECTOR_RESTRICTED, or one of the host's
 * plugins + 1 with at most NODE_REJECTOR_UNRESOLVABLE; and its feasible nodes are exactly the
 * candidates with verdict 0. Anything else would let a node through unchecked, so the whole
 * reply is refused. Called after only_candidates (the feasible nodes are distinct
 * candidates). */
static bool node_rejectors_valid(struct scheduler *s, const struct remote_host *h,
                                 const Kcycle__V1__Evaluate *ev,
                                 const Kcycle__V1__EvaluateReply *e, uint32_t candidate_count)
{
    if (!ev->node_rejectors || e->status != KC_SUCCESS)
        return true;
    if (e->n_node_rejectors != candidate_count)
        return false;
    uint32_t n = s->cache.node_count;
    uint32_t start = ev->start < n ? ev->start : 0;
    for (size_t i = 0; i < e->n_feasible; i++)
        s->remote_marks[e->feasible[i]] |= FEASIBLE_MARK;
    bool valid = true;
    for (uint32_t k = 0; valid && k < candidate_count; k++) {
        uint32_t v = e->node_rejectors[k];
        uint32_t plugin = v & 0xffu;
        if (v == NODE_REJECTOR_RESTRICTED)
            ;
        else if (v != 0 && ((v & ~(0xffu | NODE_REJECTOR_UNRESOLVABLE)) != 0 || plugin == 0 ||
                            plugin > h->plugin_count))
            valid = false;
        uint32_t node = ev->all_nodes ? (start + k) % n
                        : k < ev->n_candidates ? ev->candidates[k]
                                               : UINT32_MAX;
        if (valid && (node >= n || (v == 0) != ((s->remote_marks[node] & FEASIBLE_MARK) != 0)))
            valid = false;
    }
    clear_feasible_marks(s, e, e->n_feasible);
    return valid;
}

static kc_status evaluate_round(struct scheduler *s, struct kc_cycle *cycle,
                                Kcycle__V1__Evaluate *ev, uint32_t phases, const bool *ask,
                                uint32_t candidate_count, Kcycle__V1__Reply **replies,
                                char **message);
static void free_replies(const struct framework *fw, Kcycle__V1__Reply **replies);
static void evaluation_taken(struct kc_cycle *cycle, struct remote_host *h,
                             const Kcycle__V1__Reply *reply, kc_status *result, char **message);
static int group_take(struct scheduler *s, struct kc_cycle *cycle, const Kcycle__V1__Evaluate *ev,
                      uint32_t candidate_count, Kcycle__V1__Reply **replies,
                      Kcycle__V1__Reply *shell);

/* The one host of fw that filters and scores, when no other host does and nothing in process
 * scores: its choice of node is then the scheduler's (Evaluate.pick). NULL otherwise. */
static struct remote_host *sole_evaluator(const struct framework *fw)
{
    struct remote_host *only = NULL;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        if (!(fw->hosts[k]->phases & EVALUATE_PHASES))
            continue;
        if (only != NULL)
            return NULL;
        only = fw->hosts[k];
    }
    if (fw->phase_count[PHASE_SCORE] > 0 || fw->phase_count[PHASE_PRE_SCORE] > 0)
        return NULL;
    return only;
}

/* Whether h may be asked to pick: not when the decision log (debug level) wants every node's
 * scores, nor with more plugins than the weights the request carries. */
static bool host_may_pick(const struct remote_host *h)
{
    return log_level() < KC_LOG_DEBUG && h->plugin_count <= FRAMEWORK_MAX_PLUGINS;
}

/* ---- Reserve with the evaluation (Evaluate.reserve) ---- */

static void ride_drop(struct remote *r)
{
    if (r->ride.reply != NULL)
        kcycle__v1__reply__free_unpacked(r->ride.reply, NULL);
    free(r->ride.node);
    memset(&r->ride, 0, sizeof(r->ride));
}

/* Whether h's Reserve may run with the evaluation it picks for: h is the only backend with
 * Reserve plugins, so nothing reserves between the choice and h's Reserve, nor before it. */
static bool ride_possible(const struct framework *fw, const struct remote_host *h)
{
    if (!(h->phases & KCYCLE__V1__PHASE__PHASE_RESERVE) || fw->phase_count[PHASE_RESERVE] > 0)
        return false;
    for (uint32_t k = 0; k < fw->host_count; k++)
        if (fw->hosts[k] != h && (fw->hosts[k]->phases & KCYCLE__V1__PHASE__PHASE_RESERVE))
            return false;
    return true;
}

/* The evaluation's answer carries h's Reserve answer: kept for the cycle's Reserve call
 * (the reply's ownership moves here). */
static void ride_keep(struct scheduler *s, struct kc_cycle *cycle, struct remote_host *h,
                      Kcycle__V1__Reply *reply)
{
    struct remote *r = &s->remote;
    const Kcycle__V1__EvaluateReply *e = reply->evaluate;
    ride_drop(r);
    r->ride.node = strdup(s->cache.nodes[e->chosen].node->name);
    if (r->ride.node == NULL) {
        kcycle__v1__reply__free_unpacked(reply, NULL);
        return; /* unconfirmed, the host undoes it; Reserve goes as usual */
    }
    r->ride.reply = reply;
    r->ride.host = h;
    r->ride.restarts = h->restarts;
    r->ride.cycle = cycle;
    r->ride.pod = cycle->sp->pod;
    r->ride.journal_end = r->journal_base + r->journal_count;
}

/* An Assume of pod on node, journaled now: the one the host made with its Reserve answer when
 * it is the first delta since (as_evaluated; the host then keeps what its Reserve did). */
static bool ride_as_evaluated(struct remote *r, const struct pod *pod, const char *node)
{
    struct remote_ride *ride = &r->ride;
    if (ride->reply == NULL || ride->assumed || ride->pod != pod || node == NULL ||
        strcmp(ride->node, node) != 0 || r->journal_base + r->journal_count != ride->journal_end)
        return false;
    ride->assumed = true;
    return true;
}

/* The cycle's Reserve call to h, when it rode on the evaluation: the answer (owned by the
 * caller), else NULL (the host undid its Reserve, or there was none: the call goes). */
static Kcycle__V1__Reply *ride_take(struct remote *r, const struct kc_cycle *cycle,
                                    const struct remote_host *h, const char *node)
{
    struct remote_ride *ride = &r->ride;
    if (ride->reply == NULL || ride->host != h)
        return NULL;
    Kcycle__V1__Reply *reply = NULL;
    if (ride->assumed && ride->cycle == cycle && ride->restarts == h->restarts &&
        h->state == REMOTE_UP && strcmp(ride->node, node) == 0) {
        reply = ride->reply;
        ride->reply = NULL;
    }
    ride_drop(r);
    return reply;
}

kc_status remote_evaluate(struct scheduler *s, struct kc_cycle *cycle, const uint32_t *candidates,
                          uint32_t candidate_count, uint32_t want, uint32_t *found,
                          uint32_t *processed, char **message)
{
    struct remote *r = &s->remote;
    Kcycle__V1__Reply *replies[FRAMEWORK_MAX_PLUGINS] = {0};
    const struct framework *fw = cycle->fw;
    *message = NULL;
    uint32_t evaluating = 0;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        evaluating += (h->phases & EVALUATE_PHASES) != 0;
        /* a host this attempt will need later (the binder's) comes back up now */
        if (!(h->phases & EVALUATE_PHASES) && h->state != REMOTE_UP && ensure_up(s, h) < 0 &&
            host_fails_pods(h)) {
            *message = text_format("plugin host %s is down: %s", h->name,
                                   h->last_error != NULL ? h->last_error : "starting");
            return KC_ERROR;
        }
    }
    Kcycle__V1__Evaluate ev = KCYCLE__V1__EVALUATE__INIT;
    /* every node in rotated order (nothing in process filtered): say so instead of listing;
     * candidates NULL: every node from the rotating start, not listed here either */
    uint32_t nodes = s->cache.node_count;
    uint32_t start = nodes > 0 ? s->next_start_node % nodes : 0;
    bool all = candidates == NULL ? nodes > 0
                                  : candidate_count == nodes && candidate_count > 0 &&
                                        s->cache.nodes[candidates[0]].index == start;
    if (candidates == NULL && !all) {
        *found = *processed = 0;
        return KC_SUCCESS; /* no node at all: nothing to ask */
    }
    ev.all_nodes = all;
    ev.start = all ? start : 0;
    ev.n_candidates = all ? 0 : candidate_count;
    ev.candidates = all ? NULL : (uint32_t *)candidates;
    ev.want = evaluating == 1 ? want : 0; /* several hosts: each filters every candidate */
    ev.score = true;
    /* the one host filters every node and nothing scores here: it can pick */
    r->pick.valid = false;
    int64_t weights[FRAMEWORK_MAX_PLUGINS];
    struct remote_host *evaluator = sole_evaluator(fw);
    ride_drop(r);
    if (candidates == NULL && evaluator != NULL && host_may_pick(evaluator)) {
        for (uint32_t i = 0; i < evaluator->plugin_count; i++)
            weights[i] = evaluator->plugins[i]->weight;
        ev.pick = true;
        ev.reserve = ride_possible(fw, evaluator);
        ev.rng = s->rng;
        ev.n_weights = evaluator->plugin_count;
        ev.weights = weights;
    }
    /* candidates carry CANDIDATE_MARK while the replies are checked and merged; with every
     * node a candidate, nothing needs marking (only_candidates checks the range) */
    for (uint32_t k = 0; !all && k < candidate_count; k++)
        s->remote_marks[candidates[k]] = CANDIDATE_MARK;
    r->all_candidates = all;
    /* a group cycle's member whose evaluation came in its group's request */
    Kcycle__V1__Reply shell = KCYCLE__V1__REPLY__INIT;
    kc_status result = KC_SUCCESS;
    int batched = group_take(s, cycle, &ev, candidate_count, replies, &shell);
    if (batched >= 0)
        evaluation_taken(cycle, fw->hosts[batched], &shell, &result, message);
    else
        result = evaluate_round(s, cycle, &ev, EVALUATE_PHASES, NULL, candidate_count, replies,
                                message);
    for (uint32_t k = 0; result == KC_SUCCESS && k < fw->host_count; k++) {
        const Kcycle__V1__EvaluateReply *e = replies[k] != NULL ? replies[k]->evaluate : NULL;
        if (e != NULL && (e->status == KC_UNSCHEDULABLE || e->status == KC_UNRESOLVABLE)) {
            result = (kc_status)e->status;
            *message = strdup(e->message != NULL ? e->message : fw->hosts[k]->name);
        }
    }
    /* merge: a node is feasible when every host that answered says so */
    uint32_t answered = 0, count = 0;
    *processed = candidate_count;
    if (result == KC_SUCCESS) {
        for (uint32_t k = 0; k < fw->host_count; k++) {
            if (replies[k] == NULL || replies[k]->evaluate->status != KC_SUCCESS)
                continue;
            const Kcycle__V1__EvaluateReply *e = replies[k]->evaluate;
            answered++;
            for (size_t i = 0; i < e->n_feasible; i++)
                s->remote_marks[e->feasible[i]]++;
            for (size_t i = 0; i < e->n_reasons; i++)
                reasons_add_count(s->reasons, &s->reason_count, e->reasons[i]->text,
                                  e->reasons[i]->count);
        }
        uint32_t limit = want == 0 ? candidate_count : want;
        for (uint32_t k = 0; k < fw->host_count && evaluating == 1; k++) {
            const Kcycle__V1__EvaluateReply *e = replies[k] != NULL ? replies[k]->evaluate : NULL;
            if (e == NULL || e->status != KC_SUCCESS || !e->picked)
                continue;
            /* the host's choice: the one node the cycle needs */
            s->feasible[0] = &s->cache.nodes[e->chosen];
            s->totals[0] = 0;
            count = e->found;
            *processed = e->processed;
            r->pick = (struct remote_pick){true, e->chosen, e->found, e->last_feasible,
                                           e->chosen_total, e->rng};
            limit = 0; /* nothing to collect below */
        }
        for (uint32_t k = 0; k < candidate_count && count < limit; k++) {
            uint32_t node = candidates != NULL ? candidates[k] : (start + k) % nodes;
            if ((s->remote_marks[node] & ~CANDIDATE_MARK) == answered) {
                s->feasible[count] = &s->cache.nodes[node];
                s->totals[count++] = 0;
                if (count == limit)
                    *processed = k + 1;
            }
        }
        for (uint32_t k = 0; k < fw->host_count; k++)
            if (replies[k] != NULL && replies[k]->evaluate->status == KC_SUCCESS)
                add_scores(s, fw->hosts[k], replies[k]->evaluate, count);
    }
    if (all)
        clear_reply_marks(s, fw, replies);
    else
        for (uint32_t k = 0; k < candidate_count; k++)
            s->remote_marks[candidates[k]] = 0;
    r->all_candidates = false;
    if (batched >= 0)
        replies[batched] = NULL; /* part of the group's answer, freed with it */
    for (uint32_t k = 0; ev.reserve && k < fw->host_count; k++) {
        const Kcycle__V1__EvaluateReply *e = replies[k] != NULL ? replies[k]->evaluate : NULL;
        if (fw->hosts[k] == evaluator && e != NULL && e->picked && e->reserve != NULL &&
            result == KC_SUCCESS && e->chosen < s->cache.node_count) {
            ride_keep(s, cycle, evaluator, replies[k]);
            replies[k] = NULL;
        }
    }
    free_replies(fw, replies);
    journal_trim(r);
    *found = count;
    return result;
}

/* ---- evaluation merged node by node (several backends filter) ---- */

#define FILTER_PHASES (KCYCLE__V1__PHASE__PHASE_PRE_FILTER | KCYCLE__V1__PHASE__PHASE_FILTER)
#define SCORE_PHASES                                                                               \
    (KCYCLE__V1__PHASE__PHASE_PRE_SCORE | KCYCLE__V1__PHASE__PHASE_SCORE |                         \
     KCYCLE__V1__PHASE__PHASE_NORMALIZE_SCORE)

bool remote_single_evaluation(const struct framework *fw)
{
    /* an in-process PreFilter rejects no node: only its own rejection of the pod could come
     * in the wrong order, which remote_pre_filter_before tells */
    bool local_filters = fw->phase_count[PHASE_FILTER] > 0;
    uint32_t evaluating = 0, filtering = 0;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        evaluating += (fw->hosts[k]->phases & EVALUATE_PHASES) != 0;
        filtering += (fw->hosts[k]->phases & FILTER_PHASES) != 0;
    }
    /* one host evaluates what in-process PreFilter and Filter left, and its scores are over the
     * final list when it is the only one that filters or scores */
    return evaluating == 0 || (evaluating == 1 && (filtering == 0 || !local_filters));
}

bool remote_pre_filter_before(const struct framework *fw, uint32_t plugin)
{
    for (uint32_t i = 0; i < plugin && i < fw->count; i++)
        if (fw->plugins[i].remote && !fw->plugins[i].disabled &&
            (fw->plugins[i].remote_phases & KCYCLE__V1__PHASE__PHASE_PRE_FILTER))
            return true;
    return false;
}

/* Send ev to the hosts of cycle's generation with any of `phases`, for those whose ask[k] is
 * set when ask is given, then collect their evaluations into replies[k] (NULL: not asked, or
 * failed: then the host is restarted). The request's candidates carry CANDIDATE_MARK in
 * s->remote_marks (the caller's job) so that replies are checked against them. Returns
 * KC_ERROR with *message when a host whose plugins fail pods could not answer. */
/* A picked answer (EvaluateReply.picked) comes only when asked for, lists nothing, and names
 * nodes of the replica within the request's bounds. */
static bool picked_valid(const struct scheduler *s, const Kcycle__V1__Evaluate *ev,
                         const Kcycle__V1__EvaluateReply *e, uint32_t candidate_count)
{
    if (!e->picked)
        return true;
    uint32_t nodes = s->cache.node_count;
    return ev->pick && e->n_feasible == 0 && e->n_scores == 0 && e->found >= 1 &&
           e->found <= candidate_count && (ev->want == 0 || e->found <= ev->want) &&
           e->chosen < nodes && e->last_feasible < nodes;
}

bool remote_picked(struct scheduler *s, struct remote_pick *out)
{
    if (!s->remote.pick.valid)
        return false;
    *out = s->remote.pick;
    s->remote.pick.valid = false;
    return true;
}

/* h's checked evaluation is the cycle's: its rejectors count, and a status other than a verdict
 * is the attempt's error when h's plugins fail pods. */
static void evaluation_taken(struct kc_cycle *cycle, struct remote_host *h,
                             const Kcycle__V1__Reply *reply, kc_status *result, char **message)
{
    h->consecutive_failures = 0;
    cycle->rejectors |= map_plugins(h, cycle->fw, reply->evaluate->rejectors);
    if (reply->evaluate->status != KC_SUCCESS && reply->evaluate->status != KC_UNSCHEDULABLE &&
        reply->evaluate->status != KC_UNRESOLVABLE && host_fails_pods(h) &&
        *result == KC_SUCCESS) {
        *result = KC_ERROR;
        *message = text_format("plugin host %s: %s", h->name,
                               reply->evaluate->message != NULL ? reply->evaluate->message
                                                                : "error");
    }
}

/* ---- nominated pods sent with an evaluation ---- */

/* Evaluate.nominated: what in process Filter counts on nodes with nominated pods, so the hosts'
 * Filter counts it too (plugin.proto). Empty, and free, while nothing is nominated. */
struct nominated_wire {
    Kcycle__V1__NominatedPod *items;
    Kcycle__V1__NominatedPod **list;
    uint32_t count;
};

static void nominated_attach(struct scheduler *s, const struct kc_cycle *cycle,
                             Kcycle__V1__Evaluate *ev, struct nominated_wire *w)
{
    memset(w, 0, sizeof(*w));
    uint32_t max = s->nominations.count;
    if (max == 0)
        return;
    const struct pod **pods = calloc(max, sizeof(*pods));
    const char **nodes = calloc(max, sizeof(*nodes));
    uint32_t n = pods != NULL && nodes != NULL
                     ? preempt_nominated_pods(s, cycle->sp->pod, pods, nodes, max)
                     : 0;
    w->items = n > 0 ? calloc(n, sizeof(*w->items)) : NULL;
    w->list = n > 0 ? calloc(n, sizeof(*w->list)) : NULL;
    for (uint32_t i = 0; w->items != NULL && w->list != NULL && i < n; i++) {
        kcycle__v1__nominated_pod__init(&w->items[w->count]);
        w->items[w->count].node = (char *)nodes[i];
        if ((w->items[w->count].pod = pod_to_proto(pods[i])) == NULL)
            continue;
        w->list[w->count] = &w->items[w->count];
        w->count++;
    }
    if (w->count < n)
        log_error("pod %s/%s: out of memory sending nominated pods to plugin hosts; their "
                  "Filter may not count %u of them",
                  cycle->sp->pod->namespace, cycle->sp->pod->name, n - w->count);
    ev->n_nominated = w->count;
    ev->nominated = w->list;
    free(pods);
    free(nodes);
}

static void nominated_detach(Kcycle__V1__Evaluate *ev, struct nominated_wire *w)
{
    for (uint32_t i = 0; i < w->count; i++)
        pod_proto_free(w->items[i].pod);
    free(w->items);
    free(w->list);
    memset(w, 0, sizeof(*w));
    ev->n_nominated = 0;
    ev->nominated = NULL;
}

static kc_status evaluate_round(struct scheduler *s, struct kc_cycle *cycle,
                                Kcycle__V1__Evaluate *ev, uint32_t phases, const bool *ask,
                                uint32_t candidate_count, Kcycle__V1__Reply **replies,
                                char **message)
{
    const struct framework *fw = cycle->fw;
    bool sent[FRAMEWORK_MAX_PLUGINS] = {0};
    kc_status result = KC_SUCCESS;
    Kcycle__V1__Pod *pod = NULL;
    struct remote_host *pinned = remote_placement_choice(s, fw, phases, ask);
    struct nominated_wire nominated;
    nominated_attach(s, cycle, ev, &nominated);
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        replies[k] = NULL;
        if (!(h->phases & phases) || (ask != NULL && !ask[k]))
            continue;
        if (ensure_up(s, h) < 0) {
            if (host_fails_pods(h) && result == KC_SUCCESS) {
                result = KC_ERROR;
                *message = text_format("plugin host %s is down: %s", h->name,
                                       h->last_error != NULL ? h->last_error : "starting");
            }
            continue;
        }
        if (pod == NULL && (pod = pod_to_proto(cycle->sp->pod)) == NULL) {
            free(*message); /* a host found down before: this error replaces its message */
            *message = text_format("pod %s/%s cannot be sent to plugin hosts",
                                   cycle->sp->pod->namespace, cycle->sp->pod->name);
            nominated_detach(ev, &nominated);
            return KC_ERROR;
        }
        ev->pod = pod;
        if (cycle->remote_attempt == 0)
            cycle->remote_attempt = ++s->remote.attempt_seq;
        ev->attempt = cycle->remote_attempt;
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE;
        req.evaluate = ev;
        /* the others may work beside it, elsewhere */
        if (h == pinned && remote_placement_colocate(s, h))
            s->remote.colocation.round_trips++;
        else if (h == pinned && s->remote.colocation.spreading) {
            req.spin_us = REMOTE_SPREAD_SPIN_US; /* its next request comes while it polls */
            s->remote.colocation.spread_round_trips++;
        }
        sent[k] = send_request(s, h, &req) == 0;
        h->evaluate_round_trips += sent[k];
    }
    pod_proto_free(pod);
    ev->pod = NULL;
    nominated_detach(ev, &nominated);
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        if (!(h->phases & phases) || (ask != NULL && !ask[k]) || h->state != REMOTE_UP)
            continue;
        Kcycle__V1__Reply *reply = sent[k] ? receive_reply(s, h) : NULL;
        if (reply != NULL && reply->result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE) {
            host_set_error(h, "an answer to evaluate that is not an evaluation");
            kcycle__v1__reply__free_unpacked(reply, NULL);
            reply = NULL;
        }
        if (reply != NULL && (!only_candidates(s, reply->evaluate, candidate_count) ||
                              (reply->evaluate->n_node_rejectors != 0 &&
                               reply->evaluate->n_node_rejectors != candidate_count))) {
            host_set_error(h, "protocol error: an evaluation that names nodes outside the "
                              "request's candidates");
            kcycle__v1__reply__free_unpacked(reply, NULL);
            reply = NULL;
        }
        if (reply != NULL && !picked_valid(s, ev, reply->evaluate, candidate_count)) {
            host_set_error(h, "protocol error: a picked evaluation that was not asked for or "
                              "names nodes out of range");
            kcycle__v1__reply__free_unpacked(reply, NULL);
            reply = NULL;
        }
        if (reply != NULL && !node_rejectors_valid(s, h, ev, reply->evaluate, candidate_count)) {
            host_set_error(h, "protocol error: an evaluation whose node_rejectors are missing, "
                              "out of range or disagree with its feasible nodes");
            kcycle__v1__reply__free_unpacked(reply, NULL);
            reply = NULL;
        }
        if (reply == NULL) {
            host_fail(s, h);
            if (host_fails_pods(h) && result == KC_SUCCESS) {
                result = KC_ERROR;
                *message = text_format("plugin host %s failed: %s", h->name,
                                       h->last_error != NULL ? h->last_error : "no detail");
            }
            continue;
        }
        evaluation_taken(cycle, h, reply, &result, message);
        replies[k] = reply;
    }
    return result;
}

static void free_replies(const struct framework *fw, Kcycle__V1__Reply **replies)
{
    for (uint32_t k = 0; k < fw->host_count; k++)
        if (replies[k] != NULL)
            kcycle__v1__reply__free_unpacked(replies[k], NULL);
}

static void drop_filter_replies(struct remote *r)
{
    for (uint32_t k = 0; k < FRAMEWORK_MAX_PLUGINS; k++) {
        if (r->filter_replies[k] != NULL)
            kcycle__v1__reply__free_unpacked(r->filter_replies[k], NULL);
        r->filter_replies[k] = NULL;
    }
}

static void mark_candidates(struct scheduler *s, const uint32_t *candidates, uint32_t count,
                            uint16_t mark)
{
    for (uint32_t k = 0; k < count; k++)
        s->remote_marks[candidates != NULL ? candidates[k] : k] = mark;
}

/* The verdict on one node of two backends: the rejection of the plugin that comes first in
 * the configuration, a PreFilter restriction before any Filter. */
static uint16_t first_rejection(uint16_t kept, uint16_t other)
{
    if (other == 0 || (kept & NODE_REJECTOR_RESTRICTED))
        return kept;
    if (kept == 0 || (other & NODE_REJECTOR_RESTRICTED))
        return other;
    return (other & 0xffu) < (kept & 0xffu) ? other : kept;
}

kc_status remote_filter_merged(struct scheduler *s, struct kc_cycle *cycle, uint32_t start,
                               uint32_t *pre_filter_plugin, kc_status *pre_filter_status,
                               char **pre_filter_message, char **message)
{
    const struct framework *fw = cycle->fw;
    uint32_t n = s->cache.node_count;
    Kcycle__V1__Reply *replies[FRAMEWORK_MAX_PLUGINS];
    Kcycle__V1__Evaluate ev = KCYCLE__V1__EVALUATE__INIT;
    ev.all_nodes = true;
    ev.start = start;
    ev.node_rejectors = true;
    ev.score = true; /* often no other backend rejects a node this one keeps: then it is final */
    *message = NULL;
    drop_filter_replies(&s->remote);
    mark_candidates(s, NULL, n, CANDIDATE_MARK);
    kc_status result = evaluate_round(s, cycle, &ev, FILTER_PHASES, NULL, n, replies, message);
    mark_candidates(s, NULL, n, 0);
    for (uint32_t k = 0; result == KC_SUCCESS && k < fw->host_count; k++) {
        const struct remote_host *h = fw->hosts[k];
        const Kcycle__V1__EvaluateReply *e = replies[k] != NULL ? replies[k]->evaluate : NULL;
        if (e == NULL)
            continue;
        if (e->status == KC_UNSCHEDULABLE || e->status == KC_UNRESOLVABLE) {
            /* this host's PreFilter rejected: the first such plugin in the configuration wins */
            uint64_t bits = map_plugins(h, fw, e->rejectors);
            uint32_t plugin = bits != 0 ? (uint32_t)__builtin_ctzll(bits) : UINT32_MAX - 1;
            if (plugin < *pre_filter_plugin) {
                *pre_filter_plugin = plugin;
                *pre_filter_status = (kc_status)e->status;
                free(*pre_filter_message);
                *pre_filter_message = strdup(e->message != NULL ? e->message : h->name);
            }
            continue;
        }
        if (e->status != KC_SUCCESS || e->n_node_rejectors != n)
            continue; /* Ignore: the host's plugins are skipped for this attempt */
        for (uint32_t i = 0; i < n; i++) {
            uint32_t v = e->node_rejectors[i];
            uint16_t mine = 0;
            if (v & NODE_REJECTOR_RESTRICTED)
                mine = (uint16_t)(NODE_REJECTOR_RESTRICTED | (k + 1));
            else if ((v & 0xffu) != 0 && (v & 0xffu) <= h->plugin_count)
                mine = (uint16_t)((plugin_in(h, (v & 0xffu) - 1, fw) + 1) |
                                  (v & NODE_REJECTOR_UNRESOLVABLE));
            uint32_t node = (start + i) % n;
            s->node_winner[node] = first_rejection(s->node_winner[node], mine);
        }
        if (h->phases & SCORE_PHASES) {
            s->remote.filter_replies[k] = replies[k];
            replies[k] = NULL;
        }
    }
    free_replies(fw, replies);
    journal_trim(&s->remote);
    return result;
}

/* Whether host k of fw gave the merged verdict on a node. */
static bool host_won(const struct framework *fw, uint32_t k, uint16_t winner)
{
    if (winner & NODE_REJECTOR_RESTRICTED)
        return (winner & 0xffu) == k + 1;
    uint32_t plugin = winner & 0xffu;
    return plugin != 0 && plugin <= fw->count && fw->plugins[plugin - 1].host == fw->hosts[k];
}

kc_status remote_merged_reasons(struct scheduler *s, struct kc_cycle *cycle, char **message)
{
    const struct framework *fw = cycle->fw;
    uint32_t n = s->cache.node_count;
    *message = NULL;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        uint32_t count = 0;
        for (uint32_t i = 0; i < n; i++)
            if (host_won(fw, k, s->node_winner[i]))
                s->candidates[count++] = i;
        if (count == 0)
            continue;
        /* one host at a time: each has its own candidates */
        bool ask[FRAMEWORK_MAX_PLUGINS] = {0};
        ask[k] = true;
        Kcycle__V1__Reply *replies[FRAMEWORK_MAX_PLUGINS];
        Kcycle__V1__Evaluate ev = KCYCLE__V1__EVALUATE__INIT;
        ev.candidates = s->candidates;
        ev.n_candidates = count;
        mark_candidates(s, s->candidates, count, CANDIDATE_MARK);
        kc_status st = evaluate_round(s, cycle, &ev, FILTER_PHASES, ask, count, replies, message);
        mark_candidates(s, s->candidates, count, 0);
        const Kcycle__V1__EvaluateReply *e = replies[k] != NULL ? replies[k]->evaluate : NULL;
        for (size_t i = 0; e != NULL && i < e->n_reasons; i++)
            reasons_add_count(s->reasons, &s->reason_count, e->reasons[i]->text,
                              e->reasons[i]->count);
        free_replies(fw, replies);
        if (st != KC_SUCCESS)
            return st;
    }
    journal_trim(&s->remote);
    return KC_SUCCESS;
}

kc_status remote_merged_scores(struct scheduler *s, struct kc_cycle *cycle, uint32_t found,
                               char **message)
{
    const struct framework *fw = cycle->fw;
    Kcycle__V1__Reply *replies[FRAMEWORK_MAX_PLUGINS];
    Kcycle__V1__Evaluate ev = KCYCLE__V1__EVALUATE__INIT;
    for (uint32_t i = 0; i < found; i++)
        s->candidates[i] = s->feasible[i]->index;
    ev.candidates = s->candidates;
    ev.n_candidates = found;
    ev.score = found > 1; /* one node: nothing to score, but the host keeps the cycle */
    *message = NULL;
    /* a host whose own feasible nodes are the final list scored exactly these in the filter
     * round (NormalizeScore saw the same nodes): no second round trip */
    bool ask[FRAMEWORK_MAX_PLUGINS] = {0}, asking = false;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        const Kcycle__V1__Reply *kept = s->remote.filter_replies[k];
        bool same = kept != NULL && kept->evaluate->n_feasible == found;
        for (uint32_t i = 0; same && i < found; i++)
            same = kept->evaluate->feasible[i] == s->candidates[i];
        if (same)
            add_scores(s, fw->hosts[k], kept->evaluate, found);
        ask[k] = !same && (fw->hosts[k]->phases & SCORE_PHASES);
        asking = asking || ask[k];
    }
    drop_filter_replies(&s->remote);
    if (!asking)
        return KC_SUCCESS;
    mark_candidates(s, s->candidates, found, CANDIDATE_MARK);
    kc_status st = evaluate_round(s, cycle, &ev, SCORE_PHASES, ask, found, replies, message);
    mark_candidates(s, s->candidates, found, 0);
    for (uint32_t k = 0; st == KC_SUCCESS && k < fw->host_count; k++)
        if (replies[k] != NULL && replies[k]->evaluate->status == KC_SUCCESS)
            add_scores(s, fw->hosts[k], replies[k]->evaluate, found);
    free_replies(fw, replies);
    journal_trim(&s->remote);
    return st;
}

/* ---- later phases ---- */

static uint32_t phase_bits(enum phase phase)
{
    switch (phase) {
    case PHASE_POST_FILTER: return KCYCLE__V1__PHASE__PHASE_POST_FILTER;
    case PHASE_RESERVE: return KCYCLE__V1__PHASE__PHASE_RESERVE;
    case PHASE_UNRESERVE:
        return KCYCLE__V1__PHASE__PHASE_UNRESERVE | KCYCLE__V1__PHASE__PHASE_RESERVE;
    case PHASE_PERMIT: return KCYCLE__V1__PHASE__PHASE_PERMIT;
    case PHASE_PRE_BIND: return KCYCLE__V1__PHASE__PHASE_PRE_BIND;
    case PHASE_BIND: return KCYCLE__V1__PHASE__PHASE_BIND;
    case PHASE_POST_BIND: return KCYCLE__V1__PHASE__PHASE_POST_BIND;
    default: return 0;
    }
}

static Kcycle__V1__Phase wire_phase(enum phase phase)
{
    switch (phase) {
    case PHASE_POST_FILTER: return KCYCLE__V1__PHASE__PHASE_POST_FILTER;
    case PHASE_RESERVE: return KCYCLE__V1__PHASE__PHASE_RESERVE;
    case PHASE_UNRESERVE: return KCYCLE__V1__PHASE__PHASE_UNRESERVE;
    case PHASE_PERMIT: return KCYCLE__V1__PHASE__PHASE_PERMIT;
    case PHASE_PRE_BIND: return KCYCLE__V1__PHASE__PHASE_PRE_BIND;
    case PHASE_BIND: return KCYCLE__V1__PHASE__PHASE_BIND;
    default: return KCYCLE__V1__PHASE__PHASE_POST_BIND;
    }
}

/* The annotations a host's plugins wrote into the cycle, for the Binding. */
static void copy_annotations(struct kc_cycle *cycle, const Kcycle__V1__PhaseReply *pr)
{
    for (size_t i = 0; i < pr->n_annotations; i++)
        kv_list_set(&cycle->annotations, pr->annotations[i]->key, pr->annotations[i]->value);
}

kc_status remote_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                       const char *node, uint32_t *failed, uint32_t *timeout_ms, uint64_t *waiting,
                       bool *bind_requested)
{
    /* an open cycle finishes on the hosts of the generation it started on */
    const struct framework *fw = cycle->fw;
    uint32_t bits = phase_bits(phase);
    kc_status result = KC_SUCCESS;
    bool skipped_all = true;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        if (!(h->phases & bits))
            continue;
        skipped_all = skipped_all && phase == PHASE_BIND;
        Kcycle__V1__PhaseCall call = KCYCLE__V1__PHASE_CALL__INIT;
        call.phase = wire_phase(phase);
        call.pod_uid = cycle->sp->pod->uid;
        call.node = (char *)node;
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_PHASE;
        req.phase = &call;
        Kcycle__V1__Reply *reply =
            phase == PHASE_RESERVE ? ride_take(&s->remote, cycle, h, node) : NULL;
        if (reply != NULL) {
            /* Reserve ran with the evaluation: its answer stands in for the call's (result
             * is a oneof: the evaluation goes before the phase answer takes its place) */
            Kcycle__V1__EvaluateReply *e = reply->evaluate;
            Kcycle__V1__PhaseReply *pr = e->reserve;
            e->reserve = NULL;
            kcycle__v1__evaluate_reply__free_unpacked(e, NULL);
            reply->result_case = KCYCLE__V1__REPLY__RESULT_PHASE;
            reply->phase = pr;
        } else if (h->state == REMOTE_UP) {
            reply = round_trip(s, h, &req);
        }
        if (reply != NULL && reply->result_case != KCYCLE__V1__REPLY__RESULT_PHASE) {
            kcycle__v1__reply__free_unpacked(reply, NULL);
            host_set_error(h, "an answer to a phase call that is not a phase reply");
            reply = NULL;
        }
        if (reply == NULL) {
            if (h->state == REMOTE_UP)
                host_fail(s, h);
            if (phase != PHASE_UNRESERVE && phase != PHASE_POST_BIND &&
                phase != PHASE_POST_FILTER && host_fails_pods(h)) {
                if (failed != NULL)
                    *failed = plugin_in(h, 0, cycle->fw);
                return KC_ERROR;
            }
            continue;
        }
        h->consecutive_failures = 0;
        const Kcycle__V1__PhaseReply *pr = reply->phase;
        kc_status st = (kc_status)pr->status;
        uint32_t plugin = plugin_in(h, pr->plugin, cycle->fw);
        if (pr->status > KC_STATUS_MAX)
            st = KC_ERROR;
        if (phase == PHASE_PERMIT && st == KC_WAIT && waiting != NULL && timeout_ms != NULL) {
            if (*waiting == 0 || pr->timeout_ms < *timeout_ms) {
                *timeout_ms = pr->timeout_ms;
                if (failed != NULL)
                    *failed = plugin;
            }
            *waiting |= map_plugins(h, cycle->fw, pr->waiting);
            result = KC_WAIT;
        } else if (phase == PHASE_BIND && st == KC_SKIP) {
            /* the next host may bind */
        } else if (st != KC_SUCCESS && phase != PHASE_UNRESERVE && phase != PHASE_POST_BIND &&
                   phase != PHASE_POST_FILTER) {
            if (failed != NULL)
                *failed = plugin;
            if (pr->message != NULL && pr->message[0] != '\0')
                cycle_fail(cycle, pr->message);
            kcycle__v1__reply__free_unpacked(reply, NULL);
            return st;
        } else if (phase == PHASE_PRE_BIND && take_writes(cycle, pr) < 0) {
            cycle_fail(cycle, "out of memory");
            kcycle__v1__reply__free_unpacked(reply, NULL);
            return KC_ERROR;
        } else if (phase == PHASE_BIND) {
            copy_annotations(cycle, pr);
            if (bind_requested != NULL)
                *bind_requested = pr->bind_requested;
            skipped_all = false;
            kcycle__v1__reply__free_unpacked(reply, NULL);
            return KC_SUCCESS;
        } else if (phase == PHASE_RESERVE || phase == PHASE_PERMIT || phase == PHASE_PRE_BIND) {
            /* a hosted plugin's decisions for the Binding (numaalign's zones in Reserve) */
            copy_annotations(cycle, pr);
        }
        kcycle__v1__reply__free_unpacked(reply, NULL);
    }
    if (phase == PHASE_BIND && skipped_all)
        return KC_SKIP;
    return result;
}

/* ---- measurement ---- */

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int remote_round_trip_us(struct scheduler *s, uint32_t samples, double *p50_us)
{
    struct remote_host *h = NULL;
    for (uint32_t k = 0; k < s->fw->host_count && h == NULL; k++)
        if (s->fw->hosts[k]->state == REMOTE_UP)
            h = s->fw->hosts[k];
    if (h == NULL || samples == 0)
        return -ENOENT;
    int64_t *times = calloc(samples, sizeof(*times));
    if (times == NULL)
        return -ENOMEM;
    uint32_t done = 0;
    for (; done < samples; done++) {
        struct timespec a, b;
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
        req.sync = true;
        struct remote_colocation *c = &s->remote.colocation;
        remote_placement_enabled(c); /* decided before it is overridden */
        bool forced = c->forced;
        c->forced = true; /* the transport on one CPU, as the pinned evaluations go */
        remote_placement_colocate(s, h);
        c->forced = forced;
        clock_gettime(CLOCK_MONOTONIC, &a);
        Kcycle__V1__Reply *reply = round_trip(s, h, &req);
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (reply == NULL)
            break;
        kcycle__v1__reply__free_unpacked(reply, NULL);
        times[done] = (b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
    }
    remote_placement_unpin(&s->remote);
    if (done > 0) {
        qsort(times, done, sizeof(*times), compare_int64);
        *p50_us = (double)times[done / 2] / 1000.0;
    }
    free(times);
    return done == samples ? 0 : -EIO;
}

/* ---- binding cycles that ride together ---- */

#define BINDING_PHASES                                                                             \
    (KCYCLE__V1__PHASE__PHASE_PRE_BIND | KCYCLE__V1__PHASE__PHASE_BIND |                           \
     KCYCLE__V1__PHASE__PHASE_POST_BIND)

bool remote_binds(const struct framework *fw)
{
    for (uint32_t k = 0; k < fw->host_count; k++)
        if (fw->hosts[k]->phases & BINDING_PHASES)
            return true;
    return false;
}

/* The batch's calls, one Bind phase call per cycle (calls and list malloc'd): 0 or -ENOMEM. */
static int bind_calls(struct kc_cycle **cycles, uint32_t count, Kcycle__V1__PhaseCall **calls_out,
                      Kcycle__V1__PhaseCall ***list_out)
{
    Kcycle__V1__PhaseCall *calls = calloc(count, sizeof(*calls));
    Kcycle__V1__PhaseCall **list = calloc(count, sizeof(*list));
    if (calls == NULL || list == NULL) {
        free(calls);
        free(list);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < count; i++) {
        kcycle__v1__phase_call__init(&calls[i]);
        calls[i].phase = KCYCLE__V1__PHASE__PHASE_BIND;
        calls[i].pod_uid = cycles[i]->sp->pod->uid;
        calls[i].node = cycles[i]->node_name;
        calls[i].binding_cycle = true;
        list[i] = &calls[i];
    }
    *calls_out = calls;
    *list_out = list;
    return 0;
}

static int send_bind_calls(struct scheduler *s, struct remote_host *h,
                           Kcycle__V1__PhaseCall **list, uint32_t count)
{
    Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
    req.n_batch = count;
    req.batch = list;
    req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    req.sync = true;
    return send_request(s, h, &req);
}

/* h's answer to a batch (NULL: none came, the host failed) merged into results, in host
 * order: the first host's Bind that bound a pod wins, a failure anywhere fails it. Frees
 * reply. */
static void take_bind_reply(struct scheduler *s, struct remote_host *h, Kcycle__V1__Reply *reply,
                            bool fail_host, struct kc_cycle **cycles, uint32_t count,
                            struct remote_binding *results)
{
    if (reply != NULL && reply->n_batch != count) {
        host_set_error(h, "an answer with %zu binding results for %u pods", reply->n_batch,
                       count);
        kcycle__v1__reply__free_unpacked(reply, NULL);
        reply = NULL;
    }
    if (reply == NULL) {
        if (fail_host)
            host_fail(s, h);
        if (!host_fails_pods(h))
            return;
        for (uint32_t i = 0; i < count; i++)
            if (results[i].status == KC_SKIP || results[i].status == KC_SUCCESS)
                results[i] =
                    (struct remote_binding){KC_ERROR, plugin_in(h, 0, cycles[i]->fw), false};
        return;
    }
    h->consecutive_failures = 0;
    for (uint32_t i = 0; i < count; i++) {
        const Kcycle__V1__PhaseReply *pr = reply->batch[i];
        struct remote_binding *res = &results[i];
        if (res->status != KC_SKIP && res->status != KC_SUCCESS)
            continue; /* already failed on another host */
        if (pr->status == KC_SKIP)
            continue;
        uint32_t plugin = plugin_in(h, pr->plugin, cycles[i]->fw);
        if (pr->status != KC_SUCCESS) {
            *res = (struct remote_binding){KC_ERROR, plugin, false};
            if (pr->message != NULL && pr->message[0] != '\0')
                cycle_fail(cycles[i], pr->message);
            continue;
        }
        if (res->status == KC_SUCCESS)
            continue; /* an earlier host bound it */
        *res = (struct remote_binding){KC_SUCCESS, plugin, pr->bind_requested};
        if (take_writes(cycles[i], pr) < 0)
            *res = (struct remote_binding){KC_ERROR, plugin, false};
        for (size_t l = 0; l < pr->n_annotations; l++)
            kv_list_set(&cycles[i]->annotations, pr->annotations[l]->key,
                        pr->annotations[l]->value);
    }
    kcycle__v1__reply__free_unpacked(reply, NULL);
}

/* fw's binding hosts, brought up: how many went in active, or -1 when one that fails pods is
 * down (results then say so for every cycle). */
static int binding_hosts(struct scheduler *s, const struct framework *fw,
                         struct kc_cycle **cycles, uint32_t count,
                         struct remote_binding *results, struct remote_host **active)
{
    int n_active = 0;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        if (!(h->phases & BINDING_PHASES))
            continue;
        if (ensure_up(s, h) == 0) {
            active[n_active++] = h;
        } else if (host_fails_pods(h)) {
            for (uint32_t i = 0; i < count; i++)
                results[i] =
                    (struct remote_binding){KC_ERROR, plugin_in(h, 0, cycles[i]->fw), false};
            return -1;
        }
    }
    return n_active;
}

/* One batch of cycles that all started on generation fw, on fw's hosts. */
static void bind_batch(struct scheduler *s, const struct framework *fw, struct kc_cycle **cycles,
                       uint32_t count, struct remote_binding *results)
{
    struct remote *r = &s->remote;
    struct remote_host *active[FRAMEWORK_MAX_PLUGINS];
    for (uint32_t i = 0; i < count; i++)
        results[i] = (struct remote_binding){.status = KC_SKIP};
    int n_active = binding_hosts(s, fw, cycles, count, results, active);
    if (n_active < 0)
        return;
    Kcycle__V1__PhaseCall *calls, **list;
    if (bind_calls(cycles, count, &calls, &list) < 0) {
        for (uint32_t i = 0; i < count; i++)
            results[i].status = KC_ERROR;
        return;
    }
    bool sent[FRAMEWORK_MAX_PLUGINS] = {0};
    for (int a = 0; a < n_active; a++)
        sent[a] = send_bind_calls(s, active[a], list, count) == 0;
    free(calls);
    free(list);
    for (int a = 0; a < n_active; a++)
        take_bind_reply(s, active[a], sent[a] ? receive_reply(s, active[a]) : NULL, true,
                        cycles, count, results);
    journal_trim(r);
}

/* Cycles of several generations may wait together: each generation's go to its own hosts. */
void remote_bind_batch(struct scheduler *s, struct kc_cycle **cycles, uint32_t count,
                       struct remote_binding *results)
{
    struct kc_cycle **group = calloc(count, sizeof(*group));
    struct remote_binding *out = calloc(count, sizeof(*out));
    uint32_t *at = calloc(count, sizeof(*at));
    bool *done = calloc(count, sizeof(*done));
    if (group == NULL || out == NULL || at == NULL || done == NULL) {
        for (uint32_t i = 0; i < count; i++)
            results[i] = (struct remote_binding){KC_ERROR, 0, false};
    } else {
        for (uint32_t first = 0; first < count; first++) {
            if (done[first])
                continue;
            const struct framework *fw = cycles[first]->fw;
            uint32_t n = 0;
            for (uint32_t i = first; i < count; i++) {
                if (!done[i] && cycles[i]->fw == fw) {
                    done[i] = true;
                    at[n] = i;
                    group[n++] = cycles[i];
                }
            }
            bind_batch(s, fw, group, n, out);
            for (uint32_t k = 0; k < n; k++)
                results[at[k]] = out[k];
        }
    }
    free(group);
    free(out);
    free(at);
    free(done);
}

/* ---- a binding batch in the air ----
 * The binding cycle is asynchronous (as in kube-scheduler), so a batch for the binding hosts
 * need not hold the cycle thread: it is sent to each, the cycle thread goes on placing pods,
 * and the answers are taken at the next flush (remote_bind_collect: before the next batch
 * goes, or when there is nothing else to do), each host's before any other request to it (one
 * request in the air per host: a host that also evaluates answers the batch first), and
 * merged in host order as remote_bind_batch does. The hosts' PreBind, Bind and PostBind then
 * run beside the cycle instead of in it (on another CPU, unless the host is the evaluating one
 * pinned beside the cycle thread): waiting for them took a quarter of the time per pod in hosts (docs/benchmarks.md,
 * "Where the evaluating host runs, and binding batches in the air"). Not for a group cycle's
 * members (group_check_bindings must see them until they are bound), and not in a simulation:
 * its results would depend on the wall clock. */

/* Host i's answer to the batch in the air, kept for remote_bind_collect (NULL when the host
 * failed: its incarnation changed, or no good answer came). */
static void flight_receive(struct scheduler *s, uint32_t i)
{
    struct remote_flight *f = &s->remote.flight;
    struct remote_host *h = f->hosts[i];
    f->received[i] = true;
    h->sent_ns = 0; /* its time in the air is no round trip's (the metric) */
    f->replies[i] =
        h->restarts == f->restarts[i] && h->state == REMOTE_UP ? receive_reply(s, h) : NULL;
}

/* Before anything else goes to h, or h is failed: its answer to the batch in the air first
 * (one request in the air per host). False when no good answer came. */
static bool flight_settle(struct scheduler *s, const struct remote_host *h)
{
    struct remote_flight *f = &s->remote.flight;
    for (uint32_t i = 0; i < f->host_count; i++) {
        if (f->hosts[i] != h || f->received[i])
            continue;
        flight_receive(s, i);
        return f->replies[i] != NULL;
    }
    return true;
}

bool remote_bind_in_flight(const struct scheduler *s)
{
    return s->remote.flight.host_count > 0;
}

bool remote_bind_send(struct scheduler *s, struct kc_cycle **cycles, uint32_t count)
{
    struct remote_flight *f = &s->remote.flight;
    if (f->host_count > 0 || count == 0 || s->clock.now_ms != NULL)
        return false;
    const struct framework *fw = cycles[0]->fw;
    /* a group cycle's members stay in the tick's sight until bound (group_check_bindings
     * releases the whole group when one of them goes away first) */
    for (uint32_t i = 0; i < count; i++)
        if (cycles[i]->fw != fw || cycles[i]->group != NULL)
            return false;
    struct remote_host *hosts[FRAMEWORK_MAX_PLUGINS];
    uint32_t n = 0;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        if (!(fw->hosts[k]->phases & BINDING_PHASES))
            continue;
        if (fw->hosts[k]->state != REMOTE_UP)
            return false; /* starting it (or failing the pods) is remote_bind_batch's */
        hosts[n++] = fw->hosts[k];
    }
    /* the results' room first: once a host has bound, running out of memory must not turn
     * its bindings into failures */
    struct remote_binding *results = n > 0 ? calloc(count, sizeof(*results)) : NULL;
    Kcycle__V1__PhaseCall *calls, **list;
    if (results == NULL || bind_calls(cycles, count, &calls, &list) < 0) {
        free(results);
        return false;
    }
    uint64_t batches = f->batches;
    memset(f, 0, sizeof(*f));
    f->cycles = cycles;
    f->results = results;
    f->count = count;
    f->batches = batches + 1;
    for (uint32_t i = 0; i < n; i++) {
        /* sent before it joins the flight (send_request settles a flight host first); one
         * not sent is collected as the host's failure */
        bool failed = send_bind_calls(s, hosts[i], list, count) < 0;
        f->hosts[i] = hosts[i];
        f->restarts[i] = hosts[i]->restarts;
        f->received[i] = failed;
        f->host_count = i + 1;
    }
    free(calls);
    free(list);
    journal_trim(&s->remote);
    return true;
}

int remote_bind_collect(struct scheduler *s, bool wait, struct kc_cycle ***cycles,
                        uint32_t *count, struct remote_binding **results)
{
    struct remote_flight *f = &s->remote.flight;
    if (f->host_count == 0)
        return 0;
    for (uint32_t i = 0; !wait && i < f->host_count; i++) {
        const struct remote_host *h = f->hosts[i];
        if (!f->received[i] && h->state == REMOTE_UP && h->restarts == f->restarts[i] &&
            channel_wait(&h->channel, 0) == 0)
            return 0; /* not all answered yet */
    }
    for (uint32_t i = 0; i < f->host_count; i++)
        if (!f->received[i])
            flight_receive(s, i);
    struct remote_binding *out = f->results;
    for (uint32_t i = 0; i < f->count; i++)
        out[i] = (struct remote_binding){.status = KC_SKIP};
    /* merged in host order, as remote_bind_batch does */
    for (uint32_t i = 0; i < f->host_count; i++) {
        struct remote_host *h = f->hosts[i];
        bool same = h->state == REMOTE_UP && h->restarts == f->restarts[i];
        /* a host failed since (remote_watch, or a request that found its answer missing):
         * the batch is lost with it, and it is not failed again */
        take_bind_reply(s, h, f->replies[i], same, f->cycles, f->count, out);
    }
    *cycles = f->cycles;
    *count = f->count;
    *results = out;
    uint64_t batches = f->batches;
    memset(f, 0, sizeof(*f));
    f->batches = batches;
    journal_trim(&s->remote);
    return 1;
}

void remote_bind_drop(struct scheduler *s, struct kc_cycle ***cycles, uint32_t *count)
{
    struct remote_flight *f = &s->remote.flight;
    *cycles = f->cycles;
    *count = f->count;
    for (uint32_t i = 0; i < f->host_count; i++)
        if (f->replies[i] != NULL)
            kcycle__v1__reply__free_unpacked(f->replies[i], NULL);
    free(f->results);
    uint64_t batches = f->batches;
    memset(f, 0, sizeof(*f));
    f->batches = batches;
}

/* A scheduler with nothing to schedule still journals every cluster change: past a size, send
 * them so neither the journal nor the next request grows without bound. */
/* How often remote_watch looks for hosts that died between requests (scheduler clock): a
 * death is also seen by the next request, so this only bounds how long an idle host stays
 * dead, and a waitpid per host on every tick would cost more than it finds. */
#define WATCH_INTERVAL_MS 100
void remote_watch(struct scheduler *s)
{
    struct remote *r = &s->remote;
    int64_t now = scheduler_now(s);
    bool look = now - r->watched_ms >= WATCH_INTERVAL_MS || now < r->watched_ms;
    if (look)
        r->watched_ms = now;
    for (uint32_t k = 0; k < r->host_count; k++) {
        struct remote_host *h = r->hosts[k];
        if (h->retiring)
            continue;
        int status;
        if (look && h->state == REMOTE_UP && h->pid > 0 &&
            waitpid(h->pid, &status, WNOHANG) == h->pid) {
            host_exited(h, status);
            host_fail(s, h);
        }
        if (h->state == REMOTE_DOWN && scheduler_now(s) >= h->next_start_ms)
            ensure_up(s, h);
    }
}

int64_t remote_next_due(const struct scheduler *s)
{
    int64_t due = INT64_MAX;
    for (uint32_t k = 0; k < s->remote.host_count; k++) {
        const struct remote_host *h = s->remote.hosts[k];
        if (h->state == REMOTE_DOWN && !h->retiring && h->next_start_ms < due)
            due = h->next_start_ms;
    }
    return due;
}

void remote_sync_if_large(struct scheduler *s)
{
    struct remote *r = &s->remote;
    if (r->journal_count < 4096)
        return;
    for (uint32_t k = 0; k < r->host_count; k++) {
        struct remote_host *h = r->hosts[k];
        if (h->state != REMOTE_UP || h->cursor == r->journal_base + r->journal_count)
            continue;
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
        req.sync = true;
        Kcycle__V1__Reply *reply = round_trip(s, h, &req);
        if (reply == NULL)
            host_fail(s, h);
        else
            kcycle__v1__reply__free_unpacked(reply, NULL);
    }
    journal_trim(r);
}

/* ---- a group cycle's members in one request per host (remote.h, plugin.proto) ---- */

/* Members per request, at most. A request has the deadline of one evaluation (the plugin
 * timeout) however many members it carries, so group_chunk sizes each to fit well inside it;
 * a large group goes in several, each sent once the members of the one before are taken. */
#define REMOTE_GROUP_CHUNK 64
/* The first request of a host carries this many; each next one at most twice the last. */
#define REMOTE_GROUP_FIRST 2
/* The share of the plugin timeout a request's expected time may take (1/GROUP_DEADLINE_SHARE):
 * members' times vary (a loaded machine, a slow node), and a request that times out restarts
 * the host. */
#define GROUP_DEADLINE_SHARE 4

/* How many members h's next group request may carry: as many as h's slowest measured member
 * time lets fit in a quarter of the timeout, starting small and at most doubling from one
 * request to the next (a member may be slower than those measured so far); at least 1. */
static uint32_t group_chunk(const struct remote *r, const struct remote_host *h)
{
    uint64_t chunk =
        h->group_chunk_last == 0 ? REMOTE_GROUP_FIRST : 2 * (uint64_t)h->group_chunk_last;
    if (h->group_member_us > 0) {
        uint64_t fit =
            (uint64_t)r->timeout_ms * 1000 / GROUP_DEADLINE_SHARE / (uint64_t)h->group_member_us;
        chunk = fit < chunk ? fit : chunk;
    }
    chunk = chunk < REMOTE_GROUP_CHUNK ? chunk : REMOTE_GROUP_CHUNK;
    return chunk > 0 ? (uint32_t)chunk : 1;
}

/* A group request of `count` members, sized for `chunk`, took `took` us (a failed one counts
 * as one member that took the whole deadline): the slowest member time seen lasts, decaying by
 * half toward faster ones so that one stall does not keep requests small for good. */
static void group_measured(struct remote_host *h, uint32_t count, uint32_t chunk, int64_t took)
{
    int64_t per = took / (count > 0 ? count : 1);
    h->group_member_us = per >= h->group_member_us ? per : (h->group_member_us + per) / 2;
    h->group_chunk_last = chunk; /* a group's last few members do not shrink the next group's */
}

/* The current request's answer and what indexes it. */
static void group_drop_answer(struct remote_group_batch *b)
{
    if (b->reply != NULL)
        kcycle__v1__reply__free_unpacked(b->reply, NULL);
    free(b->uids);
    free(b->placed);
    free(b->host_nodes);
    b->reply = NULL;
    b->pods = NULL;
    b->uids = NULL;
    b->placed = NULL;
    b->host_nodes = NULL;
    b->count = b->next = b->placed_before = b->assumed = b->placed_count = 0;
}

static void group_drop(struct remote *r)
{
    struct remote_group_batch *b = &r->group;
    group_drop_answer(b);
    free(b->rest_base);
    memset(b, 0, sizeof(*b));
}

static bool group_send(struct scheduler *s);

void remote_group_end(struct scheduler *s)
{
    group_drop(&s->remote);
}

/* Whether assuming pod on node is the assumption the group's host made (and kept) for the
 * next member it placed, for the very pod of its request: Assume.as_evaluated. */
static bool group_as_evaluated(const struct remote *r, const struct pod *pod, const char *node)
{
    const struct remote_group_batch *b = &r->group;
    if (b->reply == NULL || b->pods == NULL || b->assumed >= b->placed_count || node == NULL)
        return false;
    uint32_t m = b->placed[b->assumed];
    return b->pods[m] == pod && b->host_nodes[m] != NULL && strcmp(b->host_nodes[m], node) == 0;
}

/* Every delta journaled while a group's answer is being taken: the assumption the host made
 * for the next member it placed keeps the answer good; anything else ends it. */
static void group_note(struct remote *r, const Kcycle__V1__Delta *delta)
{
    struct remote_group_batch *b = &r->group;
    if (b->reply == NULL)
        return;
    if (delta->change_case == KCYCLE__V1__DELTA__CHANGE_ASSUME && b->assumed < b->placed_count) {
        uint32_t m = b->placed[b->assumed];
        const Kcycle__V1__Assume *a = delta->assume;
        const char *node = b->host_nodes[m];
        if (a->pod != NULL && strcmp(a->pod->uid, b->uids[m]) == 0 && node != NULL &&
            strcmp(a->node, node) == 0) {
            b->assumed++;
            return;
        }
    }
    group_drop(r);
}

/* The position of h among fw's hosts, or -1. */
static int host_position(const struct framework *fw, const struct remote_host *h)
{
    for (uint32_t k = 0; k < fw->host_count; k++)
        if (fw->hosts[k] == h)
            return (int)k;
    return -1;
}

/* The group's answer for this member, when the scheduler's request for it is the one the host
 * answered and everything before it went as the host assumed: replies[k] of its host (a shell
 * around the answer, which keeps owning it) and k; else -1, and the rest of the answer is
 * dropped. */
static int group_take(struct scheduler *s, struct kc_cycle *cycle, const Kcycle__V1__Evaluate *ev,
                      uint32_t candidate_count, Kcycle__V1__Reply **replies,
                      Kcycle__V1__Reply *shell)
{
    struct remote_group_batch *b = &s->remote.group;
    if (b->reply == NULL)
        return -1;
    /* this request's members are all taken, as the host assumed them: ask for the next ones
     * (the journal brings the host the scheduler's assumptions of these first) */
    if (b->next == b->count && b->rest_count > 0 && b->assumed == b->placed_before &&
        b->assumed == b->placed_count && !group_send(s))
        return -1;
    const Kcycle__V1__EvaluateGroupReply *g = b->reply->evaluate_group;
    uint32_t m = b->next;
    int k = host_position(cycle->fw, b->host);
    bool same = k >= 0 && b->host->state == REMOTE_UP && m < b->count &&
                strcmp(cycle->sp->pod->uid, b->uids[m]) == 0 && ev->all_nodes &&
                ev->want == b->want && ev->start == g->starts[m] && !ev->node_rejectors &&
                ev->n_nominated == 0 && b->assumed == b->placed_before &&
                b->host->restarts == b->restarts && (!b->rng_known || s->rng == b->rng);
    shell->result_case = KCYCLE__V1__REPLY__RESULT_EVALUATE;
    shell->evaluate = same ? g->members[m] : NULL;
    if (!same || !only_candidates(s, shell->evaluate, candidate_count) ||
        !picked_valid(s, ev, shell->evaluate, candidate_count)) {
        group_drop(&s->remote);
        return -1;
    }
    b->next++;
    if (g->chosen[m] >= 0) {
        b->placed_before++;
        /* the host's pick says where its generator went; the scheduler's own choice does not */
        b->rng_known = b->rng_known && shell->evaluate->picked;
        b->rng = shell->evaluate->rng;
    }
    for (uint32_t i = 0; i < cycle->fw->host_count; i++)
        replies[i] = NULL;
    replies[k] = shell;
    s->remote.group_members_taken++;
    return k;
}

/* The one host of fw that evaluates, when the group's members can go to it together: no other
 * backend filters or scores (the host's pick is then the scheduler's), and no Reserve or Permit
 * runs there (their effects would come after the members that follow were evaluated). */
static struct remote_host *group_host(const struct scheduler *s, const struct framework *fw)
{
    struct remote_host *only = sole_evaluator(fw);
    uint32_t later = KCYCLE__V1__PHASE__PHASE_RESERVE | KCYCLE__V1__PHASE__PHASE_PERMIT;
    if (only == NULL || (only->phases & later) || only->state != REMOTE_UP ||
        fw->phase_count[PHASE_FILTER] > 0 || s->cache.node_count == 0 || s->nominations.count > 0)
        return NULL; /* nominated pods go with each member's own Evaluate (Evaluate.nominated) */
    return only;
}

/* Check the group's answer against its request and index the host's placements: NULL, or
 * what does not match (for the host's error). */
static const char *group_index(struct scheduler *s, struct remote_group_batch *b)
{
    const Kcycle__V1__EvaluateGroupReply *g = b->reply->evaluate_group;
    if (b->reply->result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE_GROUP || g == NULL)
        return "an answer of another kind";
    if (g->n_members != b->count || g->n_chosen != b->count || g->n_starts != b->count)
        return "another number of members answered than asked";
    b->placed = calloc(b->count + 1, sizeof(*b->placed));
    b->host_nodes = calloc(b->count + 1, sizeof(*b->host_nodes));
    if (b->placed == NULL || b->host_nodes == NULL)
        return "out of memory indexing it";
    for (uint32_t m = 0; m < b->count; m++) {
        int32_t node = g->chosen[m];
        if (node >= (int32_t)s->cache.node_count)
            return "a member placed on a node out of range";
        if (g->members[m] == NULL)
            return "a member without its evaluation";
        if (node >= 0) {
            b->host_nodes[m] = s->cache.nodes[node].node->name;
            b->placed[b->placed_count++] = m;
        }
    }
    return NULL;
}

/* Deltas another host must lag by before a group request brings it up to date beside it. */
#define GROUP_SYNC_MIN_DELTAS 16

/* While the group's host h evaluates: every other host that lags by many deltas (the binder's,
 * which gets each member's assumption and binding) is sent them in a Sync, so it applies them
 * at the same time instead of in the binding batch, after the group. Returns how many were
 * sent, listed in sent[] (room for r->host_count). */
static uint32_t group_sync_others(struct scheduler *s, const struct remote_host *h,
                                  struct remote_host **sent)
{
    struct remote *r = &s->remote;
    uint64_t end = r->journal_base + r->journal_count;
    uint32_t count = 0;
    for (uint32_t k = 0; k < r->host_count; k++) {
        struct remote_host *other = r->hosts[k];
        if (other == h || other->state != REMOTE_UP || other->cursor + GROUP_SYNC_MIN_DELTAS > end)
            continue;
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
        req.sync = true;
        if (send_request(s, other, &req) == 0)
            sent[count++] = other;
        else
            host_fail(s, other);
    }
    return count;
}

/* The Syncs' answers (after the group's own): a host that gives none fails as after any
 * request. */
static void group_sync_collect(struct scheduler *s, struct remote_host **sent, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        Kcycle__V1__Reply *reply = receive_reply(s, sent[i]);
        if (reply == NULL)
            host_fail(s, sent[i]);
        else
            kcycle__v1__reply__free_unpacked(reply, NULL);
    }
}

/* Ask the group's host for the next members (at most REMOTE_GROUP_CHUNK of b->rest): true with
 * the answer indexed, false with the group dropped (a failed request restarts the host, as
 * any). */
static bool group_send(struct scheduler *s)
{
    struct remote *r = &s->remote;
    struct remote_group_batch *b = &r->group;
    struct remote_host *h = b->host;
    group_drop_answer(b);
    uint32_t chunk = group_chunk(r, h);
    uint32_t count = b->rest_count < chunk ? b->rest_count : chunk;
    uint32_t n = s->cache.node_count;
    if (h->state != REMOTE_UP || n == 0) {
        group_drop(r);
        return false;
    }
    Kcycle__V1__Evaluate *members = calloc(count, sizeof(*members));
    Kcycle__V1__Evaluate **list = calloc(count, sizeof(*list));
    int64_t *weights = calloc(h->plugin_count + 1, sizeof(*weights));
    b->uids = calloc(count, sizeof(*b->uids));
    bool ok = members != NULL && list != NULL && weights != NULL && b->uids != NULL;
    uint32_t encoded = 0;
    for (; ok && encoded < count; encoded++) {
        const struct pod *pod = b->rest[encoded];
        Kcycle__V1__Evaluate *ev = &members[encoded];
        kcycle__v1__evaluate__init(ev);
        ev->pod = pod_to_proto(pod);
        ok = ev->pod != NULL;
        ev->all_nodes = true;
        ev->start = s->next_start_node % n;
        ev->want = scheduler_nodes_to_find(s, n);
        ev->score = true;
        ev->pick = host_may_pick(h); /* as remote_evaluate asks */
        list[encoded] = ev;
        b->uids[encoded] = pod->uid;
    }
    for (uint32_t i = 0; ok && i < h->plugin_count; i++)
        weights[i] = h->plugins[i]->weight;
    Kcycle__V1__Reply *reply = NULL;
    if (ok) {
        Kcycle__V1__EvaluateGroup group = KCYCLE__V1__EVALUATE_GROUP__INIT;
        group.n_members = count;
        group.members = list;
        group.rng = s->rng;
        b->rng = s->rng;
        b->rng_known = true;
        group.n_weights = h->plugin_count;
        group.weights = weights;
        group.keep_assumed = true; /* confirmed by the Assume deltas marked as_evaluated */
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE_GROUP;
        req.evaluate_group = &group;
        int64_t sent = monotonic_us();
        struct remote_host *synced[FRAMEWORK_MAX_PLUGINS * 2];
        uint32_t syncs = 0;
        if (send_request(s, h, &req) == 0) {
            syncs = r->host_count <= FRAMEWORK_MAX_PLUGINS * 2 ? group_sync_others(s, h, synced)
                                                              : 0;
            reply = receive_reply(s, h);
        }
        int64_t took = monotonic_us() - sent;
        group_sync_collect(s, synced, syncs);
        if (reply != NULL)
            group_measured(h, count, chunk, took);
        else
            group_measured(h, 1, 1, took);
        r->group_requests++;
        h->group_requests++;
    }
    for (uint32_t i = 0; members != NULL && i < encoded; i++)
        pod_proto_free(members[i].pod);
    free(members);
    free(list);
    free(weights);
    b->count = count;
    b->want = scheduler_nodes_to_find(s, n);
    b->reply = reply;
    b->pods = b->rest;
    b->restarts = h->restarts;
    b->rest += count;
    b->rest_count -= count;
    if (reply == NULL) {
        /* the host could not answer: it is restarted as after any failed request, and the
         * members go one by one (each asks a host that is up again, or fails as it would); the
         * failed request counts as one member that took it all, so the next group starts with
         * requests of one member */
        if (ok)
            host_fail(s, h);
        group_drop(r);
        return false;
    }
    const char *mismatch = group_index(s, b);
    if (mismatch != NULL) {
        host_set_error(h, "protocol error: evaluate_group answered with %s", mismatch);
        host_fail(s, h);
        group_drop(r);
        return false;
    }
    return true;
}

void remote_group_begin(struct scheduler *s, const struct framework *fw,
                        const struct pod *const *pods, uint32_t count)
{
    struct remote *r = &s->remote;
    group_drop(r);
    struct remote_host *h = count >= 2 ? group_host(s, fw) : NULL;
    if (h == NULL)
        return;
    struct remote_group_batch *b = &r->group;
    b->rest_base = calloc(count, sizeof(*b->rest_base));
    if (b->rest_base == NULL)
        return;
    memcpy(b->rest_base, pods, count * sizeof(*pods));
    b->rest = b->rest_base;
    b->rest_count = count;
    b->host = h;
    group_send(s);
}

/* ---- preemption's what-if Filter ---- */

/* Whether host h serves a Filter plugin that comes before plugin `before` (framework indices
 * of fw): only such a plugin can change a verdict the in-process plugins reached. */
static bool host_filters_before(const struct remote_host *h, const struct framework *fw,
                                uint32_t before)
{
    for (uint32_t i = 0; i < h->plugin_count; i++) {
        const struct plugin *p = h->plugins[i];
        if (!p->disabled && (p->remote_phases & KCYCLE__V1__PHASE__PHASE_FILTER) &&
            plugin_in(h, i, fw) < before)
            return true;
    }
    return false;
}

/* A reply answers each item with a Filter verdict (Skip and Wait are none) and, when it
 * refuses, one of the host's enabled Filter plugins; anything else would let a node through
 * unchecked or blame a plugin that never filtered. */
static bool what_if_reply_valid(const struct remote_host *h, const Kcycle__V1__Reply *reply,
                                size_t items)
{
    if (reply->result_case != KCYCLE__V1__REPLY__RESULT_WHAT_IF ||
        reply->what_if->n_verdicts != items)
        return false;
    for (size_t i = 0; i < items; i++) {
        const Kcycle__V1__WhatIfVerdict *v = reply->what_if->verdicts[i];
        if (v->status < 0 || v->status > KC_STATUS_MAX || v->status == KC_SKIP ||
            v->status == KC_WAIT || v->plugin > h->plugin_count ||
            (v->status != KC_SUCCESS && v->plugin == 0) ||
            (v->status == KC_SUCCESS && v->plugin != 0))
            return false;
        const struct plugin *p = v->plugin > 0 ? h->plugins[v->plugin - 1] : NULL;
        if (p != NULL && (p->disabled || !(p->remote_phases & KCYCLE__V1__PHASE__PHASE_FILTER)))
            return false;
    }
    return true;
}

/* Keep in out the refusal of the plugin first in the configuration. */
static void take_what_if_verdict(const struct remote_host *h, const struct framework *fw,
                                 const Kcycle__V1__WhatIfVerdict *v, struct what_if_verdict *out)
{
    if (v->status == KC_SUCCESS)
        return;
    uint32_t plugin = plugin_in(h, v->plugin - 1, fw);
    if (out->status != KC_SUCCESS && out->plugin <= plugin)
        return;
    char *reasons = what_if_join((const char *const *)v->reasons, (uint32_t)v->n_reasons);
    if (reasons == NULL)
        return;
    free(out->reasons);
    out->status = (kc_status)v->status;
    out->plugin = plugin;
    out->reasons = reasons;
}

/* The request: the pod, then one item per pass on node (pass 0 with the nominated pods counted,
 * pass 1 without). Everything it points to is freed by what_if_request_free. */
struct what_if_request {
    Kcycle__V1__WhatIf call;
    Kcycle__V1__WhatIfNode items[2];
    Kcycle__V1__WhatIfNode *item_list[2];
    char **removed;
    uint32_t *added;
};

static void what_if_request_free(struct what_if_request *w)
{
    pod_proto_free(w->call.pod);
    for (size_t i = 0; w->call.nominated != NULL && i < w->call.n_nominated; i++)
        pod_proto_free(w->call.nominated[i]);
    free(w->call.nominated);
    free(w->removed);
    free(w->added);
}

static int what_if_request_build(struct what_if_request *w, const struct pod *pod,
                                 const struct cache_node *node, const struct pod *const *removed,
                                 uint32_t removed_count, const struct pod *const *added,
                                 uint32_t added_count, uint32_t passes)
{
    memset(w, 0, sizeof(*w));
    kcycle__v1__what_if__init(&w->call);
    w->removed = calloc(removed_count + 1, sizeof(*w->removed));
    w->added = calloc(added_count + 1, sizeof(*w->added));
    w->call.nominated = calloc(added_count + 1, sizeof(*w->call.nominated));
    w->call.pod = pod_to_proto(pod);
    if (w->removed == NULL || w->added == NULL || w->call.nominated == NULL || w->call.pod == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < removed_count; i++)
        w->removed[i] = removed[i]->uid;
    for (uint32_t i = 0; i < added_count; i++) {
        if ((w->call.nominated[i] = pod_to_proto(added[i])) == NULL)
            return -ENOMEM;
        w->call.n_nominated = i + 1;
        w->added[i] = i;
    }
    for (uint32_t p = 0; p < passes; p++) {
        kcycle__v1__what_if_node__init(&w->items[p]);
        w->items[p].node = node->index;
        w->items[p].n_removed = removed_count;
        w->items[p].removed = w->removed;
        w->items[p].n_added = p == 0 ? added_count : 0;
        w->items[p].added = w->added;
        w->item_list[p] = &w->items[p];
    }
    w->call.n_nodes = passes;
    w->call.nodes = w->item_list;
    return 0;
}

kc_status remote_what_if(struct scheduler *s, struct kc_cycle *cycle, const struct cache_node *node,
                         const struct pod *const *removed, uint32_t removed_count,
                         const struct pod *const *added, uint32_t added_count, uint32_t passes,
                         uint32_t before, struct what_if_verdict *out, char **message)
{
    const struct framework *fw = cycle->fw;
    *message = NULL;
    struct what_if_request w;
    if (what_if_request_build(&w, cycle->sp->pod, node, removed, removed_count, added, added_count,
                              passes) < 0) {
        what_if_request_free(&w);
        *message = text_format("pod %s/%s: out of memory asking plugin hosts what-if",
                               cycle->sp->pod->namespace, cycle->sp->pod->name);
        return KC_ERROR;
    }
    /* a host that evaluated the pod in this attempt reuses its PreFilter state; one that did
     * not (it restarted, or evaluated an earlier attempt) runs PreFilter afresh */
    w.call.attempt = cycle->remote_attempt;
    /* every host asked first, then every answer read: the hosts judge at the same time */
    bool sent[FRAMEWORK_MAX_PLUGINS] = {0};
    kc_status result = KC_SUCCESS;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        if (!(h->phases & KCYCLE__V1__PHASE__PHASE_FILTER) || !host_filters_before(h, fw, before))
            continue;
        if (ensure_up(s, h) < 0) {
            if (host_fails_pods(h) && result == KC_SUCCESS) {
                result = KC_ERROR;
                *message = text_format("plugin host %s is down: %s", h->name,
                                       h->last_error != NULL ? h->last_error : "starting");
            }
            continue;
        }
        Kcycle__V1__Request req = KCYCLE__V1__REQUEST__INIT;
        req.call_case = KCYCLE__V1__REQUEST__CALL_WHAT_IF;
        req.what_if = &w.call;
        sent[k] = send_request(s, h, &req) == 0;
        if (!sent[k]) {
            host_fail(s, h);
            if (host_fails_pods(h) && result == KC_SUCCESS) {
                result = KC_ERROR;
                *message = text_format("plugin host %s failed: %s", h->name,
                                       h->last_error != NULL ? h->last_error : "no detail");
            }
        }
    }
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        if (!sent[k])
            continue;
        Kcycle__V1__Reply *reply = receive_reply(s, h);
        if (reply != NULL && !what_if_reply_valid(h, reply, passes)) {
            host_set_error(h, "protocol error: a what-if answer that is not one known verdict "
                              "per node asked");
            kcycle__v1__reply__free_unpacked(reply, NULL);
            reply = NULL;
        }
        if (reply == NULL) {
            host_fail(s, h);
            if (host_fails_pods(h) && result == KC_SUCCESS) {
                result = KC_ERROR;
                free(*message);
                *message = text_format("plugin host %s failed: %s", h->name,
                                       h->last_error != NULL ? h->last_error : "no detail");
            }
            continue;
        }
        h->consecutive_failures = 0;
        for (uint32_t p = 0; p < passes; p++)
            take_what_if_verdict(h, fw, reply->what_if->verdicts[p], &out[p]);
        kcycle__v1__reply__free_unpacked(reply, NULL);
    }
    what_if_request_free(&w);
    journal_trim(&s->remote);
    return result;
}
