/* Interned resource names: look a name up once at init, use the integer id in the hot path. */
#ifndef KCYCLE_RESOURCE_H
#define KCYCLE_RESOURCE_H

#include <stdint.h>

/* A resource id: an index into the host's table of resource names, or -1 for none. */
typedef int32_t kc_resource;

/* Ids fixed by the ABI. Quantities are int64 in the resource's base unit: CPU in milli-cores,
 * memory and ephemeral-storage in bytes, pods and extended resources (nvidia.com/gpu) in
 * units. */
#define KC_RESOURCE_CPU ((kc_resource)0)
#define KC_RESOURCE_MEMORY ((kc_resource)1)
#define KC_RESOURCE_PODS ((kc_resource)2)
#define KC_RESOURCE_EPHEMERAL_STORAGE ((kc_resource)3)

/* The most distinct resource names one host interns. */
#define KC_RESOURCE_MAX 64

#endif
