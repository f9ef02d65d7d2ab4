/* Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection: expiry is
 * judged on the local clock from when the record last changed, a leader that cannot renew
 * within the renew deadline stops binding at once, and a stopping leader releases the lease. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bridge.h"
#include "log.h"

struct lease_record {
    char rv[64];
    char holder[256];
    char renew_time[64];
    char acquire_time[64];
    int64_t transitions;
    int64_t duration_ms; /* the holder's leaseDurationSeconds: its promise, not ours */
};

struct elector {
    struct bridge *b;
    struct kube_client *client;
    char path[800];       /* the lease */
    char collection[512]; /* where it is created */
    struct lease_record observed;
    int64_t observed_ms; /* monotonic: when the record last changed */
    int64_t renewed_ms;  /* monotonic: our last successful write */
};

bool bridge_may_bind(struct bridge *b)
{
    if (!b->opt.leader_elect)
        return true;
    return atomic_load(&b->leader) && bridge_monotonic_ms() < atomic_load(&b->leader_until_ms);
}

static void set_leader(struct elector *e, bool leader, const char *holder)
{
    struct bridge *b = e->b;
    bool was = atomic_load(&b->leader);
    pthread_mutex_lock(&b->lock);
    bool holder_changed = strcmp(b->holder, holder) != 0;
    snprintf(b->holder, sizeof(b->holder), "%s", holder);
    atomic_store(&b->leader, leader);
    if (was != leader || holder_changed)
        bridge_note_leadership(b);
    pthread_mutex_unlock(&b->lock);
    if (was != leader) {
        atomic_fetch_add(&b->stats.leader_changes, 1);
        log_warn("bridge: %s the lease %s", leader ? "acquired" : "lost", e->path);
    }
}

static const char *string_at(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s != NULL ? s : "";
}

static void parse_record(json_t *lease, struct lease_record *r)
{
    json_t *meta = json_object_get(lease, "metadata"), *spec = json_object_get(lease, "spec");
    memset(r, 0, sizeof(*r));
    snprintf(r->rv, sizeof(r->rv), "%s", string_at(meta, "resourceVersion"));
    snprintf(r->holder, sizeof(r->holder), "%s", string_at(spec, "holderIdentity"));
    snprintf(r->renew_time, sizeof(r->renew_time), "%s", string_at(spec, "renewTime"));
    snprintf(r->acquire_time, sizeof(r->acquire_time), "%s", string_at(spec, "acquireTime"));
    r->transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
    r->duration_ms = json_integer_value(json_object_get(spec, "leaseDurationSeconds")) * 1000;
}

/* The lease body for a create (rv NULL) or an update. */
static char *lease_body(struct elector *e, const char *rv, const char *holder, int64_t duration_s,
                        const char *acquire_time, const char *renew_time, int64_t transitions)
{
    struct bridge *b = e->b;
    json_t *meta =
        json_pack("{s:s, s:s}", "name", b->opt.lease_name, "namespace", b->opt.lease_namespace);
    if (meta != NULL && rv != NULL)
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    json_t *lease = json_pack(
        "{s:s, s:s, s:o, s:{s:s, s:I, s:s, s:s, s:I}}", "apiVersion", "coordination.k8s.io/v1",
        "kind", "Lease", "metadata", meta != NULL ? meta : json_object(), "spec", "holderIdentity",
        holder, "leaseDurationSeconds", (json_int_t)duration_s, "acquireTime", acquire_time,
        "renewTime", renew_time, "leaseTransitions", (json_int_t)transitions);
    char *text = lease != NULL ? json_dumps(lease, JSON_COMPACT) : NULL;
    json_decref(lease);
    return text;
}

/* A renewal's requests; the release after the stop has RELEASE_TIMEOUT_MS for each of its
 * two, as the process is waiting to exit (an API server that slow lets the lease expire). */
#define LEASE_TIMEOUT_MS 5000
#define RELEASE_TIMEOUT_MS 1500

static long send_lease(struct elector *e, const char *method, const char *path, char *body,
                       long timeout_ms)
{
    if (body == NULL)
        return 0;
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc = kube_request(e->client, method, path, "application/json", body, strlen(body),
                          timeout_ms, &res, &err);
    long status = rc < 0 ? 0 : res.status;
    if (rc < 0)
        log_info("bridge: lease %s: %s", method, err.message);
    kube_response_free(&res);
    free(body);
    return status;
}

/* One round of client-go's tryAcquireOrRenew. true when we hold the lease after it. Times are
 * taken on the safe side: a record is observed when the GET returned (later), a renewal counts
 * from before the write was sent (earlier). */
static bool try_acquire_or_renew(struct elector *e)
{
    struct bridge *b = e->b;
    const char *me = b->opt.identity;
    int64_t duration_s = (b->opt.lease_duration_ms + 999) / 1000;
    char stamp[64];
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc =
        kube_request(e->client, "GET", e->path, NULL, NULL, 0, LEASE_TIMEOUT_MS, &res, &err);
    int64_t now = bridge_monotonic_ms();
    if (rc < 0 || (res.status != 200 && res.status != 404)) {
        if (rc < 0)
            log_info("bridge: reading the lease: %s", err.message);
        kube_response_free(&res);
        return false;
    }
    bridge_format_time(stamp, sizeof(stamp));
    if (res.status == 404) {
        kube_response_free(&res);
        int64_t sent = bridge_monotonic_ms();
        long status = send_lease(e, "POST", e->collection,
                                 lease_body(e, NULL, me, duration_s, stamp, stamp, 0),
                                 LEASE_TIMEOUT_MS);
        if (status != 201 && status != 200)
            return false; /* 409: another replica created it first */
        e->renewed_ms = sent;
        e->observed_ms = sent;
        return true;
    }
    json_t *lease = json_loadb(res.body, res.len, 0, NULL);
    kube_response_free(&res);
    if (lease == NULL)
        return false;
    struct lease_record r;
    parse_record(lease, &r);
    json_decref(lease);
    if (strcmp(r.holder, e->observed.holder) != 0 ||
        strcmp(r.renew_time, e->observed.renew_time) != 0 || strcmp(r.rv, e->observed.rv) != 0) {
        e->observed = r;
        e->observed_ms = now;
    }
    bool ours = strcmp(r.holder, me) == 0;
    int64_t duration_ms = r.duration_ms > 0 ? r.duration_ms : b->opt.lease_duration_ms;
    if (!ours && r.holder[0] != '\0' && now < e->observed_ms + duration_ms) {
        set_leader(e, false, r.holder);
        return false; /* someone else holds a lease that has not expired */
    }
    const char *acquired = ours ? r.acquire_time : stamp;
    int64_t transitions = ours ? r.transitions : r.transitions + 1;
    int64_t sent = bridge_monotonic_ms();
    long status =
        send_lease(e, "PUT", e->path,
                   lease_body(e, r.rv, me, duration_s, acquired, stamp, transitions),
                   LEASE_TIMEOUT_MS);
    if (status != 200)
        return false; /* 409: the record moved under us; look again next round */
    e->renewed_ms = sent;
    return true;
}

static void release(struct elector *e)
{
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc =
        kube_request(e->client, "GET", e->path, NULL, NULL, 0, RELEASE_TIMEOUT_MS, &res, &err);
    if (rc < 0 || res.status != 200) {
        kube_response_free(&res);
        return;
    }
    json_t *lease = json_loadb(res.body, res.len, 0, NULL);
    kube_response_free(&res);
    struct lease_record r;
    if (lease == NULL)
        return;
    parse_record(lease, &r);
    json_decref(lease);
    if (strcmp(r.holder, e->b->opt.identity) != 0)
        return;
    char stamp[64];
    bridge_format_time(stamp, sizeof(stamp));
    if (send_lease(e, "PUT", e->path, lease_body(e, r.rv, "", 1, stamp, stamp, r.transitions),
                   RELEASE_TIMEOUT_MS) == 200)
        log_info("bridge: released the lease %s", e->path);
}

static void sleep_ms(struct bridge *b, int64_t ms)
{
    for (int64_t slept = 0; slept < ms && !atomic_load(&b->stop); slept += 50)
        usleep(50 * 1000);
}

void *bridge_leader_main(void *arg)
{
    struct bridge *b = arg;
    struct elector e = {.b = b};
    struct kc_error err = {{0}};
    if (kube_client_new(&b->kube, b->user_agent, &e.client, &err) < 0) {
        log_error("bridge: leader election cannot start: %s", err.message);
        return NULL;
    }
    kube_client_set_limits(e.client, &b->opt.limits);
    /* a renewal in flight at the stop ends within the grace; the release is sent after it */
    kube_client_set_stop(e.client, &b->stop, BRIDGE_STOP_GRACE_MS);
    snprintf(e.collection, sizeof(e.collection),
             "/apis/coordination.k8s.io/v1/namespaces/%s/leases", b->opt.lease_namespace);
    snprintf(e.path, sizeof(e.path), "%s/%s", e.collection, b->opt.lease_name);
    unsigned seed = (unsigned)bridge_monotonic_ms();
    while (!atomic_load(&b->stop)) {
        if (try_acquire_or_renew(&e)) {
            atomic_store(&b->leader_until_ms, e.renewed_ms + b->opt.renew_deadline_ms);
            set_leader(&e, true, b->opt.identity);
        } else if (atomic_load(&b->leader) &&
                   bridge_monotonic_ms() >= e.renewed_ms + b->opt.renew_deadline_ms) {
            /* could not renew in time: stop binding now, before anyone else may take over */
            set_leader(&e, false, "");
        }
        /* followers retry with up to 20 % jitter so replicas do not move in step */
        int64_t wait = b->opt.retry_period_ms;
        if (!atomic_load(&b->leader))
            wait += (int64_t)(rand_r(&seed) % (unsigned)(wait / 5 + 1));
        /* a leader never sleeps past its own deadline */
        if (atomic_load(&b->leader)) {
            int64_t left = atomic_load(&b->leader_until_ms) - bridge_monotonic_ms();
            if (left < wait)
                wait = left > 0 ? left : 0;
        }
        sleep_ms(b, wait);
    }
    if (atomic_load(&b->leader)) {
        atomic_store(&b->leader, false);
        /* no binding of ours may start after the release: the writers end first (each within
         * the grace of the stop; bridge_close joins them before it joins this thread). One
         * cut off at the end of its grace may still be applied by the API server. */
        while (!atomic_load(&b->writers_joined))
            usleep(10 * 1000);
        kube_client_set_stop(e.client, NULL, 0);
        release(&e);
    }
    kube_client_free(e.client);
    return NULL;
}
