/* kcycle-bench: what the machine gave a run, beside its rates. Two sittings of the same build
 * can differ by a fifth in pods per CPU-second (docs/benchmarks.md); these say whether the node
 * array got its transparent huge pages and whether Filter went to the worker threads. */
#ifndef KC_BENCH_MACHINE_H
#define KC_BENCH_MACHINE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of [start, start + bytes) that sit on transparent huge pages: the AnonHugePages of
 * /proc/self/smaps for each mapping overlapping the range, clipped to it. -1 when smaps cannot
 * be read. */
int64_t bench_huge_page_bytes(const void *start, size_t bytes);

#endif
