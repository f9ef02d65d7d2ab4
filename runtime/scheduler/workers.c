/* Worker pool for the parallel parts of the cycle. */
#include "workers.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long an idle worker polls for the next job before it sleeps. */
#define SPIN_ROUNDS 20000

struct worker_arg {
    struct workers *pool;
    uint32_t id;
};

static void *worker_main(void *arg)
{
    struct workers *w = ((struct worker_arg *)arg)->pool;
    uint32_t id = ((struct worker_arg *)arg)->id;
    free(arg);
    uint64_t seen = 0;
    for (;;) {
        uint64_t job;
        int spins = 0;
        while ((job = atomic_load_explicit(&w->job, memory_order_acquire)) == seen &&
               !atomic_load(&w->stop) && spins++ < SPIN_ROUNDS)
            ;
        if (job == seen && !atomic_load(&w->stop)) {
            pthread_mutex_lock(&w->lock);
            while ((job = atomic_load(&w->job)) == seen && !atomic_load(&w->stop))
                pthread_cond_wait(&w->wake, &w->lock);
            pthread_mutex_unlock(&w->lock);
        }
        if (atomic_load(&w->stop))
            return NULL;
        seen = job;
        w->fn(w->ctx, id);
        atomic_fetch_sub_explicit(&w->running, 1, memory_order_release);
    }
}

int workers_start(struct workers *w, uint32_t total)
{
    memset(w, 0, sizeof(*w));
    if (total == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        total = cores > 0 ? (uint32_t)cores : 1;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (total <= 1)
        return 0;
    w->threads = calloc(total - 1, sizeof(*w->threads));
    if (w->threads == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < total - 1; i++) {
        struct worker_arg *arg = malloc(sizeof(*arg));
        if (arg == NULL)
            return -ENOMEM;
        arg->pool = w;
        arg->id = i + 1;
        int rc = pthread_create(&w->threads[i], NULL, worker_main, arg);
        if (rc != 0) {
            free(arg);
            return -rc;
        }
        w->count++;
    }
    return 0;
}

void workers_run(struct workers *w, workers_fn fn, void *ctx)
{
    if (w->count == 0) {
        fn(ctx, 0);
        return;
    }
    w->fn = fn;
    w->ctx = ctx;
    atomic_store_explicit(&w->running, w->count, memory_order_relaxed);
    pthread_mutex_lock(&w->lock);
    atomic_fetch_add_explicit(&w->job, 1, memory_order_release);
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    fn(ctx, 0);
    while (atomic_load_explicit(&w->running, memory_order_acquire) != 0)
        sched_yield();
}

void workers_stop(struct workers *w)
{
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->stop, true);
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    for (uint32_t i = 0; i < w->count; i++)
        pthread_join(w->threads[i], NULL);
    free(w->threads);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    memset(w, 0, sizeof(*w));
}
