/* GPU use in a simulation (gpushare): cards from the sources gpushare reads, charges
 * from the kcycle.io/gpu-assignment decisions the binder saw, unschedulable GPU pods. */
#ifndef KC_SCHED_SIM_GPU_H
#define KC_SCHED_SIM_GPU_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

struct simulator;
struct sim_record;
struct pod;
struct kv_list;

/* Calls card(ctx, index, memory MiB, cores) for every card of a kcycle.io/gpu-assignment
 * decision; -22 when it is not one. */
int sim_gpu_assignment_cards(const char *decision,
                             void (*card)(void *ctx, int index, int64_t memory_mib, int cores),
                             void *ctx);

/* At arrival: whether the pod asks for GPUs (nvidia.com/gpu*, nvidia.com/mig-*,
 * kcycle.io/gpu-*). */
void sim_gpu_note_pod(struct sim_record *r, const struct pod *pod);
/* At binding: keep the pod's GPU decision. */
void sim_gpu_record(struct sim_record *r, const struct kv_list *annotations);
/* Summary lines; nothing when no node has GPUs and no pod asked for one. */
void sim_gpu_print(const struct simulator *sim, FILE *out);
/* The report's "gpu" object, or NULL (nothing to say, or out of memory). */
json_t *sim_gpu_json(const struct simulator *sim);
/* Every card at the end of the run, node by node, as the summary counts them (the HTML
 * report draws them). Returns how many cards there were. */
typedef void (*sim_gpu_card_fn)(void *ctx, const char *node, int index, int64_t memory_mib,
                                int64_t allocated_mib, uint32_t users);
uint32_t sim_gpu_cards(const struct simulator *sim, sim_gpu_card_fn card, void *ctx);

#endif
