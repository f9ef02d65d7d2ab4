/* A small pool of threads for Filter and Score: the caller and the workers run one function
 * together, then the caller continues. Workers spin briefly between jobs (a scheduling cycle
 * is tens of microseconds) and sleep when idle. */
#ifndef KC_SCHED_WORKERS_H
#define KC_SCHED_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef void (*workers_fn)(void *ctx, uint32_t worker);

struct workers {
    pthread_t *threads;
    uint32_t count; /* threads besides the caller; 0 = run on the caller only */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    _Atomic uint64_t job;     /* bumped for each job */
    _Atomic uint32_t running; /* workers still inside the current job */
    _Atomic bool stop;
    workers_fn fn;
    void *ctx;
};

/* Start total-1 threads (total 0 = the number of online cores). 0 or -errno. */
int workers_start(struct workers *w, uint32_t total);
/* Run fn(ctx, id) on the caller (id 0) and every worker (ids 1..count); returns when all did. */
void workers_run(struct workers *w, workers_fn fn, void *ctx);
void workers_stop(struct workers *w);

#endif
