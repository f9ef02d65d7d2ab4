/* The mixed GPU demand of the fragmentation trace (test_gpushare_trace and kcycle-bench
 * --shape gpu): whole cards, halves, quarters and small memory slices arriving in a seeded
 * random order. Test-only; header-only so both programs draw the same pods. */
#ifndef KC_PLUGIN_GPUSHARE_TRACE_H
#define KC_PLUGIN_GPUSHARE_TRACE_H

#include <stdint.h>

#define GPU_TRACE_NODES 200
#define GPU_TRACE_CARDS 8
#define GPU_TRACE_CARD_MIB 81920 /* A100 80GB */
#define GPU_TRACE_SPLIT 10       /* HAMi's default sharing count */
#define GPU_TRACE_SEED 20260101u
#define GPU_TRACE_NODE_CPU 96000 /* milli-CPU: 96 vCPUs beside eight cards */
#ifndef GPU_TRACE_WHOLE
#define GPU_TRACE_WHOLE 20
#define GPU_TRACE_HALF 45
#define GPU_TRACE_QUARTER 70
#define GPU_TRACE_WHOLE_CPU 8000
#define GPU_TRACE_SMALL_CPU 4000
#define GPU_TRACE_SMALL_MIB 2048
#endif
#ifndef GPU_TRACE_LIFETIME
#define GPU_TRACE_LIFETIME 12000 /* arrivals a pod stays, at most */
#endif

/* One container's request, in HAMi's resources. */
struct gpu_trace_pod {
    const char *kind;
    int64_t cards;
    int64_t memory_mib; /* nvidia.com/gpumem, 0 when absent */
    int64_t percent;    /* nvidia.com/gpumem-percentage, 0 when absent */
    int64_t cores;      /* nvidia.com/gpucores, 0 when absent */
    int64_t cpu_milli;
};

struct gpu_trace {
    uint64_t state;
};

static inline void gpu_trace_init(struct gpu_trace *trace, uint32_t seed)
{
    trace->state = 0x9e3779b97f4a7c15ULL ^ seed;
}

static inline uint32_t gpu_trace_next_u32(struct gpu_trace *trace, uint32_t bound)
{
    trace->state ^= trace->state << 13;
    trace->state ^= trace->state >> 7;
    trace->state ^= trace->state << 17;
    return (uint32_t)((trace->state >> 11) % bound);
}

/* 20% whole cards, 25% halves, 25% quarters, 30% small (2 to 8 GiB, 5% of the cores); CPUs
 * in proportion to the GPU share, except the small ones (inference with CPU-side
 * pre-processing), which want more. */
static inline struct gpu_trace_pod gpu_trace_next(struct gpu_trace *trace)
{
    uint32_t draw = gpu_trace_next_u32(trace, 100);
    if (draw < GPU_TRACE_WHOLE)
        return (struct gpu_trace_pod){"whole", 1, 0, 0, 0, GPU_TRACE_WHOLE_CPU};
    if (draw < GPU_TRACE_HALF)
        return (struct gpu_trace_pod){"half", 1, 0, 50, 50, GPU_TRACE_WHOLE_CPU / 2};
    if (draw < GPU_TRACE_QUARTER)
        return (struct gpu_trace_pod){"quarter", 1, 0, 25, 25, GPU_TRACE_WHOLE_CPU / 4};
    return (struct gpu_trace_pod){
        "small", 1, GPU_TRACE_SMALL_MIB * (1 + (int64_t)gpu_trace_next_u32(trace, 4)),
        0,       5, GPU_TRACE_SMALL_CPU};
}

#endif
