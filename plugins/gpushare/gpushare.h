/* gpushare's internal model, shared by its files: cards and their ledger, what a pod asks for,
 * the MIG profile tables, the inventory parsers and the decision annotations. Nothing here is
 * public; the plugin's face is its README. */
#ifndef KC_PLUGIN_GPUSHARE_H
#define KC_PLUGIN_GPUSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_MAX_CARDS 16     /* per node; an 8-GPU server is the common case */
#define GPU_MAX_CONTAINERS 8 /* containers of one pod that ask for GPUs */
#define GPU_MAX_ZONES 8      /* NUMA zones per node */
#define GPU_MAX_TYPES 16     /* request shapes the fragmentation score weighs */
#define GPU_UUID_LEN 96
#define GPU_MODEL_LEN 64
#define GPU_NAME_LEN 128
#define GPU_REASON_LEN 256
#define MIG_SLOTS 8 /* memory slices of a MIG-capable card */
#define GPU_MAX_MEMORY_MIB (1LL << 24) /* 16 TiB per card: above it a value is not MiB */
#define MIG_MAX_PROFILES 8

/* How a card may be used. */
enum card_mode {
    CARD_SHARED = 0, /* HAMi's hami-core: fractions of memory and compute, up to `split` users */
    CARD_WHOLE = 1,  /* only given whole (time-slicing and sharing off) */
    CARD_MIG = 2     /* cut into MIG instances by the NVIDIA profiles of its family */
};

/* One MIG profile: name as the device plugin's resource suffix ("3g.40gb"), its size in
 * memory slices, and the slices where an instance of it may start. */
struct mig_profile {
    const char *name;
    uint8_t compute; /* the "Ng" part */
    uint8_t slots;   /* memory slices taken */
    uint8_t starts;  /* bit i: may start at slice i */
    uint32_t memory_mib;
};

/* A GPU family's MIG profiles (A100-40GB, A100-80GB, H100-80GB, ...). */
struct mig_family {
    const char *name;
    uint32_t memory_mib; /* a card of this family, for recognising it by size */
    uint8_t slot_count;  /* memory slices: 8, or 4 on A30 */
    uint8_t profile_count;
    struct mig_profile profiles[MIG_MAX_PROFILES];
};

const struct mig_family *mig_family_find(const char *name);
/* The family a card belongs to, from its model string and memory; NULL when none. */
const struct mig_family *mig_family_for(const char *model, uint32_t memory_mib);
const struct mig_profile *mig_profile_find(const struct mig_family *family, const char *name);
/* First free start for profile on a card whose used slices are in mask; -1 when none. The
 * start chosen is the one that leaves the largest profile of the family still placeable. */
int mig_place(const struct mig_family *family, const struct mig_profile *profile, uint8_t mask);
/* Slices an instance of profile at start occupies. */
uint8_t mig_mask(const struct mig_profile *profile, int start);
/* Largest memory (MiB) one more instance could get on a card with mask; 0 when full. */
uint32_t mig_largest_free(const struct mig_family *family, uint8_t mask);
/* Whether needle (its first length bytes) is in text, ignoring case, as HAMi compares card
 * types. */
bool text_contains_nocase(const char *text, const char *needle, size_t length);
/* "3g.40gb" shaped: digits, 'g', '.', digits, "gb" (with an optional "+me" etc. suffix). */
bool mig_name_valid(const char *name);

/* What the ledger holds for a card; a copy of it is what Filter and Score reason about. */
struct card_usage {
    int64_t memory_mib;
    int32_t cores;
    int32_t users;
    bool exclusive; /* a user holds the card whole (100 cores) */
    uint8_t mig_mask;
};

struct card {
    char uuid[GPU_UUID_LEN];
    char model[GPU_MODEL_LEN];
    int32_t index;
    int32_t numa; /* -1: unknown */
    bool healthy;
    enum card_mode mode;
    int64_t memory_mib;
    int32_t cores;                /* 100 = the whole card */
    int32_t split;                /* most users at once */
    const struct mig_family *mig; /* set for MIG mode (and MIG-capable shared cards) */
    struct card_usage used;
    bool overcommitted; /* a bound pod's annotation claims more than the card has */
};

enum inventory_source {
    SOURCE_NONE = 0,
    SOURCE_HAMI,   /* hami.io/node-nvidia-register */
    SOURCE_KCYCLE, /* kcycle.io/gpus */
    SOURCE_NRT,    /* NodeResourceTopology zones */
    SOURCE_GFD,    /* nvidia.com/gpu.* labels of GPU feature discovery */
    SOURCE_SIMULATION
};

/* CPUs free per NUMA zone, from the node's NodeResourceTopology (milli-CPU). */
struct zone_cpus {
    uint32_t count;
    int32_t id[GPU_MAX_ZONES];
    int64_t available_milli[GPU_MAX_ZONES];
};

struct gpu_node {
    char name[GPU_NAME_LEN];
    enum inventory_source source;
    uint32_t card_count;
    struct card cards[GPU_MAX_CARDS];
    /* HAMi handshake: "Requesting_<time>" written at requesting_ms, or "Deleted". */
    int64_t requesting_ms; /* 0: not requesting */
    bool deleted;
    struct zone_cpus zones;
    bool has_zones;
    struct gpu_node *next; /* hash chain */
};

/* What one container asks for. Memory is per card. */
struct container_request {
    char name[GPU_NAME_LEN];
    uint32_t index;          /* position among the pod's app containers */
    int32_t cards;           /* cards (or MIG instances) */
    int64_t memory_mib;      /* 0: use memory_percent */
    int32_t memory_percent;  /* of each card's memory */
    int32_t cores;           /* percent of each card */
    const char *mig_profile; /* interned resource suffix ("3g.40gb") or NULL */
};

enum gpu_policy { POLICY_BINPACK = 0, POLICY_SPREAD = 1, POLICY_FIRST_FIT = 2 };

struct pod_request {
    uint32_t count;
    struct container_request containers[GPU_MAX_CONTAINERS];
    /* selection by annotation: comma-separated lists, NULL when absent */
    char use_type[GPU_NAME_LEN], nouse_type[GPU_NAME_LEN];
    char use_uuid[512], nouse_uuid[512];
    bool numa_bind;        /* nvidia.com/numa-bind: a container's cards in one zone */
    bool single_numa_node; /* kcycle.io/numa-policy: cards and CPUs in one zone */
    int64_t cpu_milli;     /* the pod's cpu request, for single_numa_node */
    uint32_t zone_mask;    /* single_numa_node: zones allowed (bit per zone id), 0 any */
    enum gpu_policy card_policy;
    enum gpu_policy node_policy;
};

/* Parse the pod's GPU request. 0 and *out filled (count 0: no GPUs); -22 with reason set
 * ("container \"x\": ...") for a value the plugin refuses. Reads the pod through the SDK. */
struct kc_pod;
int request_parse(const struct kc_pod *pod, enum gpu_policy default_policy, struct pod_request *out,
                  char *reason, size_t reason_size);
/* Memory a container gets on a card. */
int64_t request_memory_on(const struct container_request *request, const struct card *card);

/* One card given to one container. */
struct assignment {
    uint8_t container; /* index into pod_request.containers */
    uint8_t card;      /* index into gpu_node.cards */
    int8_t mig_start;  /* -1 unless MIG */
    int64_t memory_mib;
    int32_t cores;
    bool exclusive;
};

#define GPU_MAX_ASSIGNMENTS (GPU_MAX_CARDS * 2)

struct placement {
    uint32_t count;
    struct assignment items[GPU_MAX_ASSIGNMENTS];
    int32_t zone;                /* the NUMA zone all cards share, -1 when not constrained */
    int64_t fragmentation_delta; /* MiB x 1000 of expected stranded memory added */
};

/* The request shapes the fragmentation score weighs: each a per-card demand. */
struct demand_type {
    int64_t memory_mib; /* 0: memory_percent */
    int32_t memory_percent;
    int32_t cores;
    double weight;
    int64_t cpu_milli; /* the pod's CPUs: a node without them strands its free GPUs */
};

struct demand_mix {
    int64_t fragmentation_weight; /* 0: plain binpack or spread */
    uint32_t count;
    struct demand_type types[GPU_MAX_TYPES];
};

void demand_mix_default(struct demand_mix *mix);
/* Count one container's per-card shape (weights decay so the mix follows the workload). */
void demand_mix_observe(struct demand_mix *mix, const struct container_request *request,
                        int64_t cpu_milli);

/* Find the best placement of request on node under its usage; false with reason when none.
 * free_cpu_milli is the node's unrequested CPU (negative: unknown), which only changes the
 * placement's fragmentation_delta, never the cards chosen. */
bool fit_pod(const struct gpu_node *node, const struct pod_request *request,
             const struct demand_mix *mix, int64_t free_cpu_milli, struct placement *out,
             char *reason, size_t reason_size);
/* Expected stranded memory (MiB x 1000) of one card in a given state. */
int64_t card_fragmentation(const struct card *card, const struct card_usage *usage,
                           const struct demand_mix *mix);
bool card_takes(const struct card *card, const struct card_usage *usage, int64_t memory_mib,
                int32_t cores);
/* Whether the pod's type and UUID selection allows the card. */
bool card_selected(const struct pod_request *request, const struct card *card);

/* Ledger -------------------------------------------------------------------------------- */

/* One pod's charge: kept until the pod is forgotten or deleted, replayed onto a node whose
 * inventory changes. */
struct charge_item {
    char uuid[GPU_UUID_LEN];
    int8_t mig_start;
    uint8_t mig_slots;
    int64_t memory_mib;
    int32_t cores;
    bool exclusive;
};

struct charge {
    char uid[GPU_NAME_LEN];
    char node[GPU_NAME_LEN];
    bool applied;       /* counted on the node's cards */
    uint32_t node_hash; /* of node, set by the ledger: recounts compare it first */
    struct charge *next;
    uint32_t count;
    struct charge_item items[GPU_MAX_ASSIGNMENTS]; /* last: the ledger stores only count */
};

struct ledger {
    struct gpu_node **nodes;
    uint32_t node_buckets;
    uint32_t node_count;
    struct charge **charges;
    uint32_t charge_buckets;
    uint32_t charge_count;
};

int ledger_init(struct ledger *ledger);
void ledger_fini(struct ledger *ledger);
struct gpu_node *ledger_node(const struct ledger *ledger, const char *name);
/* Replace a node's inventory (cards copied from fresh, usage recomputed from the charges).
 * Returns the node, NULL on out-of-memory. */
struct gpu_node *ledger_set_node(struct ledger *ledger, const char *name,
                                 const struct gpu_node *fresh);
void ledger_remove_node(struct ledger *ledger, const char *name);
const struct charge *ledger_charge_of(const struct ledger *ledger, const char *uid);
/* Record and apply a charge. 0; -17 when the uid is already charged; -28 (ENOSPC) when it
 * would over-commit a card of a known node (nothing is recorded then); -12. */
int ledger_charge(struct ledger *ledger, const struct charge *charge);
/* Record a bound pod's charge. Like ledger_charge, but a charge that does not fit is recorded
 * unapplied and its cards marked overcommitted (no new pod goes there) until a recount finds
 * room for it: the result is the same whichever of the node and its pods came first. 0; -17;
 * -12. */
int ledger_adopt(struct ledger *ledger, const struct charge *charge);
/* Release a uid's charge; 0 when there was none. */
int ledger_release(struct ledger *ledger, const char *uid);
/* Build a charge from a placement on node. */
void charge_from_placement(struct charge *out, const char *uid, const struct gpu_node *node,
                           const struct pod_request *request, const struct placement *placement);
/* The invariant of the randomized test: no card over its memory, cores, users or slices. */
bool ledger_consistent(const struct ledger *ledger, char *why, size_t why_size);

/* The plugin's ledger, for its tests (self is what init returned). */
const struct ledger *gpushare_ledger(const void *self);
/* The calendar clock (ms since the epoch, UTC) HAMi's handshake times are compared with;
 * tests replace the real one. */
void gpushare_set_calendar(void *self, int64_t (*calendar_ms)(void));

/* Inventory ----------------------------------------------------------------------------- */

/* Each returns 0 with out filled (card_count may be 0 when the source is absent), or -22
 * with why set when the source is present but malformed. */
int inventory_from_hami(const char *value, struct gpu_node *out, char *why, size_t why_size);
int inventory_from_kcycle(const char *json, const char *node_name, struct gpu_node *out, char *why,
                          size_t why_size);
int inventory_from_gfd(const char *product, const char *memory, const char *count,
                       const char *mig_config, const char *node_name, struct gpu_node *out);
/* Zones of a NodeResourceTopology object: CPUs free per zone and GPUs per zone. */
int inventory_from_nrt(const char *json, struct zone_cpus *zones, int32_t gpus_per_zone[],
                       char *why, size_t why_size);
/* HAMi's handshake annotation: sets requesting_ms / deleted. */
void inventory_handshake(const char *value, struct gpu_node *node);
/* "2024-05-14 07:07:33" or "2024.05.14 07:07:33" (UTC) to ms since the epoch; -1 when
 * malformed. */
int64_t parse_hami_time(const char *text);

/* Decision annotations ------------------------------------------------------------------ */

/* HAMi's hami.io/vgpu-devices-to-allocate: per container "UUID,NVIDIA,mem,cores:" joined by
 * ";" (one entry per app container, empty for those without GPUs). Returns the length
 * written, or -1 when it does not fit. */
int hami_encode(const struct gpu_node *node, const struct pod_request *request,
                const struct placement *placement, uint32_t app_containers, char *out, size_t size);
/* Parse it back into a charge (uuid, memory, cores per card); -22 when malformed. */
int hami_decode(const char *value, struct charge *out);
/* kcycle.io/gpu-assignment JSON. */
int assignment_encode(const struct gpu_node *node, const struct pod_request *request,
                      const struct placement *placement, char *out, size_t size);
int assignment_decode(const char *json, struct charge *out);

#endif
