/* Nominated pods (kube-scheduler's nominator): a pending pod that preempted victims is
 * nominated on their node, and until it is placed it counts there for pods of lower or equal
 * priority, so the room its victims free is not taken by others. */
#ifndef KC_SCHED_NOMINATE_H
#define KC_SCHED_NOMINATE_H

#include <stdint.h>

#include "strmap.h"

/* The pods nominated on one node: uids (owned) and what the caller keeps with each (its
 * pending-pod record), so that the hot path looks nothing up. */
struct nominated_node {
    char *node;
    char **uids;
    void **refs;
    uint32_t count, capacity;
};

struct nominations {
    struct strmap by_uid;  /* uid -> char *node name (owned; the key borrows nothing else) */
    struct strmap by_node; /* node name -> struct nominated_node */
    uint32_t count;
};

/* Nominate uid on node (replacing an earlier nomination), keeping ref with it; node NULL or ""
 * removes it. 0 or -ENOMEM. */
int nominations_set(struct nominations *n, const char *uid, const char *node, void *ref);
void nominations_remove(struct nominations *n, const char *uid);
/* The node uid is nominated on, or NULL. Owned by n, valid until the next change. */
const char *nominations_node(const struct nominations *n, const char *uid);
/* The pods nominated on node, or NULL. Valid until the next change. */
const struct nominated_node *nominations_on(const struct nominations *n, const char *node);
void nominations_free(struct nominations *n);

#endif
