/* The monotonic clock in the units the runtime counts in (durations, timers, metrics): one
 * definition for every module, inline because the scheduler reads it on its hot path. */
#ifndef KC_CORE_MONOTONIC_H
#define KC_CORE_MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t monotonic_us(void)
{
    return monotonic_ns() / 1000;
}

#endif
