/* Plugin backends: where a plugin runs (in this process, or in a plugin host) behind one ops
 * table, so the cycle runs each phase after the node is chosen once, through cycle_phase,
 * instead of calling both at every step (docs/architecture.md). The evaluation (PreFilter to
 * NormalizeScore) merges backends node by node in scheduler.c and remote.c. */
#ifndef KC_SCHED_BACKEND_H
#define KC_SCHED_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler.h"

/* What one phase on the backends came to, beside its status. */
struct phase_result {
    uint32_t failed;     /* the plugin (framework index) that did not succeed, or whose Permit
                            wait is the shortest */
    uint32_t timeout_ms; /* Permit: the shortest wait asked for */
    uint64_t waiting;    /* Permit: the plugins that said Wait */
    bool bind_requested; /* Bind: a hosted Bind plugin asked the scheduler's binder to bind */
};

struct plugin_backend_ops {
    const char *name;
    /* One of PostFilter, Reserve, Unreserve, Permit, PreBind, Bind, PostBind on the cycle's
     * plugins of this backend, in the configured order (Unreserve in reverse), for node (NULL
     * for PostFilter). Statuses as scheduler_phase; PostFilter: KC_SUCCESS when one
     * succeeded (kube runs them until one does). */
    kc_status (*phase)(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                       const struct cache_node *node, struct phase_result *out);
};

extern const struct plugin_backend_ops backend_inprocess;
extern const struct plugin_backend_ops backend_process;

/* Which backends a phase runs on. */
enum {
    BACKENDS_INPROCESS = 1u << 0,
    BACKENDS_PROCESS = 1u << 1,
    BACKENDS_ALL = BACKENDS_INPROCESS | BACKENDS_PROCESS,
};

/* phase on the backends of cycle's generation that `which` names, in order (Unreserve in the
 * reverse order), merged: Reserve, PreBind stop at the first failure; Permit gathers waits (the
 * shortest timeout) and stops at a rejection; Bind stops at the first backend that binds
 * (KC_SKIP: none did); PostFilter stops at the first success; Unreserve and PostBind run on
 * every backend and return KC_SUCCESS. *out is always set. */
kc_status cycle_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                      const struct cache_node *node, unsigned which, struct phase_result *out);

#endif
