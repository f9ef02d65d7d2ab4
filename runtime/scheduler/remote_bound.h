/* The pods plugin hosts hold assumed, as the wire carried them, so that a binding which brings
 * back exactly the assumed object can reach the hosts as a PodBound delta (uid and node)
 * instead of the whole pod again (proto/kcycle/v1/plugin.proto, Delta.pod_bound). */
#ifndef KC_SCHED_REMOTE_BOUND_H
#define KC_SCHED_REMOTE_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strmap.h"

struct Kcycle__V1__Pod;

/* Per assumed pod (by uid): the node and the packed Pod its Assume delta carried. Entries live
 * from the Assume until the pod is bound, forgotten, deleted or replaced, so there are at most
 * as many as pods in flight. */
struct remote_bound {
    struct strmap assumed;
    uint8_t *scratch; /* the assigned pod's encoding, compared with the kept one */
    size_t scratch_capacity;
    uint64_t sent; /* PodBound deltas journaled, for tests and benchmarks */
};

/* Keep the pod bytes of the Assume delta just packed (delta, len: a packed kcycle.v1.Delta whose
 * change is an Assume) for uid on node. A delta whose pod cannot be found in it, or no memory,
 * keeps nothing: that pod's binding then goes as a pod_put. */
void remote_bound_note_assume(struct remote_bound *b, const char *uid, const char *node,
                              const uint8_t *delta, size_t len);

/* Whatever happens to uid other than its binding (forget, delete, an update, a trial): its
 * hosts' copy may no longer be the kept one, so nothing is kept for it any more. */
void remote_bound_drop(struct remote_bound *b, const char *uid);

/* Nothing kept: a host was (re)synced from a snapshot, which assumes in-flight pods from
 * encodings of its own. */
void remote_bound_clear(struct remote_bound *b);

/* Whether msg (the assigned pod, as pod_to_proto encoded it) is the kept assumption of its uid
 * on its node with spec.nodeName set, compared on the wire: the encoding of msg with nodeName
 * cleared must equal the kept bytes. msg is left as it came. The kept entry goes either way:
 * the pod is assigned now. */
bool remote_bound_take(struct remote_bound *b, struct Kcycle__V1__Pod *msg);

void remote_bound_free(struct remote_bound *b);

#endif
