/* Placing the evaluating plugin host beside the cycle thread (remote_placement.c); remote.c's
 * own: the public part is in remote.h (remote_colocation_release,
 * remote_placement_spread_wins). */
#ifndef KCYCLE_REMOTE_PLACEMENT_H
#define KCYCLE_REMOTE_PLACEMENT_H

#include <stdbool.h>

#include "remote.h"

/* How long the cycle thread and a spread host poll for each other's message (microseconds). */
#define REMOTE_SPREAD_SPIN_US 1000

/* Placement is on: decided once (the environment, the usable cores). */
bool remote_placement_enabled(struct remote_colocation *c);

/* Before the cycle thread sends h an evaluation: true when the two share a CPU now
 * (c->spreading: they are spread, both polling). */
bool remote_placement_colocate(struct scheduler *s, struct remote_host *h);

/* The cycle thread and the host pinned beside it get their masks back (nothing when none is
 * pinned): before a host is started, and on close. */
void remote_placement_unpin(struct remote *r);

/* The host of a round to place: the one pinned now when it is asked too, else the first one
 * asked. */
struct remote_host *remote_placement_choice(const struct scheduler *s, const struct framework *fw,
                                            uint32_t phases, const bool *ask);

#endif
