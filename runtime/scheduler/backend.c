/* The two plugin backends' ops (in process: the .so called directly; process: forwarded to the
 * cycle's plugin hosts) and the one loop that runs a later phase over them (backend.h). */
#include "backend.h"

#include <string.h>

#include "crash.h"
#include "cycle_internal.h"
#include "evaluate.h"
#include "remote.h"

static kc_status inprocess_post_filter(struct kc_cycle *cycle)
{
    for (uint32_t i = 0; i < cycle->fw->phase_count[PHASE_POST_FILTER]; i++) {
        struct plugin *p = cycle->fw->phase[PHASE_POST_FILTER][i];
        crash_enter(p->name, "PostFilter");
        kc_status st = p->ops.post_filter(p->self, cycle, (const kc_pod *)cycle->sp->pod);
        crash_leave();
        if (st == KC_SUCCESS)
            return KC_SUCCESS;
    }
    return KC_UNSCHEDULABLE;
}

static kc_status inprocess_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                                 const struct cache_node *node, struct phase_result *out)
{
    if (phase == PHASE_POST_FILTER)
        return inprocess_post_filter(cycle);
    if (node == NULL && phase == PHASE_POST_BIND) /* bound to a node deleted meanwhile */
        return KC_SUCCESS;
    bool permit = phase == PHASE_PERMIT;
    return scheduler_phase(s, cycle, phase, node, &out->failed, permit ? &out->timeout_ms : NULL,
                           permit ? &out->waiting : NULL);
}

static kc_status process_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                               const struct cache_node *node, struct phase_result *out)
{
    (void)node;
    if (cycle->fw->host_count == 0)
        return phase == PHASE_BIND ? KC_SKIP
               : phase == PHASE_POST_FILTER ? KC_UNSCHEDULABLE
                                            : KC_SUCCESS;
    if (phase == PHASE_POST_BIND && cycle->remote_post_bind_done)
        return KC_SUCCESS; /* the hosts ran it in a batched binding cycle */
    bool permit = phase == PHASE_PERMIT;
    const char *name = phase == PHASE_POST_FILTER ? "" : cycle->node_name;
    kc_status st = remote_phase(s, cycle, phase, name, &out->failed,
                                permit ? &out->timeout_ms : NULL, permit ? &out->waiting : NULL,
                                phase == PHASE_BIND ? &out->bind_requested : NULL);
    /* remote_phase's PostFilter does not report a success; nothing is carried out from one */
    return phase == PHASE_POST_FILTER ? KC_UNSCHEDULABLE : st;
}

const struct plugin_backend_ops backend_inprocess = {"inprocess", inprocess_phase};
const struct plugin_backend_ops backend_process = {"process", process_phase};

static const struct plugin_backend_ops *const backends[] = {&backend_inprocess, &backend_process};
#define BACKEND_COUNT (sizeof(backends) / sizeof(backends[0]))

kc_status cycle_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                      const struct cache_node *node, unsigned which, struct phase_result *out)
{
    memset(out, 0, sizeof(*out));
    out->timeout_ms = PERMIT_MAX_TIMEOUT_MS;
    bool reverse = phase == PHASE_UNRESERVE;
    kc_status result = phase == PHASE_BIND ? KC_SKIP
                       : phase == PHASE_POST_FILTER ? KC_UNSCHEDULABLE
                                                    : KC_SUCCESS;
    for (uint32_t k = 0; k < BACKEND_COUNT; k++) {
        uint32_t b = reverse ? (uint32_t)BACKEND_COUNT - 1 - k : k;
        if (!(which & (1u << b)))
            continue;
        struct phase_result part = {.timeout_ms = PERMIT_MAX_TIMEOUT_MS};
        kc_status st = backends[b]->phase(s, cycle, phase, node, &part);
        switch (phase) {
        case PHASE_UNRESERVE:
        case PHASE_POST_BIND: break;
        case PHASE_POST_FILTER:
            if (st == KC_SUCCESS)
                return KC_SUCCESS;
            break;
        case PHASE_BIND:
            if (st == KC_SKIP)
                break;
            *out = part;
            return st;
        case PHASE_PERMIT:
            if (st == KC_WAIT) {
                if (out->waiting == 0 || part.timeout_ms < out->timeout_ms) {
                    out->timeout_ms = part.timeout_ms;
                    out->failed = part.failed;
                }
                out->waiting |= part.waiting;
                result = KC_WAIT;
                break;
            }
            if (st != KC_SUCCESS) {
                out->failed = part.failed;
                return st;
            }
            break;
        default:
            if (st != KC_SUCCESS) {
                out->failed = part.failed;
                return st;
            }
        }
    }
    return result;
}
