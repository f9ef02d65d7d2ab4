/* Kubernetes resource quantities (apimachinery's resource.Quantity grammar and rounding). */
#ifndef KC_CORE_QUANTITY_H
#define KC_CORE_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Parse the quantity text[0..len) and return its value scaled to 10^scale units, rounded up
 * (away from zero for negatives, as apimachinery's ScaledValue): scale 0 gives units (memory
 * bytes, pods, nvidia.com/gpu), scale -3 gives milli-units (CPU).
 * Returns 0, -EINVAL when the text is not a quantity apimachinery accepts, or -ERANGE when
 * the magnitude exceeds INT64_MAX at that scale (either sign). apimachinery itself accepts such
 * values (big decimals; binary suffixes silently clamped to 2^63-1, so "8Ei" reads as 2^63-1)
 * and its int64 accessors overflow silently; we report overflow as a distinct error instead.
 * The text is not trimmed: " 1" is -EINVAL, as in ParseQuantity. Allocation-free. */
int quantity_parse(const char *text, size_t len, int scale, int64_t *out);

/* The scale at which the scheduler accounts a resource: -3 for cpu, 0 for everything else. */
int quantity_scale_for(const char *resource_name);

#endif
