/* gpushare on the plugin test harness, in both isolation modes: cards shared by memory, cores
 * and users and never overcommitted, as pods are placed one after the other (Filter, then
 * Reserve on the chosen node), with the reasons kube's users see; the HAMi and kcycle
 * annotations Reserve writes on the Binding; and the cards a pod's type and UUID annotations
 * select. The parsers, the ledger's invariants, MIG and the adoption of bound pods stay in
 * test_gpushare.c on the fake host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(cards_are_shared_and_never_overcommitted),
        HARNESS_TEST(reserve_writes_hami_and_kcycle_annotations),
        HARNESS_TEST(type_and_uuid_selection_is_honoured),
        HARNESS_TEST(args_are_checked),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
