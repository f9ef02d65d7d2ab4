/* kcycle-bench's GPU shape (bench_gpu.c): the fragmentation trace through the scheduler. */
#ifndef KC_BENCH_GPU_H
#define KC_BENCH_GPU_H

#include <stdbool.h>
#include <stdint.h>

/* Run both configurations and print their figures; 0, or 1 on a failure or over-commit. */
int bench_gpu(const char *plugin_dir, bool json, uint64_t seed);

#endif
