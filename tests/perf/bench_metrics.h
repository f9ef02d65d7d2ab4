/* kcycle-bench --metrics compare: the same benchmark with the scheduler's metrics off and on,
 * in alternating child runs of one invocation, so the cost of metrics is read off one report
 * (docs/benchmarks.md). */
#ifndef KC_BENCH_METRICS_H
#define KC_BENCH_METRICS_H

#include <stdint.h>

/* rounds pairs of child runs (argv as given, --metrics off / on, in process), the order
 * alternating each round so that drift in the machine's load falls on both; prints one JSON
 * line with every figure, the medians and their ratio. 0, or 1 when a run gave no figure. */
int bench_metrics_compare(int argc, char **argv, uint32_t rounds);

#endif
