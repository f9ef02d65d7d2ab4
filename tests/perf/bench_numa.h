/* kcycle-bench --shape numa (bench_numa.c). */
#ifndef KC_BENCH_NUMA_H
#define KC_BENCH_NUMA_H

#include <stdint.h>

#include "scheduler.h"

#define BENCH_NUMA_MAX_ROUNDS 15

struct bench_numa_options {
    const char *self; /* this program, to run SchedulingBasic in a child for the ratio */
    const char *plugin_dir;
    uint32_t nodes, pods;
    uint64_t seed;
    int32_t parallelism;
    uint32_t rounds; /* measured rounds, each between two SchedulingBasic runs */
};

/* Prints one JSON object; 0 when every pod was scheduled and none misaligned. */
int bench_numa(const struct bench_numa_options *o);

#endif
