/* The state a plugin stored for the current attempt, found by Filter and Score without a lookup
 * by key on every node. kc_cycle_get compares key strings; Filter and Score run on hundreds of
 * nodes per attempt, so a plugin whose PreFilter (or PreScore) stored a state remembers it with
 * the cycle it belongs to. Those phases run on one thread before Filter and Score start, and the
 * state's free function forgets it, so a remembered state is never read after it is freed; a
 * cycle that does not match (another member of a group cycle, a state stored by another plugin
 * instance) falls back to kc_cycle_get. Header only: the plugins include it, nothing links. */
#ifndef KC_PLUGINS_ATTEMPT_MEMO_H
#define KC_PLUGINS_ATTEMPT_MEMO_H

#include <stddef.h>

#include <kcycle/kcycle.h>

struct attempt_memo {
    const kc_cycle *cycle;
    const void *state;
};

/* After kc_cycle_set(cycle, key, state, ...) succeeded, from PreFilter or PreScore. */
static inline void attempt_memo_set(struct attempt_memo *memo, const kc_cycle *cycle,
                                    const void *state)
{
    memo->cycle = cycle;
    memo->state = state;
}

/* From the state's free function, before the state is freed. */
static inline void attempt_memo_forget(struct attempt_memo *memo, const void *state)
{
    if (memo != NULL && memo->state == state) {
        memo->cycle = NULL;
        memo->state = NULL;
    }
}

/* The cycle's state under key: the remembered one when it is this cycle's. */
static inline void *attempt_memo_get(const struct attempt_memo *memo, kc_cycle *cycle,
                                     const char *key)
{
    if (memo->state != NULL && memo->cycle == cycle)
        return (void *)memo->state;
    return kc_cycle_get(cycle, key);
}

#endif
