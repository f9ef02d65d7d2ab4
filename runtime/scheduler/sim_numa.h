/* NUMA in simulation: the NodeResourceTopology objects of nodes whose file gives a topology
 * (built with the topology agent's code), and the NUMA part of the report: aligned and
 * misaligned placements and per-zone use, read from the numaalign binding annotations. */
#ifndef KC_SCHED_SIM_NUMA_H
#define KC_SCHED_SIM_NUMA_H

#include <stdio.h>

#include <jansson.h>

#include "error.h"
#include "simfile.h"

struct simulator;
struct sim_record;
struct pod;
struct kv_list;

/* Discover each node's topology, fill the node's allocatable cpu, memory, hugepages and devices
 * where the file leaves them out, and append its NodeResourceTopology to spec->objects. */
int sim_numa_prepare(struct sim_spec *spec, struct kc_error *err);

/* Remember what a binding says about NUMA: the zones numaalign chose and whether the pod is
 * one the kubelet's topology manager aligns. */
void sim_numa_record(struct sim_record *r, const struct pod *pod, const struct kv_list *annotations);

/* The summary lines and the report's "numa" object; nothing (NULL) when no node has a
 * topology. */
void sim_numa_print(const struct simulator *sim, FILE *out);
json_t *sim_numa_json(const struct simulator *sim);

#endif
