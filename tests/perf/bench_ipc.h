/* kcycle-bench --isolation process: the transport's floor and the in-process baseline of the
 * same run, so the cost of plugin hosts per pod can be read off one report. */
#ifndef KC_BENCH_IPC_H
#define KC_BENCH_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The median round trip of a 256-byte message over a bare socketpair(AF_UNIX, SOCK_SEQPACKET)
 * to a child process that echoes it: what any transport between two processes costs here.
 * 0, or -errno. */
int bench_ipc_raw_round_trip_us(uint32_t samples, double *p50_us);

/* The same echo with the two processes pinned to two different cores (the first two this
 * process may use): the cost of waking a peer that sleeps on another core (spin false), and
 * through the plugin-host channel itself (runtime/core/channel.c: its receive spin, adaptive
 * as in kcycle; spin true). 0; -ENOTSUP with fewer than two cores; or -errno. */
int bench_ipc_cross_core_us(uint32_t samples, bool spin, double *p50_us);
/* The two figures as JSON members; a negative one (not measured) is null. */
void bench_ipc_cross_core_json(char *out, size_t size, double sleeping_us, double spinning_us);

/* Run this benchmark again (argv as given, --isolation inprocess, --json) in a child and
 * return its pods/s (pods_per_second_avg, or pods_per_second for the gang shape) and, for the
 * gang shape, its group latency p50. 0, or -errno (-EPROTO when its output has no figure). */
int bench_ipc_inprocess_baseline(int argc, char **argv, double *pods_per_second,
                                 double *group_latency_ms_p50);

/* The JSON members (",\"raw_round_trip_us_p50\": ...", starting with a comma) that compare a
 * process-isolation run with its baseline, into out. */
void bench_ipc_json(char *out, size_t size, double raw_us, double baseline_pods_per_second,
                    double pods_per_second, double baseline_group_ms);

#endif
