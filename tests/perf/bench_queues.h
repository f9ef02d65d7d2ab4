/* kcycle-bench's queues shape (bench_queues.c): Kueue's baseline scheduler-performance shape
 * (5 cohorts of 6 queues, 15,000 workloads) through the capacityqueue plugin. */
#ifndef KC_BENCH_QUEUES_H
#define KC_BENCH_QUEUES_H

#include <stdbool.h>
#include <stdint.h>

/* Run the shape and print its figures; 0, or 1 when a workload was never admitted or a queue
 * crossed its limit. */
int bench_queues(const char *plugin_dir, bool json, uint64_t seed);

#endif
