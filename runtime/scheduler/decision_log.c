/* The decision log (see decision_log.h). */
#include "decision_log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "evaluate.h"
#include "log.h"
#include "monotonic.h"
#include "scheduler.h"

#define TOP_NODES 3

bool decision_log_enabled(void)
{
    return log_level() >= KC_LOG_INFO;
}

/* the scored plugins are bits of a uint64_t (plugin index = bit) */
_Static_assert(FRAMEWORK_MAX_PLUGINS <= 64, "plugin indexes must fit a 64-bit mask");

void decision_log_attempt(const struct kc_cycle *cycle, const struct placement *p,
                          int64_t started_us)
{
    if (!decision_log_enabled())
        return;
    const struct pod *pod = cycle->sp->pod;
    char who[512];
    snprintf(who, sizeof(who), "%s/%s", pod->namespace, pod->name);
    const char *result = p->placed  ? (p->permit == KC_WAIT ? "waiting" : "scheduled")
                         : p->error ? "error"
                                    : "unschedulable";
    const char *reason = p->placed ? NULL : p->message != NULL ? p->message : "no reason given";
    struct log_field fields[] = {
        {.key = "pod", .text = who},
        {.key = "result", .text = result},
        {.key = "node", .text = p->placed ? cycle->node_name : NULL},
        {.key = "reason", .text = reason},
        {.key = "attempt", .number = cycle->sp->attempts, .is_number = true},
        {.key = "duration_ms",
         .number = (double)(monotonic_us() - started_us) / 1000.0,
         .is_number = true},
        {.key = "generation", .number = (double)cycle->fw->generation, .is_number = true},
    };
    /* the same pod failing the same way again is one decision repeated: rate-limited, with
     * the count kept on the pod (bounded by the pods, never shared between two of them) */
    char key[1024];
    snprintf(key, sizeof(key), "%s %s", result, reason != NULL ? reason : "");
    log_fields(KC_LOG_INFO, "attempt", fields, sizeof(fields) / sizeof(fields[0]),
               p->placed ? NULL : &cycle->sp->log_rate, key);
}

void decision_log_scores(struct scheduler *s, const struct kc_cycle *cycle, uint32_t found,
                         uint64_t scored)
{
    if (log_level() < KC_LOG_DEBUG || found == 0)
        return;
    const struct framework *fw = cycle->fw;
    const struct pod *pod = cycle->sp->pod;
    char who[512];
    snprintf(who, sizeof(who), "%s/%s", pod->namespace, pod->name);
    /* the best TOP_NODES by total, without sorting the whole feasible list */
    uint32_t top[TOP_NODES], count = 0;
    for (uint32_t i = 0; i < found; i++) {
        uint32_t at;
        if (count < TOP_NODES)
            at = count++;
        else if (s->totals[i] > s->totals[top[TOP_NODES - 1]])
            at = TOP_NODES - 1;
        else
            continue;
        for (; at > 0 && s->totals[i] > s->totals[top[at - 1]]; at--)
            top[at] = top[at - 1];
        top[at] = i;
    }
    for (uint32_t r = 0; r < count; r++) {
        uint32_t i = top[r];
        char scores[1024] = "";
        size_t used = 0;
        for (uint32_t k = 0; k < fw->phase_count[PHASE_SCORE] && used < sizeof(scores); k++) {
            const struct plugin *p = fw->phase[PHASE_SCORE][k];
            if (!(scored & (1ull << p->index)))
                continue;
            int n = snprintf(scores + used, sizeof(scores) - used, "%s%s=%lld", used ? "," : "",
                             p->name, (long long)evaluation_score(s, k, i));
            if (n > 0)
                used += (size_t)n;
        }
        struct log_field fields[] = {
            {.key = "pod", .text = who},
            {.key = "rank", .number = r + 1, .is_number = true},
            {.key = "node", .text = s->feasible[i]->node->name},
            {.key = "total", .number = (double)s->totals[i], .is_number = true},
            {.key = "scores", .text = scores},
        };
        log_fields(KC_LOG_DEBUG, "scores", fields, sizeof(fields) / sizeof(fields[0]), NULL, NULL);
    }
}
