/* gpushare on the plugin test harness, in both isolation modes: cards shared by memory, cores and
 * users and never overcommitted, as pods are placed one after the other (Filter, then Reserve on
 * the chosen node), with the reasons kube's users see; the HAMi and kcycle annotations Reserve
 * writes on the Binding (the scheduler clock set with kc_harness_set_clock); the cards a pod's
 * type and UUID annotations select; PreFilter's refusals (each request it cannot take, with the
 * whole reason) and skips; HAMi's defaults as Reserve's HAMi annotation shows them; HAMi's
 * handshake; MIG instances through Filter and Reserve; the adoption of bound pods after a restart,
 * in either order with their node, and forged assignments; the fragmentation score; cards and CPUs
 * in one NUMA zone, numaalign's choice followed; cards from NodeResourceTopology zones and GFD
 * labels. The parsers, the MIG tables, the longest selection value taken whole and the ledger's
 * invariants are called directly (test_gpushare_internal.c, test_gpushare.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "harness_test.h"

/* node l4: one 24 GiB card shared by up to three users; pods s0..s2 of 4 GiB and 30 % of the
 * cores, and the probes p-* asking for what the card may or may not still give */
static const char cluster[] =
    "nodes:\n"
    "  - name: l4\n"
    "    allocatable: {cpu: 16, nvidia.com/gpu: 3}\n"
    "    annotations:\n"
    "      kcycle.io/gpus: '[{\"memory\": 24576, \"split\": 3, \"uuid\": \"GPU-l4\", "
    "\"model\": \"NVIDIA-L4\"}]'\n"
    "pods:\n"
    "  - {name: s0, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4096, "
    "nvidia.com/gpucores: 30}}\n"
    "  - {name: s1, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4096, "
    "nvidia.com/gpucores: 30}}\n"
    "  - {name: s2, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4096, "
    "nvidia.com/gpucores: 30}}\n"
    "  - {name: p-user, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024, "
    "nvidia.com/gpucores: 1}}\n"
    "  - {name: p-memory, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 20000, "
    "nvidia.com/gpucores: 10}}\n"
    "  - {name: p-cores, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, "
    "nvidia.com/gpucores: 50}}\n"
    "  - {name: p-fits, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, "
    "nvidia.com/gpucores: 40}}\n";

static void place(const char *pod)
{
    harness_expect_status(pod, kc_harness_filter(harness, pod, "l4"), KC_SUCCESS);
    harness_expect_status(pod, kc_harness_call(harness, pod, KC_HARNESS_RESERVE, "l4"), KC_SUCCESS);
}

static void refused(const char *pod, const char *reason)
{
    harness_expect_status(pod, kc_harness_filter(harness, pod, "l4"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), reason);
}

static void cards_are_shared_and_never_overcommitted(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    place("ml/s0");
    place("ml/s1");
    place("ml/s2");
    refused("ml/p-user", "GPU sharing limit reached");
    /* s0 undone: a user's room, but not 20000 MiB nor 50 % of the cores */
    harness_expect_status(
        "unreserve", kc_harness_call(harness, "ml/s0", KC_HARNESS_UNRESERVE, "l4"), KC_SUCCESS);
    refused("ml/p-memory", "Insufficient GPU memory");
    refused("ml/p-cores", "Insufficient GPU cores");
    place("ml/p-fits");
}

static void reserve_writes_hami_and_kcycle_annotations(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    place("ml/s0");
    const char *hami = kc_harness_annotation(harness, "hami.io/vgpu-devices-to-allocate");
    assert_non_null(hami);
    assert_non_null(strstr(hami, "GPU-l4,NVIDIA,4096,30:;"));
    assert_string_equal(kc_harness_annotation(harness, "hami.io/vgpu-devices-allocated"), hami);
    assert_string_equal(kc_harness_annotation(harness, "hami.io/vgpu-node"), "l4");
    assert_string_equal(kc_harness_annotation(harness, "hami.io/bind-phase"), "allocating");
    const char *own = kc_harness_annotation(harness, "kcycle.io/gpu-assignment");
    assert_non_null(own);
    assert_non_null(strstr(own, "\"uuid\":\"GPU-l4\""));
}

/* HAMi's nvidia.com/use-gputype, nouse-gpuuuid and use-gpuuuid pod annotations choose among a
 * node's cards: the card Reserve assigns is the one selected, and a pod that excludes every
 * card is refused with the reason kube's users see. */
static void type_and_uuid_selection_is_honoured(void **state)
{
    (void)state;
    harness_start("{}",
                  "nodes:\n"
                  "  - name: mixed\n"
                  "    allocatable: {cpu: 16, nvidia.com/gpu: 2}\n"
                  "    annotations:\n"
                  "      kcycle.io/gpus: '[{\"memory\": 16384, \"model\": \"Tesla-T4\", \"uuid\": "
                  "\"GPU-t4\"}, {\"memory\": 81920, \"model\": \"NVIDIA-A100-SXM4-80GB\", "
                  "\"uuid\": \"GPU-a100\"}]'\n"
                  "pods:\n"
                  "  - {name: a, namespace: ml, annotations: {nvidia.com/use-gputype: a100}, "
                  "limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}\n"
                  "  - {name: b, namespace: ml, annotations: {nvidia.com/nouse-gpuuuid: "
                  "'GPU-a100, GPU-t4'}, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}\n"
                  "  - {name: c, namespace: ml, annotations: {nvidia.com/use-gpuuuid: GPU-t4}, "
                  "limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}\n");
    static const struct {
        const char *pod, *card;
    } placed[] = {{"ml/a", "GPU-a100,"}, {"ml/c", "GPU-t4,"}};
    for (int i = 0; i < 2; i++) {
        harness_expect_status(placed[i].pod, kc_harness_filter(harness, placed[i].pod, "mixed"),
                              KC_SUCCESS);
        harness_expect_status(placed[i].pod,
                              kc_harness_call(harness, placed[i].pod, KC_HARNESS_RESERVE, "mixed"),
                              KC_SUCCESS);
        const char *hami = kc_harness_annotation(harness, "hami.io/vgpu-devices-to-allocate");
        assert_non_null(hami);
        if (strstr(hami, placed[i].card) == NULL)
            fail_msg("%s (%s): assigned \"%s\", want %s", placed[i].pod, harness_mode_name(), hami,
                     placed[i].card);
    }
    harness_expect_status("ml/b", kc_harness_filter(harness, "ml/b", "mixed"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "no GPU of the requested type or UUID");
}

static void args_are_checked(void **state)
{
    (void)state;
    harness_start("{\"cardPolicy\": \"Spread\", \"nodePolicy\": \"Binpack\", "
                  "\"fragmentationWeight\": 5, \"handshakeTimeoutSeconds\": 60, "
                  "\"hamiAnnotations\": false, \"demand\": [{\"memoryPercent\": "
                  "100, \"cores\": 100}, {\"memory\": 2048, \"weight\": 3}]}",
                  HARNESS_ONE_NODE);
    harness_expect_open_error("{\"cardpolicy\": \"Spread\"}", "unknown key \"cardpolicy\"");
    harness_expect_open_error("{\"nodePolicy\": \"FirstFit\"}", NULL);
    harness_expect_open_error("{\"fragmentationWeight\": -1}", NULL);
    harness_expect_open_error("{\"demand\": [{\"memoryPercent\": 150}]}", NULL);
    harness_expect_open_error("[]", NULL);
    harness_start("{}", HARNESS_ONE_NODE);
}

/* The fake host's tests, moved ------------------------------------------------------------ */

/* HAMi's protocol document: a node with two 32 GB V100s. */
#define HAMI_DOC_REGISTER                                                                          \
    "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"    \
    "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
#define V100_CARD0 "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec"

static char text[16384];

/* The v100 node (HAMi's registration, and a handshake annotation when not NULL; allocatable
 * GPUs as the kubelet advertises them) as a nodes: entry appended to buf. */
static void v100_into(char *buf, size_t size, const char *handshake, int allocatable_gpus)
{
    harness_append(buf, size,
                   "  - name: v100\n    allocatable: {cpu: 32, nvidia.com/gpu: %d}\n"
                   "    annotations:\n      hami.io/node-nvidia-register: '%s'\n",
                   allocatable_gpus, HAMI_DOC_REGISTER);
    if (handshake != NULL)
        harness_append(buf, size, "      hami.io/node-handshake-nvidia: '%s'\n", handshake);
}

/* Filter and Reserve of pod on node. */
static kc_status place_on(const char *pod, const char *node)
{
    kc_status st = kc_harness_filter(harness, pod, node);
    return st == KC_SUCCESS ? kc_harness_call(harness, pod, KC_HARNESS_RESERVE, node) : st;
}

/* After a refusal: the reason Filter gave. */
static void expect_reason(const char *pod, const char *reason)
{
    if (strcmp(kc_harness_message(harness), reason) != 0)
        fail_msg("%s (%s): reason \"%s\", want \"%s\"", pod, harness_mode_name(),
                 kc_harness_message(harness), reason);
}

/* The scheduler assumes the pod placed, then forgets it (its binding failed): POD_FORGET. */
static void assume_and_forget(const char *pod, const char *node)
{
    assert_int_equal(kc_harness_assume(harness, pod, node), 0);
    assert_int_equal(kc_harness_forget(harness, pod), 0);
}

/* HAMi's handshake time: the calendar (UTC) seconds ago, as its device plugin writes it. */
static void hami_time(char *buf, size_t size, const char *prefix, int seconds_ago)
{
    time_t at = time(NULL) - seconds_ago;
    struct tm utc;
    gmtime_r(&at, &utc);
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &utc);
    snprintf(buf, size, "%s%s", prefix, when);
}

static void handshake_update(const char *handshake, int allocatable_gpus)
{
    char update[2048] = "nodes:\n";
    v100_into(update, sizeof(update), handshake, allocatable_gpus);
    if (kc_harness_update(harness, update) < 0)
        fail_msg("%s: %s", harness_mode_name(), kc_harness_error(harness));
}

/* The handshake's times are the calendar's (HAMi writes them): the node's request is 10 s old
 * (within HAMi's 60 s) and then 90 s old. */
static void handshake_requesting_too_long_makes_the_node_stale(void **state)
{
    (void)state;
    char handshake[64];
    hami_time(handshake, sizeof(handshake), "Requesting_", 10);
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    v100_into(text, sizeof(text), handshake, 0);
    harness_append(text, sizeof(text),
                   "pods:\n  - {name: p, namespace: ml, limits: {nvidia.com/gpu: 1, "
                   "nvidia.com/gpumem: 1024, nvidia.com/gpucores: 10}}\n");
    harness_start("{}", text);
    harness_expect_status("fresh", place_on("ml/p", "v100"), KC_SUCCESS);
    assume_and_forget("ml/p", "v100");
    hami_time(handshake, sizeof(handshake), "Requesting_", 90);
    handshake_update(handshake, 0);
    harness_expect_status("stale", place_on("ml/p", "v100"), KC_UNSCHEDULABLE);
    assert_non_null(strstr(kc_harness_message(harness), "GPU registration stale"));
    /* HAMi's exception: the kubelet still advertises the cards */
    handshake_update(handshake, 20);
    harness_expect_status("advertised", place_on("ml/p", "v100"), KC_SUCCESS);
    assume_and_forget("ml/p", "v100");
    /* the device plugin answered */
    handshake_update("Reported 2024-05-14 07:08:03.434037031 +0000 UTC", 0);
    harness_expect_status("reported", place_on("ml/p", "v100"), KC_SUCCESS);
    assume_and_forget("ml/p", "v100");
    handshake_update("Deleted", 0);
    harness_expect_status("deleted", place_on("ml/p", "v100"), KC_UNSCHEDULABLE);
    assert_non_null(strstr(kc_harness_message(harness), "Deleted"));
}

static void reserve_writes_the_scheduler_clock_and_the_assignment(void **state)
{
    (void)state;
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    v100_into(text, sizeof(text), NULL, 0);
    harness_append(text, sizeof(text),
                   "pods:\n  - metadata: {name: p, namespace: ml}\n    spec:\n      containers:\n"
                   "        - {name: main, resources: {limits: {nvidia.com/gpu: 1, "
                   "nvidia.com/gpumem: 3000, nvidia.com/gpucores: 30}}}\n");
    harness_start("{}", text);
    assert_int_equal(kc_harness_set_clock(harness, 1700000000123LL), 0);
    harness_expect_status("p", place_on("ml/p", "v100"), KC_SUCCESS);
    const char *hami = kc_harness_annotation(harness, "hami.io/vgpu-devices-to-allocate");
    assert_non_null(hami);
    assert_non_null(strstr(hami, ",NVIDIA,3000,30:;"));
    assert_string_equal(kc_harness_annotation(harness, "hami.io/vgpu-devices-allocated"), hami);
    assert_string_equal(kc_harness_annotation(harness, "hami.io/vgpu-node"), "v100");
    assert_string_equal(kc_harness_annotation(harness, "hami.io/vgpu-time"), "1700000000");
    assert_string_equal(kc_harness_annotation(harness, "hami.io/bind-phase"), "allocating");
    /* the container by name, the card HAMi's decision names, its memory and cores */
    char want[512];
    snprintf(want, sizeof(want),
             "{\"node\":\"v100\",\"containers\":[{\"name\":\"main\",\"cards\":[{\"uuid\":"
             "\"%.40s\",\"index\":%c,"
             "\"memory\":3000,\"cores\":30}]}]}",
             hami, hami[39] == 'c' ? '0' : '1');
    assert_string_equal(kc_harness_annotation(harness, "kcycle.io/gpu-assignment"), want);
}

static void bad_request_is_unresolvable_naming_the_pod(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - {name: n, allocatable: {cpu: 1}}\n"
                        "pods:\n  - metadata: {name: bad, namespace: ml}\n    spec:\n"
                        "      containers:\n        - {name: main, resources: {limits: "
                        "{nvidia.com/gpu: 1, nvidia.com/gpucores: 150}}}\n");
    harness_expect_status("bad", kc_harness_filter(harness, "ml/bad", "n"), KC_UNRESOLVABLE);
    assert_non_null(strstr(kc_harness_message(harness), "pod ml/bad: container \"main\""));
}

/* The requests PreFilter refuses, each with the whole reason kube's users see (the pod, the
 * container and the value): UNRESOLVABLE, so no node is tried. */
static const struct {
    const char *pod, *yaml, *reason;
} bad_requests[] = {
    {"ml/cores", "{name: cores, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpucores: "
                 "150}}",
     "pod ml/cores: container \"main\": nvidia.com/gpucores is 150; expected 0 to 100 "
     "(percent of each card's compute; 100 holds the card alone)"},
    {"ml/percent", "{name: percent, namespace: ml, limits: {nvidia.com/gpu: 1, "
                   "nvidia.com/gpumem-percentage: 120}}",
     "pod ml/percent: container \"main\": nvidia.com/gpumem-percentage is 120; "
     "expected 1 to 100 (percent of each card's memory)"},
    {"ml/bytes", "{name: bytes, namespace: ml, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: "
                 "8589934592}}",
     "pod ml/bytes: container \"main\": nvidia.com/gpumem is 8589934592; expected MiB "
     "per card (e.g. 8192 for 8 GiB), not bytes"},
    {"ml/many", "{name: many, namespace: ml, limits: {nvidia.com/gpu: 17}}",
     "pod ml/many: container \"main\": nvidia.com/gpu is 17; expected at most 16 (the "
     "most cards a node has)"},
    {"ml/synonyms", "{name: synonyms, namespace: ml, limits: {nvidia.com/gpu: 1, "
                    "nvidia.com/gpumem: 4096, kcycle.io/gpu-memory: 2048}}",
     "pod ml/synonyms: container \"main\": nvidia.com/gpumem is 4096 but "
     "kcycle.io/gpu-memory is 2048; give one of them"},
    {"ml/mig-mem", "{name: mig-mem, namespace: ml, limits: {nvidia.com/gpumem: 4096, "
                   "nvidia.com/mig-1g.10gb: 1}}",
     "pod ml/mig-mem: container \"main\": nvidia.com/mig-1g.10gb cannot be combined "
     "with nvidia.com/gpu, gpumem or gpucores; a MIG instance has its own memory "
     "and compute"},
    {"ml/mig-big", "{name: mig-big, namespace: ml, limits: {nvidia.com/mig-big: 1}}",
     "pod ml/mig-big: container \"main\": nvidia.com/mig-big is not a MIG profile; "
     "expected e.g. nvidia.com/mig-1g.10gb or nvidia.com/mig-3g.40gb"},
    {"ml/mig-two", "{name: mig-two, namespace: ml, limits: {nvidia.com/mig-1g.10gb: 1, "
                   "nvidia.com/mig-3g.40gb: 1}}",
     "pod ml/mig-two: container \"main\": asks for two MIG profiles "
     "(nvidia.com/mig-1g.10gb and nvidia.com/mig-3g.40gb); one profile per container"},
    {"ml/policy", "{name: policy, namespace: ml, limits: {nvidia.com/gpu: 1}, annotations: "
                  "{hami.io/gpu-scheduler-policy: tight}}",
     "pod ml/policy: annotation hami.io/gpu-scheduler-policy is \"tight\"; expected "
     "binpack or spread"},
    {"ml/numa", "{name: numa, namespace: ml, limits: {nvidia.com/gpu: 1}, annotations: "
                "{kcycle.io/numa-policy: restricted}}",
     "pod ml/numa: annotation kcycle.io/numa-policy is \"restricted\"; expected "
     "single-numa-node or none"},
    {"ml/init", "{name: init, namespace: ml, requests: {cpu: 1}, initContainers: [{name: setup, "
                "resources: {limits: {nvidia.com/gpu: 1}}}]}",
     "pod ml/init: init container \"setup\" asks for GPUs; gpushare gives GPUs to app "
     "containers only"},
};

static void bad_requests_are_refused_naming_container_and_value(void **state)
{
    (void)state;
    char yaml[8192] = "nodes:\n  - {name: n, allocatable: {cpu: 4}}\npods:\n";
    for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++)
        harness_append(yaml, sizeof(yaml), "  - %s\n", bad_requests[i].yaml);
    harness_start("{}", yaml);
    for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++) {
        harness_expect_status(bad_requests[i].pod,
                              kc_harness_filter(harness, bad_requests[i].pod, "n"),
                              KC_UNRESOLVABLE);
        if (strcmp(kc_harness_message(harness), bad_requests[i].reason) != 0)
            fail_msg("%s (%s): reason \"%s\", want \"%s\"", bad_requests[i].pod,
                     harness_mode_name(), kc_harness_message(harness), bad_requests[i].reason);
    }
}

/* A selection list the plugin cannot hold whole is refused, naming the annotation and its
 * length: a cut nouse list would let through the cards named after the cut. (That the longest
 * value that fits is taken whole is request_parse's, checked in test_gpushare.c.) */
static void overlong_selection_annotations_are_refused(void **state)
{
    (void)state;
    static const char *const keys[] = {"nvidia.com/use-gputype", "nvidia.com/nouse-gputype",
                                       "nvidia.com/use-gpuuuid", "nvidia.com/nouse-gpuuuid"};
    char list[1024] = "";
    for (int i = 0; strlen(list) + 48 < sizeof(list); i++)
        harness_append(list, sizeof(list), "%sGPU-%08d-0000-0000-0000", i > 0 ? "," : "", i);
    char yaml[8192] = "nodes:\n  - {name: n, allocatable: {cpu: 4}}\npods:\n";
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        harness_append(yaml, sizeof(yaml),
                       "  - {name: long-%zu, namespace: ml, limits: {nvidia.com/gpu: 1, "
                       "nvidia.com/gpumem: 1024}, annotations: {%s: '%s'}}\n",
                       k, keys[k], list);
    harness_start("{}", yaml);
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        char pod[32], reason[256];
        snprintf(pod, sizeof(pod), "ml/long-%zu", k);
        /* the type lists hold 127 bytes, the UUID lists 511 */
        snprintf(reason, sizeof(reason),
                 "pod %s: annotation %s is %zu bytes long; at most %d are read, shorten the "
                 "list",
                 pod, keys[k], strlen(list), strstr(keys[k], "uuid") != NULL ? 511 : 127);
        harness_expect_status(pod, kc_harness_filter(harness, pod, "n"), KC_UNRESOLVABLE);
        assert_string_equal(kc_harness_message(harness), reason);
    }
}

/* HAMi's defaults, read where HAMi's device plugin reads them: the card list Reserve writes in
 * hami.io/vgpu-devices-to-allocate ("UUID,NVIDIA,MiB,cores:" per card, ";" per container). */
static void hami_defaults_apply_to_requests(void **state)
{
    (void)state;
    static const char two_cards[] =
        "nodes:\n"
        "  - name: n\n"
        "    allocatable: {cpu: 16, nvidia.com/gpu: 6}\n"
        "    annotations:\n"
        "      kcycle.io/gpus: '[{\"memory\": 24576, \"split\": 3, \"uuid\": \"GPU-a\", "
        "\"model\": \"NVIDIA-L4\"}, {\"memory\": 24576, \"split\": 3, \"uuid\": \"GPU-b\", "
        "\"model\": \"NVIDIA-L4\"}]'\n"
        "pods:\n"
        "  - {name: whole, namespace: ml, limits: {nvidia.com/gpu: 2}}\n"
        "  - {name: memory-only, namespace: ml, limits: {nvidia.com/gpumem: 2048}}\n"
        "  - {name: synonym, namespace: ml, limits: {kcycle.io/gpu-memory: 1024, "
        "kcycle.io/gpu-cores: 20}}\n";
    static const struct {
        const char *pod, *cards;
    } want[] = {
        /* cards only: whole cards (all their memory), held alone (100 cores) */
        {"ml/whole", "GPU-a,NVIDIA,24576,100:GPU-b,NVIDIA,24576,100:;"},
        /* memory only: one card, no cores reserved */
        {"ml/memory-only", "GPU-a,NVIDIA,2048,0:;"},
        /* kcycle.io's synonyms read as HAMi's resources */
        {"ml/synonym", "GPU-a,NVIDIA,1024,20:;"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        harness_start("{}", two_cards);
        harness_expect_status(want[i].pod, kc_harness_filter(harness, want[i].pod, "n"),
                              KC_SUCCESS);
        harness_expect_status(want[i].pod,
                              kc_harness_call(harness, want[i].pod, KC_HARNESS_RESERVE, "n"),
                              KC_SUCCESS);
        const char *cards = kc_harness_annotation(harness, "hami.io/vgpu-devices-to-allocate");
        if (cards == NULL || strcmp(cards, want[i].cards) != 0)
            fail_msg("%s (%s): cards \"%s\", want \"%s\"", want[i].pod, harness_mode_name(),
                     cards != NULL ? cards : "(none)", want[i].cards);
    }
    /* a pod without GPUs asks for nothing: PreFilter skips it (pod_without_gpus_is_skipped) */
}

static void pod_without_gpus_is_skipped(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - {name: n0, allocatable: {cpu: 4}}\n"
                        "  - {name: n1, allocatable: {cpu: 4}}\n"
                        "pods:\n  - {name: cpu-only, namespace: ml, requests: {cpu: 1}}\n");
    harness_expect_status("cpu-only", kc_harness_evaluate(harness, "ml/cpu-only"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
    assert_int_equal(kc_harness_pre_score_skipped(harness), 1);
}

/* A reserved pod seen bound with the assignment its Reserve wrote (own), then deleted: the
 * plugin hears POD_ADD of the bound pod, then POD_DELETE. */
static void bind_then_delete(const char *namespace, const char *name, const char *node,
                             const char *node_yaml, const char *own)
{
    char ref[64];
    snprintf(ref, sizeof(ref), "%s/%s", namespace, name);
    char update[4096] = "";
    harness_append(update, sizeof(update),
                   "nodes:\n%spods:\n  - {name: %s, namespace: %s, nodeName: %s, annotations: "
                   "{kcycle.io/gpu-assignment: '%s'}}\n",
                   node_yaml, name, namespace, node, own);
    if (kc_harness_update(harness, update) < 0)
        fail_msg("%s: %s", harness_mode_name(), kc_harness_error(harness));
    assert_int_equal(kc_harness_delete_pod(harness, ref), 0);
}

#define L4_NODE                                                                                    \
    "  - name: l4\n    allocatable: {cpu: 16, nvidia.com/gpu: 3}\n    annotations:\n"            \
    "      kcycle.io/gpus: '[{\"memory\": 24576, \"split\": 3, \"uuid\": \"GPU-l4\", "            \
    "\"model\": \"NVIDIA-L4\"}]'\n"

/* s0 of the three users leaves (deleted once bound): a whole card is still not taken from
 * the two others; a card that reports no cores is shared by memory alone. */
static void a_deleted_user_frees_a_share_not_the_whole_card(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n" L4_NODE
                        "  - name: coreless\n    allocatable: {cpu: 16}\n    annotations:\n"
                        "      kcycle.io/gpus: '[{\"memory\": 16384, \"cores\": 0, \"uuid\": "
                        "\"GPU-c\"}]'\n"
                        "pods:\n"
                        "  - {name: s0, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 4096, nvidia.com/gpucores: 30}}\n"
                        "  - {name: s1, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 4096, nvidia.com/gpucores: 30}}\n"
                        "  - {name: s2, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 4096, nvidia.com/gpucores: 30}}\n"
                        "  - {name: p-user, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 1024, nvidia.com/gpucores: 1}}\n"
                        "  - {name: p-whole, namespace: ml, limits: {nvidia.com/gpu: 1}}\n"
                        "  - {name: p-memory, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 20000, nvidia.com/gpucores: 10}}\n"
                        "  - {name: p-cores, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 1000, nvidia.com/gpucores: 50}}\n"
                        "  - {name: p-fits, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 1000, nvidia.com/gpucores: 40}}\n"
                        "  - {name: c0, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 8192}}\n"
                        "  - {name: c1, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 8192}}\n");
    static const char *const users[] = {"ml/s0", "ml/s1", "ml/s2"};
    static char s0_assignment[1024];
    for (int i = 0; i < 3; i++) {
        harness_expect_status(users[i], place_on(users[i], "l4"), KC_SUCCESS);
        if (i == 0)
            snprintf(s0_assignment, sizeof(s0_assignment), "%s",
                     kc_harness_annotation(harness, "kcycle.io/gpu-assignment"));
    }
    harness_expect_status("user", place_on("ml/p-user", "l4"), KC_UNSCHEDULABLE);
    expect_reason("user", "GPU sharing limit reached");
    /* s0 is bound with its assignment, then deleted */
    assert_non_null(strstr(s0_assignment, "\"uuid\":\"GPU-l4\""));
    bind_then_delete("ml", "s0", "l4", L4_NODE, s0_assignment);
    harness_expect_status("whole", place_on("ml/p-whole", "l4"), KC_UNSCHEDULABLE);
    expect_reason("whole", "GPU held exclusively");
    harness_expect_status("memory", place_on("ml/p-memory", "l4"), KC_UNSCHEDULABLE);
    expect_reason("memory", "Insufficient GPU memory");
    harness_expect_status("cores", place_on("ml/p-cores", "l4"), KC_UNSCHEDULABLE);
    expect_reason("cores", "Insufficient GPU cores");
    harness_expect_status("fits", place_on("ml/p-fits", "l4"), KC_SUCCESS);
    harness_expect_status("c0", place_on("ml/c0", "coreless"), KC_SUCCESS);
    harness_expect_status("c1", place_on("ml/c1", "coreless"), KC_SUCCESS);
}

/* The card and MIG instance of the last Reserve's assignment. */
static void expect_mig(const char *pod, const char *profile, int start)
{
    char want[256];
    snprintf(want, sizeof(want),
             "\"uuid\":\"GPU-h\",\"index\":0,\"memory\":40960,\"cores\":0,\"mig\":\"%s\","
             "\"migStart\":%d,",
             profile, start);
    const char *own = kc_harness_annotation(harness, "kcycle.io/gpu-assignment");
    if (own == NULL || strstr(own, want) == NULL)
        fail_msg("%s (%s): assignment %s lacks %s", pod, harness_mode_name(),
                 own != NULL ? own : "(none)", want);
}

static void mig_pods_get_instances_on_mig_cards(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: h100\n    allocatable: {cpu: 16}\n    annotations:\n"
                        "      kcycle.io/gpus: '[{\"memory\": 81920, \"model\": "
                        "\"NVIDIA-H100-80GB-HBM3\", \"mode\": \"mig\", \"uuid\": \"GPU-h\"}, "
                        "{\"memory\": 81920, \"model\": \"NVIDIA-H100-80GB-HBM3\", \"uuid\": "
                        "\"GPU-shared\"}]'\n"
                        "pods:\n"
                        "  - {name: m0, namespace: ml, limits: {nvidia.com/mig-3g.40gb: 1}}\n"
                        "  - {name: m1, namespace: ml, limits: {nvidia.com/mig-3g.40gb: 1}}\n"
                        "  - {name: m2, namespace: ml, limits: {nvidia.com/mig-1g.10gb: 1}}\n");
    harness_expect_status("m0", place_on("ml/m0", "h100"), KC_SUCCESS);
    expect_mig("m0", "3g.40gb", 4);
    harness_expect_status("m1", place_on("ml/m1", "h100"), KC_SUCCESS);
    expect_mig("m1", "3g.40gb", 0);
    harness_expect_status("m2", place_on("ml/m2", "h100"), KC_UNSCHEDULABLE);
    expect_reason("m2", "no free MIG placement for nvidia.com/mig-1g.10gb");
    assume_and_forget("ml/m0", "h100");
    harness_expect_status("m2 after", place_on("ml/m2", "h100"), KC_SUCCESS);
}

/* a restart: a new plugin sees the node and the bound pod with HAMi's annotation only */
static void restart_rebuilds_the_ledger_from_decision_annotations(void **state)
{
    (void)state;
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    v100_into(text, sizeof(text), NULL, 0);
    harness_append(text, sizeof(text),
                   "pods:\n  - {name: a, namespace: ml, limits: {nvidia.com/gpu: 1, "
                   "nvidia.com/gpumem: 30000, nvidia.com/gpucores: 50}}\n");
    harness_start("{}", text);
    harness_expect_status("a", place_on("ml/a", "v100"), KC_SUCCESS);
    static char hami[256];
    snprintf(hami, sizeof(hami), "%s",
             kc_harness_annotation(harness, "hami.io/vgpu-devices-allocated"));
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    v100_into(text, sizeof(text), NULL, 0);
    harness_append(text, sizeof(text),
                   "pods:\n  - {name: a, namespace: ml, nodeName: v100, annotations: "
                   "{hami.io/vgpu-devices-allocated: '%s'}}\n"
                   "  - {name: b, namespace: ml, limits: {nvidia.com/gpu: 1, "
                   "nvidia.com/gpumem: 3000, nvidia.com/gpucores: 60}}\n"
                   "  - {name: c, namespace: ml, limits: {nvidia.com/gpu: 1, "
                   "nvidia.com/gpumem: 2000, nvidia.com/gpucores: 60}}\n",
                   hami);
    harness_start("{}", text);
    /* the card it holds has 2768 MiB left: a 3000 MiB pod goes to the other card */
    harness_expect_status("b", place_on("ml/b", "v100"), KC_SUCCESS);
    char uuid[128];
    snprintf(uuid, sizeof(uuid), "%s",
             kc_harness_annotation(harness, "hami.io/vgpu-devices-allocated"));
    uuid[strcspn(uuid, ",")] = '\0';
    assert_null(strstr(hami, uuid));
    /* and a third pod fits on neither card's cores */
    harness_expect_status("c", place_on("ml/c", "v100"), KC_UNSCHEDULABLE);
    expect_reason("c", "Insufficient GPU cores");
    assert_int_equal(kc_harness_delete_pod(harness, "ml/a"), 0);
    harness_expect_status("c after", place_on("ml/c", "v100"), KC_SUCCESS);
}

/* A pod asking memory_mib of the first V100 only, placed then forgotten: its status. */
static kc_status place_on_card0(const char *pod)
{
    kc_status st = place_on(pod, "v100");
    if (st == KC_SUCCESS)
        assume_and_forget(pod, "v100");
    return st;
}

#define CARD0_PROBE(name, memory)                                                                  \
    "  - {name: " name ", namespace: ml, annotations: {nvidia.com/use-gpuuuid: " V100_CARD0      \
    "}, limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: " #memory "}}\n"

/* Two bound pods claim 20000 MiB each of one 32768 MiB card. Whether the node or the pods
 * arrive first, both charges are kept: the card takes nothing while both run (a 1000 MiB pod
 * is refused), and counts the one left when the other goes (12768 MiB free, not 12769). */
static void adopted_overcommit_is_kept_whichever_arrives_first(void **state)
{
    (void)state;
    for (int node_first = 1; node_first >= 0; node_first--) {
        harness_start("{}", "nodes:\n  - {name: other, allocatable: {cpu: 1}}\npods:\n"
                            CARD0_PROBE("small", 1000) CARD0_PROBE("over", 12769)
                            CARD0_PROBE("fits", 12768));
        text[0] = '\0';
        harness_append(text, sizeof(text), "nodes:\n");
        v100_into(text, sizeof(text), NULL, 0);
        harness_append(text, sizeof(text), "pods:\n");
        for (int i = 0; i < 2; i++)
            harness_append(text, sizeof(text),
                           "  - {name: %c, namespace: ml, nodeName: v100, annotations: "
                           "{hami.io/vgpu-devices-allocated: '" V100_CARD0 ",NVIDIA,20000,0:;'}}\n",
                           'a' + i);
        int rc = node_first ? kc_harness_update(harness, text)
                            : kc_harness_update_pods_first(harness, text);
        if (rc < 0)
            fail_msg("%s: %s", harness_mode_name(), kc_harness_error(harness));
        harness_expect_status("small", place_on_card0("ml/small"), KC_UNSCHEDULABLE);
        /* one leaves: the other is counted, 12768 MiB are free */
        assert_int_equal(kc_harness_delete_pod(harness, node_first ? "ml/a" : "ml/b"), 0);
        harness_expect_status("over", place_on_card0("ml/over"), KC_UNSCHEDULABLE);
        harness_expect_status("fits", place_on_card0("ml/fits"), KC_SUCCESS);
    }
}

/* kcycle.io/gpu-assignment is written by the scheduler, but anyone may put it on a pod created
 * with spec.nodeName: a forged negative charge does not free a card a running pod holds. */
static void forged_assignment_does_not_free_a_held_card(void **state)
{
    (void)state;
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    v100_into(text, sizeof(text), NULL, 0);
    harness_append(text, sizeof(text),
                   "pods:\n  - {name: holder, namespace: ml, nodeName: v100, annotations: "
                   "{hami.io/vgpu-devices-allocated: '" V100_CARD0 ",NVIDIA,30000,0:;'}}\n"
                   "  - {name: forger, namespace: ml, nodeName: v100, annotations: "
                   "{kcycle.io/gpu-assignment: '{\"containers\":[{\"cards\":[{\"uuid\":\""
                   V100_CARD0 "\",\"memory\":-30000,\"cores\":0}]}]}'}}\n"
                   CARD0_PROBE("big", 20000) CARD0_PROBE("over", 2769) CARD0_PROBE("fits", 2768));
    harness_start("{}", text);
    /* 30000 of 32768 MiB held, as if the forger were not there */
    harness_expect_status("big", place_on_card0("ml/big"), KC_UNSCHEDULABLE);
    harness_expect_status("over", place_on_card0("ml/over"), KC_UNSCHEDULABLE);
    harness_expect_status("fits", place_on_card0("ml/fits"), KC_SUCCESS);
}

#define TWO_H100_NODES                                                                             \
    "nodes:\n"                                                                                     \
    "  - name: used\n    allocatable: {cpu: 16}\n    annotations:\n"                              \
    "      kcycle.io/gpus: '[{\"count\": 2, \"memory\": 81920}]'\n"                                \
    "  - name: fresh\n    allocatable: {cpu: 16}\n    annotations:\n"                             \
    "      kcycle.io/gpus: '[{\"count\": 2, \"memory\": 81920}]'\n"                                \
    "pods:\n"                                                                                      \
    "  - {name: half, namespace: ml, limits: {nvidia.com/gpu: 1, "                                 \
    "nvidia.com/gpumem-percentage: 50, nvidia.com/gpucores: 50}}\n"                                \
    "  - {name: quarter, namespace: ml, limits: {nvidia.com/gpu: 1, "                              \
    "nvidia.com/gpumem-percentage: 25, nvidia.com/gpucores: 25}}\n"                                \
    "  - {name: whole, namespace: ml, limits: {nvidia.com/gpu: 1}}\n"                              \
    "  - {name: whole-spread, namespace: ml, annotations: {hami.io/node-scheduler-policy: "        \
    "spread}, limits: {nvidia.com/gpu: 1}}\n"

static void expect_scores(const char *pod, int64_t used, int64_t fresh)
{
    harness_expect_status(pod, kc_harness_evaluate(harness, pod), KC_SUCCESS);
    if (kc_harness_score(harness, "used") != used || kc_harness_score(harness, "fresh") != fresh)
        fail_msg("%s (%s): scores used %lld fresh %lld, want %lld and %lld", pod,
                 harness_mode_name(), (long long)kc_harness_score(harness, "used"),
                 (long long)kc_harness_score(harness, "fresh"), (long long)used,
                 (long long)fresh);
}

static void fragmentation_score_keeps_whole_cards_free(void **state)
{
    (void)state;
    harness_start("{}", TWO_H100_NODES);
    harness_expect_status("half", place_on("ml/half", "used"), KC_SUCCESS);
    expect_scores("ml/quarter", 100, 0);
    /* a whole card: no fragmentation either way; the node policy decides (binpack: the used
     * node; spread by annotation or by args: the fresh one) */
    expect_scores("ml/whole", 100, 0);
    expect_scores("ml/whole-spread", 0, 100);
    harness_start("{\"nodePolicy\": \"Spread\"}", TWO_H100_NODES);
    harness_expect_status("half", place_on("ml/half", "used"), KC_SUCCESS);
    expect_scores("ml/whole", 0, 100);
    /* on the used node, the quarter joins the half rather than breaking the free card */
    harness_start("{}", TWO_H100_NODES);
    harness_expect_status("half", place_on("ml/half", "used"), KC_SUCCESS);
    harness_expect_status("quarter", place_on("ml/quarter", "used"), KC_SUCCESS);
    assert_non_null(
        strstr(kc_harness_annotation(harness, "hami.io/vgpu-devices-allocated"), "used-gpu0,"));
}

/* Two zones of 32 CPUs, zone0 and zone1 of them available, as an objects: entry for node. */
static void nrt_into(char *buf, size_t size, const char *node, int zone0, int zone1)
{
    harness_append(buf, size,
                   "  - {\"kind\": \"NodeResourceTopology\", \"apiVersion\": "
                   "\"topology.node.k8s.io/v1alpha2\", \"metadata\": {\"name\": \"%s\"}, "
                   "\"zones\": [{\"name\": \"node-0\", \"type\": \"Node\", \"resources\": "
                   "[{\"name\": \"cpu\", \"capacity\": \"32\", \"allocatable\": \"32\", "
                   "\"available\": \"%d\"}]}, {\"name\": \"node-1\", \"type\": \"Node\", "
                   "\"resources\": [{\"name\": \"cpu\", \"capacity\": 32, \"allocatable\": 32, "
                   "\"available\": %d}]}]}\n",
                   node, zone0, zone1);
}

#define TRAIN_POD(name, numa)                                                                      \
    "  - {name: " name ", namespace: ml" numa ", requests: {cpu: 8}, limits: {nvidia.com/gpu: 2}}\n"
#define SINGLE ", annotations: {kcycle.io/numa-policy: single-numa-node}"

static void single_numa_node_puts_cards_and_cpus_in_one_zone(void **state)
{
    (void)state;
    text[0] = '\0';
    harness_append(text, sizeof(text),
                   "nodes:\n"
                   "  - name: aligned\n    allocatable: {cpu: 64}\n    annotations:\n"
                   "      kcycle.io/gpus: '[{\"count\": 2, \"memory\": 81920, \"numa\": 0}, "
                   "{\"count\": 2, \"memory\": 81920, \"numa\": 1}]'\n"
                   "  - name: split\n    allocatable: {cpu: 64}\n    annotations:\n"
                   "      kcycle.io/gpus: '[{\"memory\": 81920, \"numa\": 0}, {\"memory\": "
                   "81920, \"numa\": 1}]'\n"
                   "  - name: starved\n    allocatable: {cpu: 64}\n    annotations:\n"
                   "      kcycle.io/gpus: '[{\"count\": 2, \"memory\": 81920, \"numa\": 0}, "
                   "{\"memory\": 81920, \"numa\": 1}]'\n"
                   "objects:\n");
    /* aligned: zone 0 has too few CPUs, zone 1 has cards and CPUs; starved: the zone with two
     * cards has no room for the CPUs */
    nrt_into(text, sizeof(text), "aligned", 4, 16);
    nrt_into(text, sizeof(text), "split", 16, 16);
    nrt_into(text, sizeof(text), "starved", 2, 16);
    harness_append(text, sizeof(text), "pods:\n" TRAIN_POD("train", SINGLE) TRAIN_POD("free", ""));
    harness_start("{}", text);
    harness_expect_status("aligned", place_on("ml/train", "aligned"), KC_SUCCESS);
    const char *own = kc_harness_annotation(harness, "kcycle.io/gpu-assignment");
    assert_non_null(own);
    assert_non_null(strstr(own, "\"numaZone\":1"));
    /* the two cards of zone 1 */
    assert_non_null(strstr(own, "\"index\":2,"));
    assert_non_null(strstr(own, "\"index\":3,"));
    harness_expect_status("split", place_on("ml/train", "split"), KC_UNSCHEDULABLE);
    expect_reason("split", "cannot put GPUs and CPUs in one NUMA zone");
    harness_expect_status("starved", place_on("ml/train", "starved"), KC_UNSCHEDULABLE);
    /* without the policy the split node serves it */
    harness_expect_status("free", place_on("ml/free", "split"), KC_SUCCESS);
}

/* numaalign runs first (the plugin under test here is numaalign, gpushare beside it, as in
 * the default profile's order) and takes the CPUs from one zone of a node where both could
 * serve; gpushare reads its choice from the cycle (kcycle.io/numa-zones) and puts the cards
 * there. A pod of 12 CPUs without GPUs (only numaalign's) fills zone 0 for the second case. */
static void the_cards_follow_numaaligns_zone(void **state)
{
    (void)state;
    text[0] = '\0';
    harness_append(text, sizeof(text),
                   "nodes:\n  - name: aligned\n    allocatable: {cpu: 64, memory: 256Gi, "
                   "nvidia.com/gpu: 4}\n    annotations:\n"
                   "      kcycle.io/gpus: '[{\"count\": 2, \"memory\": 81920, \"numa\": 0}, "
                   "{\"count\": 2, \"memory\": 81920, \"numa\": 1}]'\n"
                   "objects:\n  - {\"kind\": \"NodeResourceTopology\", \"apiVersion\": "
                   "\"topology.node.k8s.io/v1alpha2\", \"metadata\": {\"name\": \"aligned\"}, "
                   "\"attributes\": [{\"name\": \"topologyManagerPolicy\", \"value\": "
                   "\"single-numa-node\"}], \"zones\": [");
    for (int z = 0; z < 2; z++)
        harness_append(text, sizeof(text),
                       "%s{\"name\": \"node-%d\", \"type\": \"Node\", \"resources\": [{\"name\": "
                       "\"cpu\", \"capacity\": \"32\", \"allocatable\": \"32\", \"available\": "
                       "\"16\"}, {\"name\": \"memory\", \"capacity\": \"64Gi\", \"available\": "
                       "\"64Gi\"}, {\"name\": \"nvidia.com/gpu\", \"capacity\": 2, "
                       "\"available\": 2}]}",
                       z > 0 ? ", " : "", z);
    harness_append(text, sizeof(text),
                   "]}\npods:\n"
                   "  - metadata: {name: train, namespace: ml, annotations: "
                   "{kcycle.io/numa-policy: single-numa-node}}\n    spec:\n      containers:\n"
                   "        - {name: main, resources: {requests: {cpu: 8, memory: 8Gi, "
                   "nvidia.com/gpu: 2}, limits: {cpu: 8, memory: 8Gi, nvidia.com/gpu: 2}}}\n"
                   "  - metadata: {name: filler, namespace: ml}\n    spec:\n      containers:\n"
                   "        - {name: main, resources: {requests: {cpu: 12, memory: 4Gi}, "
                   "limits: {cpu: 12, memory: 4Gi}}}\n");
    const char *const more[] = {KC_PLUGIN_PATH, NULL};
    for (int zone = 0; zone < 2; zone++) {
        kc_harness_close(harness);
        harness = NULL;
        char error[1024] = "";
        kc_harness_options o = {.struct_size = sizeof(o),
                                .mode = harness_mode,
                                .plugin = KC_PLUGIN_PATH_NUMAALIGN,
                                .cluster_yaml = text,
                                .more_plugins = more};
        if (kc_harness_open(&o, &harness, error, sizeof(error)) < 0)
            fail_msg("%s: %s", harness_mode_name(), error);
        if (zone == 1)
            harness_expect_status("filler", place_on("ml/filler", "aligned"), KC_SUCCESS);
        harness_expect_status("train", place_on("ml/train", "aligned"), KC_SUCCESS);
        char want[16];
        snprintf(want, sizeof(want), "%d", zone);
        assert_string_equal(kc_harness_annotation(harness, "kcycle.io/numa-zones"), want);
        snprintf(want, sizeof(want), "\"numaZone\":%d", zone);
        const char *own = kc_harness_annotation(harness, "kcycle.io/gpu-assignment");
        if (own == NULL || strstr(own, want) == NULL)
            fail_msg("%s: zone %d: assignment %s", harness_mode_name(), zone,
                     own != NULL ? own : "(none)");
    }
}

/* Cards from a NodeResourceTopology's zones (whole cards, memory from GFD's label). */
static void nrt_zones_give_whole_cards_in_their_zones(void **state)
{
    (void)state;
    harness_start("{}",
                  "nodes:\n  - name: nrt\n    allocatable: {cpu: 64}\n    labels: "
                  "{nvidia.com/gpu.memory: '81920', nvidia.com/gpu.product: "
                  "NVIDIA-H100-80GB-HBM3}\n"
                  "objects:\n  - {\"kind\": \"NodeResourceTopology\", \"apiVersion\": "
                  "\"topology.node.k8s.io/v1alpha2\", \"metadata\": {\"name\": \"nrt\"}, "
                  "\"zones\": [{\"name\": \"node-0\", \"resources\": [{\"name\": \"cpu\", "
                  "\"available\": \"2\"}, {\"name\": \"nvidia.com/gpu\", \"capacity\": \"2\"}]}, "
                  "{\"name\": \"node-1\", \"resources\": [{\"name\": \"cpu\", \"available\": "
                  "\"30500m\"}, {\"name\": \"nvidia.com/gpu\", \"capacity\": 2}]}]}\n"
                  "pods:\n"
                  "  - {name: pair, namespace: ml" SINGLE ", requests: {cpu: 16}, limits: "
                  "{nvidia.com/gpu: 2}}\n"
                  "  - {name: pair-2, namespace: ml" SINGLE ", requests: {cpu: 16}, limits: "
                  "{nvidia.com/gpu: 2}}\n");
    harness_expect_status("pair", place_on("ml/pair", "nrt"), KC_SUCCESS);
    /* the whole cards 2 and 3 of zone 1, with the label's memory */
    assert_string_equal(kc_harness_annotation(harness, "kcycle.io/gpu-assignment"),
                        "{\"node\":\"nrt\",\"containers\":[{\"name\":\"main\",\"cards\":["
                        "{\"uuid\":\"nrt-gpu2\",\"index\":2,\"memory\":81920,\"cores\":100},"
                        "{\"uuid\":\"nrt-gpu3\",\"index\":3,\"memory\":81920,\"cores\":100}]}],"
                        "\"numaZone\":1}");
    /* a second pair: zone 1's cards are taken, zone 0 has too few CPUs */
    harness_expect_status("pair-2", place_on("ml/pair-2", "nrt"), KC_UNSCHEDULABLE);
    expect_reason("pair-2", "cannot put GPUs and CPUs in one NUMA zone");
}

static void nodes_without_gpus_and_gfd_labels(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - {name: plain, allocatable: {cpu: 4}}\n"
                        "  - name: gfd\n    allocatable: {cpu: 4}\n    labels: "
                        "{nvidia.com/gpu.product: Tesla-T4, nvidia.com/gpu.memory: '15360', "
                        "nvidia.com/gpu.count: '2'}\n"
                        "pods:\n  - {name: w, namespace: ml, limits: {nvidia.com/gpu: 1}}\n"
                        "  - {name: frac, namespace: ml, limits: {nvidia.com/gpu: 1, "
                        "nvidia.com/gpumem: 1024}}\n");
    harness_expect_status("plain", place_on("ml/w", "plain"), KC_UNSCHEDULABLE);
    expect_reason("plain", "node has no GPUs");
    harness_expect_status("gfd", place_on("ml/w", "gfd"), KC_SUCCESS);
    /* GFD cards are whole cards only */
    harness_expect_status("frac", place_on("ml/frac", "gfd"), KC_UNSCHEDULABLE);
    expect_reason("frac", "GPU mode does not match the request (whole, shared or MIG)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(cards_are_shared_and_never_overcommitted),
        HARNESS_TEST(reserve_writes_hami_and_kcycle_annotations),
        HARNESS_TEST(type_and_uuid_selection_is_honoured),
        HARNESS_TEST(args_are_checked),
        HARNESS_TEST(handshake_requesting_too_long_makes_the_node_stale),
        HARNESS_TEST(reserve_writes_the_scheduler_clock_and_the_assignment),
        HARNESS_TEST(bad_request_is_unresolvable_naming_the_pod),
        HARNESS_TEST(pod_without_gpus_is_skipped),
        HARNESS_TEST(bad_requests_are_refused_naming_container_and_value),
        HARNESS_TEST(overlong_selection_annotations_are_refused),
        HARNESS_TEST(hami_defaults_apply_to_requests),
        HARNESS_TEST(a_deleted_user_frees_a_share_not_the_whole_card),
        HARNESS_TEST(mig_pods_get_instances_on_mig_cards),
        HARNESS_TEST(restart_rebuilds_the_ledger_from_decision_annotations),
        HARNESS_TEST(adopted_overcommit_is_kept_whichever_arrives_first),
        HARNESS_TEST(forged_assignment_does_not_free_a_held_card),
        HARNESS_TEST(fragmentation_score_keeps_whole_cards_free),
        HARNESS_TEST(single_numa_node_puts_cards_and_cpus_in_one_zone),
        HARNESS_TEST(the_cards_follow_numaaligns_zone),
        HARNESS_TEST(nrt_zones_give_whole_cards_in_their_zones),
        HARNESS_TEST(nodes_without_gpus_and_gfd_labels),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
