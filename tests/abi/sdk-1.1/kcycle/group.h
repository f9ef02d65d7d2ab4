/* Pod groups (gangs): what a plugin declares about a pod's group, and where a cycle stands in
 * the runtime's group cycle. Added in ABI 1.1 (docs/ABI.md). */
#ifndef KCYCLE_GROUP_H
#define KCYCLE_GROUP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* kc_group_info.flags: place the group's quorum in one group cycle (all members reserved on a
 * transactional view of the cluster, committed together or rolled back together). Without it
 * the members are scheduled one by one and a Permit plugin holds them until the group is
 * complete (the permit path). */
#define KC_GROUP_CYCLE 0x1u

/* What a plugin's group_of op says about a pod's group. The host zeroes the struct and sets
 * struct_size; the plugin writes only the members that size covers. Strings must live as long
 * as the pod handle in the current call (the host copies them). */
typedef struct kc_group_info {
    uint32_t struct_size;
    uint32_t flags;                /* KC_GROUP_CYCLE */
    const char *namespace_name;    /* the group's namespace (the members'); NULL: "" */
    const char *name;              /* the group's name, unique in its namespace */
    uint32_t min_member;           /* quorum: members that must be placed together (0 = 1) */
    uint32_t reserved0;            /* padding, zero */
    int64_t schedule_timeout_ms;   /* how long the group may wait for its quorum; 0: no limit */
    int64_t backoff_ms;            /* after a failed group attempt, at least this; 0: queue's */
    int64_t creation_ms;           /* the group's creation time (unix ms), 0 when unknown */
} kc_group_info;

/* Where a cycle stands in a group cycle, filled by kc_cycle_group(). The caller sets
 * struct_size; the host writes only what it covers. Strings live as long as the cycle. */
typedef struct kc_group_cycle {
    uint32_t struct_size;
    uint32_t index;             /* this member's position among the members tried, from 0 */
    uint32_t count;             /* members the group cycle tries to place */
    uint32_t needed;            /* how many of them must be placed for the group to be admitted */
    const char *namespace_name; /* the group, as group_of declared it */
    const char *name;
} kc_group_cycle;

#ifdef __cplusplus
}
#endif

#endif
