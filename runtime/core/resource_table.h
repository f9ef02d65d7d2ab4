/* The process-wide table of interned resource names (SDK resource.h ids). */
#ifndef KC_CORE_RESOURCE_TABLE_H
#define KC_CORE_RESOURCE_TABLE_H

#include <stdint.h>

#include <kcycle/resource.h>

/* Id of name, interning it on first use. Returns -1 when KC_RESOURCE_MAX names are taken.
 * cpu, memory, pods and ephemeral-storage are always 0..3. Thread-safe. */
kc_resource resource_intern(const char *name);
/* Id of name without interning, or -1. */
kc_resource resource_lookup(const char *name);
/* Name of id, or NULL. Static storage for the life of the process. */
const char *resource_name(kc_resource id);
/* Number of interned names; ids are 0 .. count-1. */
uint32_t resource_count(void);

#endif
