/* The scheduling queue (kube-scheduler's PriorityQueue without nominated pods). */
#include "queue.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "crash.h"
#include "framework.h"
#include "model.h"

void queue_init(struct queue *q, const struct plugin *sort, int64_t initial_backoff_ms,
                int64_t max_backoff_ms, int64_t flush_ms)
{
    memset(q, 0, sizeof(*q));
    q->sort = sort;
    q->initial_backoff_ms = initial_backoff_ms;
    q->max_backoff_ms = max_backoff_ms;
    q->flush_ms = flush_ms;
}

void queue_fini(struct queue *q)
{
    free(q->active.items);
    free(q->backoff.items);
    free(q->unschedulable.items);
    free(q->gated.items);
    memset(q, 0, sizeof(*q));
}

int64_t queue_backoff_ms(const struct queue *q, uint32_t backoff_attempts)
{
    int64_t d = q->initial_backoff_ms;
    for (uint32_t i = 1; i < backoff_attempts && d < q->max_backoff_ms; i++)
        d *= 2;
    return d < q->max_backoff_ms ? d : q->max_backoff_ms;
}

/* ---- heaps ---- */

typedef bool (*before_fn)(const struct queue *q, const struct sched_pod *a,
                          const struct sched_pod *b);

static bool active_before(const struct queue *q, const struct sched_pod *a,
                          const struct sched_pod *b)
{
    if (q->sort != NULL) {
        crash_enter(q->sort->name, "QueueSort");
        bool less = q->sort->ops.queue_less(q->sort->self, (const kc_pod *)a->pod,
                                            (const kc_pod *)b->pod) != 0;
        crash_leave();
        return less;
    }
    if (a->pod->enqueue_ms != b->pod->enqueue_ms)
        return a->pod->enqueue_ms < b->pod->enqueue_ms;
    return strcmp(a->pod->uid, b->pod->uid) < 0;
}

static bool backoff_before(const struct queue *q, const struct sched_pod *a,
                           const struct sched_pod *b)
{
    (void)q;
    if (a->backoff_until_ms != b->backoff_until_ms)
        return a->backoff_until_ms < b->backoff_until_ms;
    return strcmp(a->pod->uid, b->pod->uid) < 0;
}

static void heap_set(struct sched_pod_heap *h, uint32_t i, struct sched_pod *sp)
{
    h->items[i] = sp;
    sp->heap_index = i;
}

static void heap_up(const struct queue *q, struct sched_pod_heap *h, uint32_t i, before_fn before)
{
    struct sched_pod *sp = h->items[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(q, sp, h->items[parent]))
            break;
        heap_set(h, i, h->items[parent]);
        i = parent;
    }
    heap_set(h, i, sp);
}

static void heap_down(const struct queue *q, struct sched_pod_heap *h, uint32_t i, before_fn before)
{
    struct sched_pod *sp = h->items[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= h->count)
            break;
        if (child + 1 < h->count && before(q, h->items[child + 1], h->items[child]))
            child++;
        if (!before(q, h->items[child], sp))
            break;
        heap_set(h, i, h->items[child]);
        i = child;
    }
    heap_set(h, i, sp);
}

static int heap_push(const struct queue *q, struct sched_pod_heap *h, struct sched_pod *sp,
                     before_fn before)
{
    struct sched_pod **items = array_grow(h->items, &h->capacity, h->count + 1, sizeof(*items));
    if (items == NULL)
        return -ENOMEM;
    h->items = items;
    heap_set(h, h->count++, sp);
    heap_up(q, h, h->count - 1, before);
    return 0;
}

static void heap_remove_at(const struct queue *q, struct sched_pod_heap *h, uint32_t i,
                           before_fn before)
{
    h->count--;
    if (i == h->count)
        return;
    struct sched_pod *moved = h->items[h->count];
    heap_set(h, i, moved);
    heap_down(q, h, i, before);
    heap_up(q, h, moved->heap_index, before);
}

/* ---- lists ---- */

static int list_push(struct sched_pod_list *l, struct sched_pod *sp)
{
    struct sched_pod **items = array_grow(l->items, &l->capacity, l->count + 1, sizeof(*items));
    if (items == NULL)
        return -ENOMEM;
    l->items = items;
    sp->list_index = l->count;
    l->items[l->count++] = sp;
    return 0;
}

static void list_remove(struct sched_pod_list *l, struct sched_pod *sp)
{
    uint32_t i = sp->list_index;
    l->items[i] = l->items[--l->count];
    l->items[i]->list_index = i;
}

static int reserve_items(struct sched_pod ***items, uint32_t *capacity, uint32_t n)
{
    struct sched_pod **grown = array_grow(*items, capacity, n, sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    *items = grown;
    return 0;
}

int queue_reserve(struct queue *q, uint32_t pods)
{
    if (reserve_items(&q->active.items, &q->active.capacity, pods) < 0 ||
        reserve_items(&q->backoff.items, &q->backoff.capacity, pods) < 0 ||
        reserve_items(&q->unschedulable.items, &q->unschedulable.capacity, pods) < 0 ||
        reserve_items(&q->gated.items, &q->gated.capacity, pods) < 0)
        return -ENOMEM;
    return 0;
}

/* ---- queue operations ---- */

int queue_push_active(struct queue *q, struct sched_pod *sp)
{
    int rc = heap_push(q, &q->active, sp, active_before);
    if (rc == 0)
        sp->state = SP_ACTIVE;
    return rc;
}

static void set_backoff_expiry(const struct queue *q, struct sched_pod *sp, int64_t until_ms)
{
    uint32_t n = sp->backoff_attempts == 0 ? 1 : sp->backoff_attempts;
    sp->backoff_until_ms = sp->last_attempt_ms + queue_backoff_ms(q, n);
    if (until_ms > sp->backoff_until_ms)
        sp->backoff_until_ms = until_ms;
}

int queue_push_backoff_until(struct queue *q, struct sched_pod *sp, int64_t until_ms)
{
    set_backoff_expiry(q, sp, until_ms);
    int rc = heap_push(q, &q->backoff, sp, backoff_before);
    if (rc == 0)
        sp->state = SP_BACKOFF;
    return rc;
}

int queue_push_backoff(struct queue *q, struct sched_pod *sp, int64_t now_ms)
{
    (void)now_ms;
    return queue_push_backoff_until(q, sp, 0);
}

int queue_park(struct queue *q, struct sched_pod *sp, int64_t now_ms)
{
    return queue_park_until(q, sp, now_ms, 0);
}

int queue_park_until(struct queue *q, struct sched_pod *sp, int64_t now_ms, int64_t until_ms)
{
    set_backoff_expiry(q, sp, until_ms);
    sp->parked_ms = now_ms;
    if (q->unschedulable.count == 0 || now_ms < q->earliest_parked_ms)
        q->earliest_parked_ms = now_ms;
    int rc = list_push(&q->unschedulable, sp);
    if (rc == 0)
        sp->state = SP_UNSCHEDULABLE;
    return rc;
}

int queue_push_gated(struct queue *q, struct sched_pod *sp)
{
    int rc = list_push(&q->gated, sp);
    if (rc == 0)
        sp->state = SP_GATED;
    return rc;
}

int queue_push_anywhere(struct queue *q, struct sched_pod *sp, int64_t now_ms)
{
    if (queue_push_backoff_until(q, sp, 0) == 0 || queue_push_active(q, sp) == 0 ||
        queue_park(q, sp, now_ms) == 0)
        return 0;
    return queue_push_gated(q, sp);
}

bool queue_before(const struct queue *q, const struct sched_pod *a, const struct sched_pod *b)
{
    return active_before(q, a, b);
}

struct sched_pod *queue_pop(struct queue *q)
{
    if (q->active.count == 0)
        return NULL;
    struct sched_pod *sp = q->active.items[0];
    heap_remove_at(q, &q->active, 0, active_before);
    sp->state = SP_NONE;
    return sp;
}

void queue_set_sort(struct queue *q, const struct plugin *sort)
{
    q->sort = sort;
    /* the order changed: heapify activeQ again, bottom up */
    for (uint32_t i = q->active.count / 2; i-- > 0;)
        heap_down(q, &q->active, i, active_before);
}

void queue_remove(struct queue *q, struct sched_pod *sp)
{
    switch (sp->state) {
    case SP_ACTIVE: heap_remove_at(q, &q->active, sp->heap_index, active_before); break;
    case SP_BACKOFF: heap_remove_at(q, &q->backoff, sp->heap_index, backoff_before); break;
    case SP_UNSCHEDULABLE: list_remove(&q->unschedulable, sp); break;
    case SP_GATED: list_remove(&q->gated, sp); break;
    default: return;
    }
    sp->state = SP_NONE;
}

/* Out of the unschedulable list: still backing off -> backoffQ, else activeQ. */
static void requeue(struct queue *q, struct sched_pod *sp, int64_t now_ms)
{
    list_remove(&q->unschedulable, sp);
    sp->state = SP_NONE;
    if (sp->backoff_until_ms > now_ms) {
        if (heap_push(q, &q->backoff, sp, backoff_before) == 0) {
            sp->state = SP_BACKOFF;
            return;
        }
    }
    /* on allocation failure the pod goes active: never lost */
    queue_push_active(q, sp);
}

void queue_flush(struct queue *q, int64_t now_ms)
{
    while (q->backoff.count > 0 && q->backoff.items[0]->backoff_until_ms <= now_ms) {
        struct sched_pod *sp = q->backoff.items[0];
        heap_remove_at(q, &q->backoff, 0, backoff_before);
        queue_push_active(q, sp);
    }
    /* scan the parked pods only when the oldest of them may be due */
    if (q->unschedulable.count == 0 || now_ms - q->earliest_parked_ms < q->flush_ms)
        return;
    int64_t earliest = INT64_MAX;
    for (uint32_t i = 0; i < q->unschedulable.count;) {
        struct sched_pod *sp = q->unschedulable.items[i];
        if (now_ms - sp->parked_ms >= q->flush_ms) {
            requeue(q, sp, now_ms); /* swaps the last item into i */
            continue;
        }
        if (sp->parked_ms < earliest)
            earliest = sp->parked_ms;
        i++;
    }
    q->earliest_parked_ms = earliest;
}

uint32_t queue_on_event(struct queue *q, uint64_t interested, int64_t now_ms)
{
    uint32_t moved = 0;
    for (uint32_t i = 0; i < q->unschedulable.count;) {
        struct sched_pod *sp = q->unschedulable.items[i];
        /* no known rejector (e.g. no nodes at all): any event may help */
        if (sp->rejectors == 0 || (sp->rejectors & interested) != 0) {
            requeue(q, sp, now_ms); /* swaps the last item into i */
            moved++;
        } else {
            i++;
        }
    }
    return moved;
}

int64_t queue_next_due(const struct queue *q)
{
    int64_t due = INT64_MAX;
    if (q->backoff.count > 0)
        due = q->backoff.items[0]->backoff_until_ms;
    if (q->unschedulable.count > 0 && q->earliest_parked_ms + q->flush_ms < due)
        due = q->earliest_parked_ms + q->flush_ms;
    return due;
}

uint32_t queue_pending(const struct queue *q)
{
    return q->active.count + q->backoff.count;
}
