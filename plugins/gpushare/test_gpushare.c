/* gpushare against the fake host: HAMi's registration and decision formats (the documented
 * examples), request parsing and its refusals, MIG placement by the NVIDIA profiles, the ledger
 * under 10,000 random assume/forget/delete/update operations, rebuilding after a restart, and
 * GPUs with CPUs in one NUMA zone. Cards shared as pods are placed, the annotations of Reserve
 * and the cards a pod's type and UUID annotations select run on the harness in both modes
 * (test_gpushare_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "fake_host.h"
#include "gpushare.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static const kc_plugin_ops *ops;
static void *self;

/* HAMi's protocol document: a node with two 32 GB V100s. */
static const char *const HAMI_DOC_REGISTER =
    "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:";

static const char *const HAMI_DOC_REGISTER_NINE =
    "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true,0,"
    "hami-core:GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla "
    "V100-PCIE-32GB,0,true,1,hami-core:";

static const char *const EIGHT_A100 =
    "[{\"count\": 4, \"model\": \"NVIDIA-A100-SXM4-80GB\", \"memory\": 81920, \"numa\": 0},"
    " {\"count\": 4, \"model\": \"NVIDIA-A100-SXM4-80GB\", \"memory\": 81920, \"numa\": 1}]";

static int open_plugin(const char *args)
{
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    return ops->init(fake_host_api(), args, &self);
}

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    assert_int_equal(open_plugin("{}"), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ops->fini(self);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

static void node_with(kc_node *node, const char *name, const char *key, const char *value)
{
    fake_node_init(node, name);
    node->annotations[0].key = key;
    node->annotations[0].value = value;
    node->annotation_count = 1;
}

static void node_event(kc_event_type type, const kc_node *node)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .node = node};
    ops->on_event(self, &ev);
}

static void pod_event(kc_event_type type, const kc_pod *pod)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .pod = pod};
    ops->on_event(self, &ev);
}

static void set_limit(kc_pod *pod, uint32_t container, const char *resource, int64_t value)
{
    kc_resource id = kc_host->resource_id(resource);
    pod->containers[container].limit[id] = value;
    pod->request[id] += value;
    if (pod->container_count <= container)
        pod->container_count = container + 1;
    if (pod->containers[container].name == NULL)
        pod->containers[container].name = container == 0 ? "main" : "side";
}

/* One container asking for cards, MiB per card (or a percentage), and cores. */
static void gpu_pod(kc_pod *pod, const char *name, int64_t cards, int64_t memory, int64_t percent,
                    int64_t cores)
{
    fake_pod_init(pod, "ml", name);
    pod->containers[0].name = "main";
    pod->container_count = 1;
    if (cards > 0)
        set_limit(pod, 0, "nvidia.com/gpu", cards);
    if (memory > 0)
        set_limit(pod, 0, "nvidia.com/gpumem", memory);
    if (percent > 0)
        set_limit(pod, 0, "nvidia.com/gpumem-percentage", percent);
    if (cores > 0)
        set_limit(pod, 0, "nvidia.com/gpucores", cores);
}

static void add_annotation(kc_pod *pod, const char *key, const char *value)
{
    pod->annotations[pod->annotation_count].key = key;
    pod->annotations[pod->annotation_count++].value = value;
}

static const char *annotation_of(const kc_cycle *cycle, const char *key)
{
    for (uint32_t i = 0; i < cycle->annotation_count; i++) {
        if (strcmp(cycle->annotations[i].key, key) == 0)
            return cycle->annotations[i].value;
    }
    return NULL;
}

/* PreFilter, Filter and Reserve on one node; the cycle keeps the reasons and annotations. */
static kc_status place(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    fake_cycle_init(cycle);
    kc_status status = ops->pre_filter(self, cycle, pod);
    if (status != KC_SUCCESS)
        return status;
    status = ops->filter(self, cycle, pod, node);
    if (status != KC_SUCCESS)
        return status;
    return ops->reserve(self, cycle, pod, node);
}

static const char *first_reason(const kc_cycle *cycle)
{
    return cycle->reason_count > 0 ? cycle->reasons[0] : "";
}

/* Registration ------------------------------------------------------------------------- */

static void hami_register_documented_example_parses(void **state)
{
    (void)state;
    struct gpu_node node;
    char why[GPU_REASON_LEN];
    assert_int_equal(inventory_from_hami(HAMI_DOC_REGISTER, &node, why, sizeof(why)), 0);
    assert_int_equal(node.card_count, 2);
    assert_string_equal(node.cards[0].uuid, "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec");
    assert_string_equal(node.cards[1].model, "NVIDIA-Tesla V100-PCIE-32GB");
    assert_int_equal(node.cards[1].memory_mib, 32768);
    assert_int_equal(node.cards[1].split, 10);
    assert_int_equal(node.cards[1].cores, 100);
    assert_int_equal(node.cards[1].index, 1); /* seven fields: the position */
    assert_true(node.cards[0].healthy);
    assert_int_equal(node.cards[0].mode, CARD_SHARED);

    /* the protocol document's nine-field example */
    assert_int_equal(inventory_from_hami(HAMI_DOC_REGISTER_NINE, &node, why, sizeof(why)), 0);
    assert_int_equal(node.card_count, 2);
    assert_string_equal(node.cards[1].uuid, "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448");
    assert_int_equal(node.cards[1].index, 1);
    assert_int_equal(node.cards[1].mode, CARD_SHARED);
    assert_int_equal(node.cards[1].memory_mib, 32768);

    /* nine fields: index and mode; a MIG card gets its family's profiles */
    assert_int_equal(inventory_from_hami("GPU-a,4,81920,100,NVIDIA-A100-SXM4-80GB,1,true,3,mig:"
                                         "GPU-b,10,81920,100,NVIDIA-A100-SXM4-80GB,1,false,5,"
                                         "hami-core:",
                                         &node, why, sizeof(why)),
                     0);
    assert_int_equal(node.card_count, 2);
    assert_int_equal(node.cards[0].index, 3);
    assert_int_equal(node.cards[0].mode, CARD_MIG);
    assert_string_equal(node.cards[0].mig->name, "A100-80GB");
    assert_int_equal(node.cards[0].numa, 1);
    assert_false(node.cards[1].healthy);
    assert_int_equal(node.cards[1].index, 5);

    /* newer HAMi writes JSON */
    assert_int_equal(inventory_from_hami("[{\"id\":\"GPU-j\",\"index\":2,\"count\":8,"
                                         "\"devmem\":24576,\"devcore\":100,\"type\":\"NVIDIA-L4\","
                                         "\"numa\":1,\"mode\":\"hami-core\",\"health\":true}]",
                                         &node, why, sizeof(why)),
                     0);
    assert_int_equal(node.card_count, 1);
    assert_string_equal(node.cards[0].uuid, "GPU-j");
    assert_int_equal(node.cards[0].split, 8);
    assert_int_equal(node.cards[0].memory_mib, 24576);

    /* eight fields is neither form */
    assert_int_equal(
        inventory_from_hami("GPU-a,4,81920,100,A100,1,true,3:", &node, why, sizeof(why)), -22);
    assert_non_null(strstr(why, "8 fields"));
    assert_int_equal(inventory_from_hami("GPU-a,x,81920,100,A100,1,true:", &node, why, sizeof(why)),
                     -22);
}

static void kcycle_gpus_annotation_parses_and_refuses_unknown_keys(void **state)
{
    (void)state;
    struct gpu_node node;
    char why[GPU_REASON_LEN];
    assert_int_equal(inventory_from_kcycle(EIGHT_A100, "n1", &node, why, sizeof(why)), 0);
    assert_int_equal(node.card_count, 8);
    assert_string_equal(node.cards[5].uuid, "n1-gpu5");
    assert_int_equal(node.cards[5].numa, 1);
    assert_int_equal(node.cards[5].index, 5);
    assert_int_equal(inventory_from_kcycle("[{\"memory\": \"40Gi\", \"mode\": \"mig\", \"model\": "
                                           "\"A100-PCIE-40GB\", \"uuid\": \"GPU-x\"}]",
                                           "n1", &node, why, sizeof(why)),
                     0);
    assert_int_equal(node.cards[0].memory_mib, 40960);
    assert_string_equal(node.cards[0].mig->name, "A100-40GB");
    assert_string_equal(node.cards[0].uuid, "GPU-x");
    assert_int_equal(
        inventory_from_kcycle("[{\"memory\": 1, \"colour\": 2}]", "n1", &node, why, sizeof(why)),
        -22);
    assert_non_null(strstr(why, "unknown key \"colour\""));
    assert_int_equal(
        inventory_from_kcycle("[{\"memory\": 1, \"mode\": \"mig\", \"model\": \"T4\"}]", "n1",
                              &node, why, sizeof(why)),
        -22);
}

static int64_t fake_calendar_ms(void)
{
    return fake_host.now_ms;
}

static void handshake_requesting_too_long_makes_the_node_stale(void **state)
{
    (void)state;
    gpushare_set_calendar(self, fake_calendar_ms);
    kc_node node;
    fake_node_init(&node, "v100");
    node.annotations[0] = (struct fake_kv){"hami.io/node-nvidia-register", HAMI_DOC_REGISTER};
    node.annotations[1] =
        (struct fake_kv){"hami.io/node-handshake-nvidia", "Requesting_2024-05-14 07:07:33"};
    node.annotation_count = 2;
    int64_t requested = parse_hami_time("2024-05-14 07:07:33");
    assert_int_equal(requested, 1715670453000LL);
    assert_int_equal(parse_hami_time("2024.05.14 07:07:33"), requested); /* older releases */
    assert_int_equal(parse_hami_time("2024/05/14 07:07:33"), -1);
    fake_host.now_ms = requested + 50000; /* within HAMi's 60 s */
    node_event(KC_EVENT_NODE_ADD, &node);
    kc_pod pod;
    gpu_pod(&pod, "p", 1, 1024, 0, 10);
    kc_cycle cycle;
    assert_int_equal(place(&cycle, &pod, &node), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    pod_event(KC_EVENT_POD_FORGET, &pod);
    fake_host.now_ms = requested + 61000;
    assert_int_equal(place(&cycle, &pod, &node), KC_UNSCHEDULABLE);
    assert_non_null(strstr(first_reason(&cycle), "GPU registration stale"));
    fake_cycle_clear(&cycle);
    /* HAMi's exception: the kubelet still advertises the cards */
    fake_node_set_allocatable(&node, "nvidia.com/gpu", 20);
    assert_int_equal(place(&cycle, &pod, &node), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    pod_event(KC_EVENT_POD_FORGET, &pod);
    fake_node_set_allocatable(&node, "nvidia.com/gpu", 0);
    /* the device plugin answered */
    node.annotations[1].value = "Reported 2024-05-14 07:08:03.434037031 +0000 UTC";
    node_event(KC_EVENT_NODE_UPDATE, &node);
    assert_int_equal(place(&cycle, &pod, &node), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    node.annotations[1].value = "Deleted";
    node_event(KC_EVENT_NODE_UPDATE, &node);
    pod_event(KC_EVENT_POD_DELETE, &pod);
    assert_int_equal(place(&cycle, &pod, &node), KC_UNSCHEDULABLE);
    assert_non_null(strstr(first_reason(&cycle), "Deleted"));
    fake_cycle_clear(&cycle);
}

/* Decisions ----------------------------------------------------------------------------- */

static void hami_decision_round_trips_the_documented_example(void **state)
{
    (void)state;
    /* HAMi's protocol document: two containers, one GPU each, 3000 and 5000 MiB */
    const char *documented = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,0:;"
                             "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,5000,0:;";
    struct charge charge;
    assert_int_equal(hami_decode(documented, &charge), 0);
    assert_int_equal(charge.count, 2);
    assert_string_equal(charge.items[0].uuid, "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448");
    assert_int_equal(charge.items[0].memory_mib, 3000);
    assert_int_equal(charge.items[1].memory_mib, 5000);
    assert_int_equal(charge.items[1].cores, 0);

    /* written back from a placement of the same decision */
    struct gpu_node node;
    memset(&node, 0, sizeof(node));
    snprintf(node.name, sizeof(node.name), "node67-4v100");
    node.card_count = 2;
    snprintf(node.cards[0].uuid, GPU_UUID_LEN, "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec");
    snprintf(node.cards[1].uuid, GPU_UUID_LEN, "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448");
    struct pod_request request;
    memset(&request, 0, sizeof(request));
    request.count = 2;
    request.containers[0].index = 0;
    request.containers[1].index = 1;
    struct placement placement = {.count = 2, .zone = -1};
    placement.items[0] = (struct assignment){0, 1, -1, 3000, 0, false};
    placement.items[1] = (struct assignment){1, 1, -1, 5000, 0, false};
    char text[512];
    assert_true(hami_encode(&node, &request, &placement, 2, text, sizeof(text)) > 0);
    assert_string_equal(text, documented);

    /* a container without GPUs keeps its place; several cards in one container */
    request.containers[1].index = 2;
    placement.count = 3;
    placement.items[1] = (struct assignment){1, 0, -1, 1000, 10, false};
    placement.items[2] = (struct assignment){1, 1, -1, 1000, 10, false};
    assert_true(hami_encode(&node, &request, &placement, 3, text, sizeof(text)) > 0);
    assert_string_equal(text, "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,0:;;"
                              "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,NVIDIA,1000,10:"
                              "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,1000,10:;");
    assert_int_equal(hami_decode(text, &charge), 0);
    assert_int_equal(charge.count, 3);
    assert_string_equal(charge.items[1].uuid, "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec");
    assert_int_equal(charge.items[2].cores, 10);
    assert_int_equal(hami_decode("GPU-a,NVIDIA,12:;", &charge), -22);
    assert_int_equal(hami_decode("GPU-a,NVIDIA,x,3:;", &charge), -22);
}

static void reserve_writes_hami_and_kcycle_annotations(void **state)
{
    (void)state;
    kc_node node;
    node_with(&node, "v100", "hami.io/node-nvidia-register", HAMI_DOC_REGISTER);
    node_event(KC_EVENT_NODE_ADD, &node);
    fake_host.now_ms = 1700000000123LL;
    kc_pod pod;
    gpu_pod(&pod, "p", 1, 3000, 0, 30);
    kc_cycle cycle;
    assert_int_equal(place(&cycle, &pod, &node), KC_SUCCESS);
    const char *hami = annotation_of(&cycle, "hami.io/vgpu-devices-to-allocate");
    assert_non_null(hami);
    assert_non_null(strstr(hami, ",NVIDIA,3000,30:;"));
    assert_string_equal(annotation_of(&cycle, "hami.io/vgpu-devices-allocated"), hami);
    assert_string_equal(annotation_of(&cycle, "hami.io/vgpu-node"), "v100");
    assert_string_equal(annotation_of(&cycle, "hami.io/vgpu-time"), "1700000000");
    assert_string_equal(annotation_of(&cycle, "hami.io/bind-phase"), "allocating");
    json_t *own = json_loads(annotation_of(&cycle, "kcycle.io/gpu-assignment"), 0, NULL);
    assert_non_null(own);
    json_t *card = json_array_get(
        json_object_get(json_array_get(json_object_get(own, "containers"), 0), "cards"), 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(own, "containers"), 0), "name")),
                        "main");
    assert_int_equal(json_integer_value(json_object_get(card, "memory")), 3000);
    assert_int_equal(json_integer_value(json_object_get(card, "cores")), 30);
    assert_non_null(strstr(hami, json_string_value(json_object_get(card, "uuid"))));
    json_decref(own);
    fake_cycle_clear(&cycle);
}

/* Requests ------------------------------------------------------------------------------ */

static void expect_refusal(const kc_pod *pod, const char *needle)
{
    struct pod_request request;
    char reason[GPU_REASON_LEN];
    reason[0] = '\0';
    assert_int_equal(request_parse(pod, POLICY_BINPACK, &request, reason, sizeof(reason)), -22);
    if (strstr(reason, needle) == NULL)
        fail_msg("reason \"%s\" does not contain \"%s\"", reason, needle);
}

static void bad_requests_are_refused_naming_container_and_value(void **state)
{
    (void)state;
    kc_pod pod;
    gpu_pod(&pod, "p", 1, 0, 0, 150);
    expect_refusal(&pod, "container \"main\": nvidia.com/gpucores is 150; expected 0 to 100");
    gpu_pod(&pod, "p", 1, 0, 120, 0);
    expect_refusal(&pod, "container \"main\": nvidia.com/gpumem-percentage is 120");
    gpu_pod(&pod, "p", 1, 8LL << 30, 0, 0);
    expect_refusal(&pod, "nvidia.com/gpumem is 8589934592; expected MiB per card");
    gpu_pod(&pod, "p", 17, 0, 0, 0);
    expect_refusal(&pod, "nvidia.com/gpu is 17; expected at most 16");
    gpu_pod(&pod, "p", 1, 4096, 0, 0);
    set_limit(&pod, 0, "kcycle.io/gpu-memory", 2048);
    expect_refusal(&pod, "nvidia.com/gpumem is 4096 but kcycle.io/gpu-memory is 2048");
    gpu_pod(&pod, "p", 0, 4096, 0, 0);
    set_limit(&pod, 0, "nvidia.com/mig-1g.10gb", 1);
    expect_refusal(&pod, "nvidia.com/mig-1g.10gb cannot be combined");
    gpu_pod(&pod, "p", 0, 0, 0, 0);
    set_limit(&pod, 0, "nvidia.com/mig-big", 1);
    expect_refusal(&pod, "nvidia.com/mig-big is not a MIG profile");
    gpu_pod(&pod, "p", 0, 0, 0, 0);
    set_limit(&pod, 0, "nvidia.com/mig-1g.10gb", 1);
    set_limit(&pod, 0, "nvidia.com/mig-3g.40gb", 1);
    expect_refusal(&pod, "two MIG profiles");
    gpu_pod(&pod, "p", 1, 0, 0, 0);
    add_annotation(&pod, "hami.io/gpu-scheduler-policy", "tight");
    expect_refusal(&pod, "hami.io/gpu-scheduler-policy is \"tight\"; expected binpack or spread");
    gpu_pod(&pod, "p", 1, 0, 0, 0);
    add_annotation(&pod, "kcycle.io/numa-policy", "restricted");
    expect_refusal(&pod, "kcycle.io/numa-policy is \"restricted\"");
    gpu_pod(&pod, "p", 0, 0, 0, 0);
    pod.init_containers[0].name = "setup";
    pod.init_containers[0].limit[kc_host->resource_id("nvidia.com/gpu")] = 1;
    pod.init_container_count = 1;
    expect_refusal(&pod, "init container \"setup\" asks for GPUs");

    /* PreFilter turns a refusal into an unresolvable attempt naming the pod */
    gpu_pod(&pod, "bad", 1, 0, 0, 150);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_UNRESOLVABLE);
    assert_non_null(strstr(first_reason(&cycle), "pod ml/bad: container \"main\""));
    fake_cycle_clear(&cycle);
}

/* A selection list the plugin cannot hold whole is refused: a cut nouse list would let through
 * the cards named after the cut. */
static void overlong_selection_annotations_are_refused(void **state)
{
    (void)state;
    static const char *const keys[] = {"nvidia.com/use-gputype", "nvidia.com/nouse-gputype",
                                       "nvidia.com/use-gpuuuid", "nvidia.com/nouse-gpuuuid"};
    static char list[1024];
    size_t used = 0;
    for (int i = 0; used + 48 < sizeof(list); i++)
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%sGPU-%08d-0000-0000-0000",
                                 i > 0 ? "," : "", i);
    kc_pod pod;
    char needle[128];
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        gpu_pod(&pod, "p", 1, 1024, 0, 0);
        add_annotation(&pod, keys[k], list);
        snprintf(needle, sizeof(needle), "annotation %s is %zu bytes long; at most", keys[k],
                 strlen(list));
        expect_refusal(&pod, needle);
    }
    /* the longest value that fits is taken whole */
    static char longest[512];
    memset(longest, 'x', sizeof(longest) - 1);
    gpu_pod(&pod, "p", 1, 1024, 0, 0);
    add_annotation(&pod, "nvidia.com/nouse-gpuuuid", longest);
    struct pod_request request;
    char reason[GPU_REASON_LEN] = "";
    assert_int_equal(request_parse(&pod, POLICY_BINPACK, &request, reason, sizeof(reason)), 0);
    assert_int_equal(strlen(request.nouse_uuid), 511);
}

static void hami_defaults_apply_to_requests(void **state)
{
    (void)state;
    kc_pod pod;
    struct pod_request request;
    char reason[GPU_REASON_LEN];
    gpu_pod(&pod, "whole", 2, 0, 0, 0); /* cards only: whole cards, held alone */
    assert_int_equal(request_parse(&pod, POLICY_BINPACK, &request, reason, sizeof(reason)), 0);
    assert_int_equal(request.count, 1);
    assert_int_equal(request.containers[0].cards, 2);
    assert_int_equal(request.containers[0].memory_percent, 100);
    assert_int_equal(request.containers[0].cores, 100);
    gpu_pod(&pod, "memory-only", 0, 2048, 0, 0); /* one card by default, no cores reserved */
    assert_int_equal(request_parse(&pod, POLICY_BINPACK, &request, reason, sizeof(reason)), 0);
    assert_int_equal(request.containers[0].cards, 1);
    assert_int_equal(request.containers[0].memory_mib, 2048);
    assert_int_equal(request.containers[0].cores, 0);
    gpu_pod(&pod, "synonym", 0, 0, 0, 0);
    set_limit(&pod, 0, "kcycle.io/gpu-memory", 1024);
    set_limit(&pod, 0, "kcycle.io/gpu-cores", 20);
    assert_int_equal(request_parse(&pod, POLICY_BINPACK, &request, reason, sizeof(reason)), 0);
    assert_int_equal(request.containers[0].memory_mib, 1024);
    assert_int_equal(request.containers[0].cores, 20);
    gpu_pod(&pod, "cpu-only", 0, 0, 0, 0);
    assert_int_equal(request_parse(&pod, POLICY_BINPACK, &request, reason, sizeof(reason)), 0);
    assert_int_equal(request.count, 0);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    fake_cycle_clear(&cycle);
}

/* Sharing ------------------------------------------------------------------------------- */

static void cards_are_shared_by_memory_cores_and_users_never_overcommitted(void **state)
{
    (void)state;
    kc_node node;
    node_with(
        &node, "l4", "kcycle.io/gpus",
        "[{\"memory\": 24576, \"split\": 3, \"uuid\": \"GPU-l4\", \"model\": \"NVIDIA-L4\"}]");
    node_event(KC_EVENT_NODE_ADD, &node);
    kc_pod pods[4];
    kc_cycle cycle;
    char names[4][8];
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof(names[i]), "s%d", i);
        gpu_pod(&pods[i], names[i], 1, 4096, 0, 30);
        assert_int_equal(place(&cycle, &pods[i], &node), KC_SUCCESS);
        fake_cycle_clear(&cycle);
    }
    gpu_pod(&pods[3], "s3", 1, 1024, 0, 1);
    assert_int_equal(place(&cycle, &pods[3], &node), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "GPU sharing limit reached");
    fake_cycle_clear(&cycle);
    pod_event(KC_EVENT_POD_DELETE, &pods[0]);
    gpu_pod(&pods[3], "s3", 1, 0, 0, 0); /* the whole card: others hold it */
    assert_int_equal(place(&cycle, &pods[3], &node), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "GPU held exclusively");
    fake_cycle_clear(&cycle);
    gpu_pod(&pods[3], "s3", 1, 20000, 0, 10);
    assert_int_equal(place(&cycle, &pods[3], &node), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "Insufficient GPU memory");
    fake_cycle_clear(&cycle);
    gpu_pod(&pods[3], "s3", 1, 1000, 0, 50);
    assert_int_equal(place(&cycle, &pods[3], &node), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "Insufficient GPU cores");
    fake_cycle_clear(&cycle);
    gpu_pod(&pods[3], "s3", 1, 1000, 0, 40);
    assert_int_equal(place(&cycle, &pods[3], &node), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    /* a card that reports no cores is shared by memory alone */
    kc_node coreless;
    node_with(&coreless, "coreless", "kcycle.io/gpus",
              "[{\"memory\": 16384, \"cores\": 0, \"uuid\": \"GPU-c\"}]");
    node_event(KC_EVENT_NODE_ADD, &coreless);
    kc_pod shares[2];
    gpu_pod(&shares[0], "c0", 1, 8192, 0, 0);
    gpu_pod(&shares[1], "c1", 1, 8192, 0, 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(place(&cycle, &shares[i], &coreless), KC_SUCCESS);
        fake_cycle_clear(&cycle);
    }
}

/* MIG ----------------------------------------------------------------------------------- */

static void mig_profiles_follow_the_nvidia_placement_rules(void **state)
{
    (void)state;
    const struct mig_family *a100 = mig_family_find("A100-40GB");
    const struct mig_profile *one = mig_profile_find(a100, "1g.5gb");
    const struct mig_profile *two = mig_profile_find(a100, "2g.10gb");
    const struct mig_profile *three = mig_profile_find(a100, "3g.20gb");
    const struct mig_profile *four = mig_profile_find(a100, "4g.20gb");
    const struct mig_profile *seven = mig_profile_find(a100, "7g.40gb");
    assert_null(mig_profile_find(a100, "1g.10gb+me"));
    /* seven 1g.5gb, never an eighth */
    uint8_t mask = 0;
    for (int i = 0; i < 7; i++) {
        int start = mig_place(a100, one, mask);
        assert_true(start >= 0 && start <= 6);
        mask |= mig_mask(one, start);
    }
    assert_int_equal(mig_place(a100, one, mask), -1);
    /* two 3g.20gb at 0 and 4 */
    mask = 0;
    assert_int_equal(mig_place(a100, three, mask), 4);
    mask |= mig_mask(three, 4);
    assert_int_equal(mig_place(a100, three, mask), 0);
    mask |= mig_mask(three, 0);
    assert_int_equal(mig_place(a100, one, mask), -1);
    /* a 4g.20gb only at 0, then a 3g.20gb at 4 but no second 4g */
    mask = mig_mask(four, mig_place(a100, four, 0));
    assert_int_equal(mask, 0x0f);
    assert_int_equal(mig_place(a100, four, mask), -1);
    assert_int_equal(mig_place(a100, three, mask), 4);
    /* three 2g.10gb (0, 2, 4), then one 1g.5gb at 6 and nothing at 7 */
    mask = 0;
    for (int i = 0; i < 3; i++)
        mask |= mig_mask(two, mig_place(a100, two, mask));
    assert_int_equal(mask, 0x3f);
    assert_int_equal(mig_place(a100, one, mask), 6);
    mask |= mig_mask(one, 6);
    assert_int_equal(mig_place(a100, one, mask), -1);
    /* 7g.40gb needs the whole card; a first 1g.5gb keeps the 4g.20gb placeable */
    assert_int_equal(mig_place(a100, seven, 0), 0);
    int first = mig_place(a100, one, 0);
    assert_int_equal(mig_place(a100, seven, mig_mask(one, first)), -1);
    assert_true(mig_place(a100, four, mig_mask(one, first)) == 0);
    /* A30: four slices */
    const struct mig_family *a30 = mig_family_find("A30-24GB");
    const struct mig_profile *small = mig_profile_find(a30, "1g.6gb");
    mask = 0;
    for (int i = 0; i < 4; i++)
        mask |= mig_mask(small, mig_place(a30, small, mask));
    assert_int_equal(mask, 0x0f);
    assert_int_equal(mig_place(a30, small, mask), -1);
    assert_true(mig_name_valid("1g.10gb"));
    assert_true(mig_name_valid("1g.10gb+me"));
    assert_false(mig_name_valid("1g10gb"));
    assert_false(mig_name_valid("g.10gb"));
}

static void mig_pods_get_instances_on_mig_cards(void **state)
{
    (void)state;
    kc_node node;
    node_with(&node, "h100", "kcycle.io/gpus",
              "[{\"memory\": 81920, \"model\": \"NVIDIA-H100-80GB-HBM3\", \"mode\": \"mig\","
              " \"uuid\": \"GPU-h\"}, {\"memory\": 81920, \"model\": \"NVIDIA-H100-80GB-HBM3\","
              " \"uuid\": \"GPU-shared\"}]");
    node_event(KC_EVENT_NODE_ADD, &node);
    kc_pod pods[3];
    kc_cycle cycle;
    const char *names[] = {"m0", "m1", "m2"};
    for (int i = 0; i < 2; i++) {
        gpu_pod(&pods[i], names[i], 0, 0, 0, 0);
        set_limit(&pods[i], 0, "nvidia.com/mig-3g.40gb", 1);
        assert_int_equal(place(&cycle, &pods[i], &node), KC_SUCCESS);
        json_t *own = json_loads(annotation_of(&cycle, "kcycle.io/gpu-assignment"), 0, NULL);
        json_t *card = json_array_get(
            json_object_get(json_array_get(json_object_get(own, "containers"), 0), "cards"), 0);
        assert_string_equal(json_string_value(json_object_get(card, "uuid")), "GPU-h");
        assert_string_equal(json_string_value(json_object_get(card, "mig")), "3g.40gb");
        assert_int_equal(json_integer_value(json_object_get(card, "migStart")), i == 0 ? 4 : 0);
        json_decref(own);
        fake_cycle_clear(&cycle);
    }
    gpu_pod(&pods[2], names[2], 0, 0, 0, 0);
    set_limit(&pods[2], 0, "nvidia.com/mig-1g.10gb", 1);
    assert_int_equal(place(&cycle, &pods[2], &node), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "no free MIG placement for nvidia.com/mig-1g.10gb");
    fake_cycle_clear(&cycle);
    pod_event(KC_EVENT_POD_FORGET, &pods[0]);
    assert_int_equal(place(&cycle, &pods[2], &node), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* Ledger -------------------------------------------------------------------------------- */

/* Whether a charge on node holding card is recorded but not counted. */
static bool charge_left_out(const struct ledger *ledger, const char *node, const char *card)
{
    for (uint32_t c = 0; c < ledger->charge_buckets; c++) {
        for (const struct charge *charge = ledger->charges[c]; charge != NULL;
             charge = charge->next) {
            if (charge->applied || strcmp(charge->node, node) != 0)
                continue;
            for (uint32_t k = 0; k < charge->count; k++) {
                if (strcmp(charge->items[k].uuid, card) == 0)
                    return true;
            }
        }
    }
    return false;
}

/* Usage recomputed from the live charges must equal the ledger's counters, no card may be
 * over its memory, cores, users or slices, and a card a charge left uncounted takes no pod. */
static void check_ledger(const struct ledger *ledger)
{
    char why[256];
    if (!ledger_consistent(ledger, why, sizeof(why)))
        fail_msg("over-committed: %s", why);
    for (uint32_t b = 0; b < ledger->node_buckets; b++) {
        for (const struct gpu_node *node = ledger->nodes[b]; node != NULL; node = node->next) {
            for (uint32_t i = 0; i < node->card_count; i++) {
                const struct card *card = &node->cards[i];
                int64_t memory = 0;
                int32_t users = 0;
                uint8_t mask = 0;
                for (uint32_t c = 0; c < ledger->charge_buckets; c++) {
                    for (const struct charge *charge = ledger->charges[c]; charge != NULL;
                         charge = charge->next) {
                        if (!charge->applied || strcmp(charge->node, node->name) != 0)
                            continue;
                        for (uint32_t k = 0; k < charge->count; k++) {
                            if (strcmp(charge->items[k].uuid, card->uuid) != 0)
                                continue;
                            memory += charge->items[k].memory_mib;
                            users++;
                            if (charge->items[k].mig_start >= 0) {
                                uint8_t bits = (uint8_t)(((1u << charge->items[k].mig_slots) - 1u)
                                                         << charge->items[k].mig_start);
                                assert_int_equal(mask & bits, 0);
                                mask |= bits;
                            }
                        }
                    }
                }
                assert_int_equal(memory, card->used.memory_mib);
                assert_int_equal(users, card->used.users);
                assert_int_equal(mask, card->used.mig_mask);
                if (charge_left_out(ledger, node->name, card->uuid))
                    assert_true(card->overcommitted);
            }
        }
    }
}

static uint64_t rng_state = 88172645463325252ULL;

static uint32_t rng(uint32_t bound)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % bound);
}

#define RANDOM_NODES 4
#define RANDOM_PODS 48
#define RANDOM_OPERATIONS 10000

static void ledger_never_overcommits_under_10000_random_operations(void **state)
{
    (void)state;
    static const char *const layouts[] = {
        "[{\"count\": 4, \"memory\": 40960, \"split\": 4}]",
        "[{\"count\": 2, \"memory\": 40960, \"split\": 4}, {\"memory\": 40960, \"mode\": \"mig\","
        " \"model\": \"A100-40GB\"}]",
        "[{\"count\": 3, \"memory\": 20480, \"split\": 2}]",
    };
    static char node_names[RANDOM_NODES][8], pod_names[RANDOM_PODS][8];
    kc_node nodes[RANDOM_NODES];
    for (int n = 0; n < RANDOM_NODES; n++) {
        snprintf(node_names[n], sizeof(node_names[n]), "n%d", n);
        node_with(&nodes[n], node_names[n], "kcycle.io/gpus", layouts[n % 2]);
        node_event(KC_EVENT_NODE_ADD, &nodes[n]);
    }
    static kc_pod pods[RANDOM_PODS];
    for (int p = 0; p < RANDOM_PODS; p++) {
        snprintf(pod_names[p], sizeof(pod_names[p]), "p%d", p);
        gpu_pod(&pods[p], pod_names[p], 1, 0, 0, 0);
    }
    /* decision annotations of earlier placements, replayed as bound pods (a restart, a stale
     * replica): one that conflicts with what is charged now is kept uncounted, its cards
     * marked over-committed */
    static char saved[RANDOM_PODS][1024];
    static char saved_node[RANDOM_PODS][8];
    uint32_t placed = 0, overcommitted = 0, adopted = 0;
    const struct ledger *ledger = gpushare_ledger(self);
    for (int op = 0; op < RANDOM_OPERATIONS; op++) {
        uint32_t p = rng(RANDOM_PODS), n = rng(RANDOM_NODES), what = rng(10);
        kc_pod *pod = &pods[p];
        snprintf(pod_names[p], sizeof(pod_names[p]), "p%u", p);
        if (what < 5) { /* assume: Reserve on a random node */
            switch (rng(4)) {
            case 0: gpu_pod(pod, pod_names[p], 1, 0, 0, 0); break;
            case 1: gpu_pod(pod, pod_names[p], 1 + rng(2), 1024 * (1 + rng(30)), 0, rng(60)); break;
            case 2: gpu_pod(pod, pod_names[p], 1, 0, 25 * (1 + rng(4)), 25); break;
            default:
                gpu_pod(pod, pod_names[p], 0, 0, 0, 0);
                set_limit(pod, 0, rng(2) ? "nvidia.com/mig-1g.5gb" : "nvidia.com/mig-3g.20gb", 1);
            }
            kc_cycle cycle;
            kc_status status = place(&cycle, pod, &nodes[n]);
            if (status == KC_SUCCESS) {
                placed++;
                snprintf(saved[p], sizeof(saved[p]), "%s",
                         annotation_of(&cycle, "kcycle.io/gpu-assignment"));
                snprintf(saved_node[p], sizeof(saved_node[p]), "%s", node_names[n]);
            }
            fake_cycle_clear(&cycle);
        } else if (what < 6) { /* forget (or unreserve) */
            kc_cycle cycle;
            fake_cycle_init(&cycle);
            if (rng(2))
                pod_event(KC_EVENT_POD_FORGET, pod);
            else
                ops->unreserve(self, &cycle, pod, &nodes[n]);
        } else if (what < 7) { /* delete */
            pod_event(KC_EVENT_POD_DELETE, pod);
        } else if (what < 9) { /* a bound pod seen with an old decision */
            if (saved[p][0] == '\0')
                continue;
            kc_pod bound;
            fake_pod_init(&bound, "ml", pod_names[p]);
            bound.node_name = saved_node[p];
            add_annotation(&bound, "kcycle.io/gpu-assignment", saved[p]);
            const struct charge *before = ledger_charge_of(ledger, pod_names[p]);
            pod_event(KC_EVENT_POD_UPDATE, &bound);
            const struct charge *after = ledger_charge_of(ledger, pod_names[p]);
            assert_true(before != NULL || after != NULL);
            adopted += before == NULL && after->applied;
            overcommitted += before == NULL && !after->applied;
        } else { /* the node's inventory changes (cards come and go) */
            nodes[n].annotations[0].value = layouts[rng(3)];
            node_event(KC_EVENT_NODE_UPDATE, &nodes[n]);
        }
        check_ledger(ledger);
    }
    print_message("random ledger: %u placements, %u adopted, %u adopted over-committed\n",
                  placed, adopted, overcommitted);
    assert_true(placed > 500);
    assert_true(adopted > 100);
    assert_true(overcommitted > 10);
}

static void restart_rebuilds_the_ledger_from_decision_annotations(void **state)
{
    (void)state;
    kc_node node;
    node_with(&node, "v100", "hami.io/node-nvidia-register", HAMI_DOC_REGISTER);
    node_event(KC_EVENT_NODE_ADD, &node);
    kc_pod a, b;
    kc_cycle cycle;
    static char hami[256];
    gpu_pod(&a, "a", 1, 30000, 0, 50);
    assert_int_equal(place(&cycle, &a, &node), KC_SUCCESS);
    snprintf(hami, sizeof(hami), "%s", annotation_of(&cycle, "hami.io/vgpu-devices-allocated"));
    fake_cycle_clear(&cycle);
    /* restart: a new plugin sees the node and the bound pod with HAMi's annotation only */
    ops->fini(self);
    assert_int_equal(open_plugin("{}"), 0);
    node_event(KC_EVENT_NODE_ADD, &node);
    kc_pod bound;
    fake_pod_init(&bound, "ml", "a");
    bound.node_name = "v100";
    add_annotation(&bound, "hami.io/vgpu-devices-allocated", hami);
    pod_event(KC_EVENT_POD_ADD, &bound);
    /* the card it holds has 2768 MiB left: a 3000 MiB pod goes to the other card */
    gpu_pod(&b, "b", 1, 3000, 0, 60);
    assert_int_equal(place(&cycle, &b, &node), KC_SUCCESS);
    char uuid[128];
    snprintf(uuid, sizeof(uuid), "%s", annotation_of(&cycle, "hami.io/vgpu-devices-allocated"));
    uuid[strcspn(uuid, ",")] = '\0';
    assert_null(strstr(hami, uuid));
    fake_cycle_clear(&cycle);
    /* and a third pod of 3000 MiB fits on neither card's cores */
    kc_pod c;
    gpu_pod(&c, "c", 1, 2000, 0, 60);
    assert_int_equal(place(&cycle, &c, &node), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "Insufficient GPU cores");
    fake_cycle_clear(&cycle);
    pod_event(KC_EVENT_POD_DELETE, &bound);
    assert_int_equal(place(&cycle, &c, &node), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* Adoption after a restart ------------------------------------------------------------- */

static const char *const V100_CARD0 = "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec";

static const struct card *v100_card0(void)
{
    const struct gpu_node *node = ledger_node(gpushare_ledger(self), "v100");
    assert_non_null(node);
    assert_string_equal(node->cards[0].uuid, V100_CARD0);
    return &node->cards[0];
}

/* A pod bound to the first V100 holding memory_mib of it, as HAMi's annotation says. */
static void bound_v100_pod(kc_pod *pod, const char *name, const char *decision)
{
    fake_pod_init(pod, "ml", name);
    pod->node_name = "v100";
    add_annotation(pod, "hami.io/vgpu-devices-allocated", decision);
}

/* A pod asking memory_mib of the first V100 only. */
static kc_status place_on_card0(const kc_node *node, const char *name, int64_t memory_mib)
{
    kc_pod pod;
    kc_cycle cycle;
    gpu_pod(&pod, name, 1, memory_mib, 0, 0);
    add_annotation(&pod, "nvidia.com/use-gpuuuid", V100_CARD0);
    kc_status status = place(&cycle, &pod, node);
    fake_cycle_clear(&cycle);
    if (status == KC_SUCCESS)
        pod_event(KC_EVENT_POD_FORGET, &pod);
    return status;
}

/* Two bound pods claim 20000 MiB each of one 32768 MiB card. Whether the node or the pods
 * arrive first, both charges are kept: the card takes nothing while both run, and counts the
 * one left when the other goes. */
static void adopted_overcommit_is_kept_whichever_arrives_first(void **state)
{
    (void)state;
    static const char decision[] = "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,NVIDIA,20000,0:;";
    kc_node node;
    node_with(&node, "v100", "hami.io/node-nvidia-register", HAMI_DOC_REGISTER);
    for (int node_first = 1; node_first >= 0; node_first--) {
        kc_pod a, b;
        bound_v100_pod(&a, "a", decision);
        bound_v100_pod(&b, "b", decision);
        if (node_first)
            node_event(KC_EVENT_NODE_ADD, &node);
        pod_event(KC_EVENT_POD_ADD, &a);
        pod_event(KC_EVENT_POD_ADD, &b);
        if (!node_first)
            node_event(KC_EVENT_NODE_ADD, &node);
        assert_non_null(ledger_charge_of(gpushare_ledger(self), a.uid));
        assert_non_null(ledger_charge_of(gpushare_ledger(self), b.uid));
        assert_true(v100_card0()->overcommitted);
        assert_int_equal(v100_card0()->used.memory_mib, 20000);
        assert_int_equal(place_on_card0(&node, "small", 1000), KC_UNSCHEDULABLE);
        check_ledger(gpushare_ledger(self));

        /* one leaves: the other is counted, 12768 MiB are free */
        pod_event(KC_EVENT_POD_DELETE, node_first ? &a : &b);
        assert_false(v100_card0()->overcommitted);
        assert_int_equal(v100_card0()->used.memory_mib, 20000);
        assert_int_equal(place_on_card0(&node, "over", 13000), KC_UNSCHEDULABLE);
        assert_int_equal(place_on_card0(&node, "fits", 12768), KC_SUCCESS);
        check_ledger(gpushare_ledger(self));

        /* a fresh plugin for the other order */
        ops->fini(self);
        assert_int_equal(open_plugin("{}"), 0);
    }
}

/* kcycle.io/gpu-assignment is written by the scheduler, but anyone may put it on a pod created
 * with spec.nodeName: values no placement can produce are refused, never counted. */
static void forged_assignment_annotations_are_refused(void **state)
{
    (void)state;
    static const char *const forged[] = {
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-a\",\"memory\":-30000,\"cores\":0}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-a\",\"memory\":1000,\"cores\":-50}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-a\",\"memory\":1000,\"cores\":101}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-a\",\"memory\":\"1000\",\"cores\":0}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-a\",\"memory\":1000,"
        "\"cores\":4294967346}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
        "\"migStart\":8,\"migSlots\":1}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
        "\"migStart\":-1,\"migSlots\":1}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
        "\"migStart\":256,\"migSlots\":1}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
        "\"migStart\":0,\"migSlots\":0}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
        "\"migStart\":0,\"migSlots\":40}]}]}",
        "{\"containers\":[{\"cards\":[{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
        "\"migStart\":0}]}]}",
    };
    struct charge charge;
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        memset(&charge, 0, sizeof(charge));
        if (assignment_decode(forged[i], &charge) != -22)
            fail_msg("accepted %s", forged[i]);
    }
    /* the bounds themselves are accepted */
    memset(&charge, 0, sizeof(charge));
    assert_int_equal(assignment_decode("{\"containers\":[{\"cards\":["
                                       "{\"uuid\":\"GPU-a\",\"memory\":0,\"cores\":100},"
                                       "{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
                                       "\"migStart\":7,\"migSlots\":1},"
                                       "{\"uuid\":\"GPU-h\",\"memory\":0,\"cores\":0,"
                                       "\"migStart\":0,\"migSlots\":8}]}]}",
                                       &charge),
                     0);
    assert_int_equal(charge.count, 3);
    assert_true(charge.items[0].exclusive);
    assert_int_equal(charge.items[1].mig_start, 7);
    assert_int_equal(charge.items[2].mig_slots, 8);
    memset(&charge, 0, sizeof(charge));
    assert_int_equal(hami_decode("GPU-a,NVIDIA,1000,101:;", &charge), -22);

    /* end to end: a forged negative charge does not free a card a running pod holds */
    kc_node node;
    node_with(&node, "v100", "hami.io/node-nvidia-register", HAMI_DOC_REGISTER);
    node_event(KC_EVENT_NODE_ADD, &node);
    kc_pod holder;
    bound_v100_pod(&holder, "holder", "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,NVIDIA,30000,0:;");
    pod_event(KC_EVENT_POD_ADD, &holder);
    char text[256];
    snprintf(text, sizeof(text),
             "{\"containers\":[{\"cards\":[{\"uuid\":\"%s\",\"memory\":-30000,\"cores\":0}]}]}",
             V100_CARD0);
    kc_pod forger;
    fake_pod_init(&forger, "ml", "forger");
    forger.node_name = "v100";
    add_annotation(&forger, "kcycle.io/gpu-assignment", text);
    pod_event(KC_EVENT_POD_ADD, &forger);
    assert_null(ledger_charge_of(gpushare_ledger(self), forger.uid));
    assert_int_equal(v100_card0()->used.memory_mib, 30000);
    assert_int_equal(place_on_card0(&node, "big", 20000), KC_UNSCHEDULABLE);
    check_ledger(gpushare_ledger(self));
}

/* A MIG item whose slices do not fit the card is refused before its mask is computed: a
 * shift of 32 or more is undefined in C (the sanitizer build catches it). */
static void ledger_refuses_mig_items_outside_the_card(void **state)
{
    (void)state;
    kc_node node;
    node_with(&node, "h100", "kcycle.io/gpus",
              "[{\"memory\": 81920, \"model\": \"NVIDIA-H100-80GB-HBM3\", \"mode\": \"mig\","
              " \"uuid\": \"GPU-h\"}]");
    node_event(KC_EVENT_NODE_ADD, &node);
    struct ledger *ledger = (struct ledger *)gpushare_ledger(self);
    static const struct {
        int8_t start;
        uint8_t slots;
    } outside[] = {{0, 40}, {0, 32}, {7, 2}, {0, 9}};
    struct charge charge;
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        memset(&charge, 0, sizeof(charge));
        snprintf(charge.uid, sizeof(charge.uid), "mig-%zu", i);
        snprintf(charge.node, sizeof(charge.node), "h100");
        charge.count = 1;
        snprintf(charge.items[0].uuid, GPU_UUID_LEN, "GPU-h");
        charge.items[0].mig_start = outside[i].start;
        charge.items[0].mig_slots = outside[i].slots;
        assert_int_equal(ledger_charge(ledger, &charge), -28);
        assert_int_equal(ledger_node(ledger, "h100")->cards[0].used.mig_mask, 0);
    }
    memset(&charge, 0, sizeof(charge));
    snprintf(charge.uid, sizeof(charge.uid), "mig-ok");
    snprintf(charge.node, sizeof(charge.node), "h100");
    charge.count = 1;
    snprintf(charge.items[0].uuid, GPU_UUID_LEN, "GPU-h");
    charge.items[0].mig_start = 0;
    charge.items[0].mig_slots = 8;
    assert_int_equal(ledger_charge(ledger, &charge), 0);
    assert_int_equal(ledger_node(ledger, "h100")->cards[0].used.mig_mask, 0xff);
}

/* Scoring ------------------------------------------------------------------------------- */

static void fragmentation_score_keeps_whole_cards_free(void **state)
{
    (void)state;
    kc_node used, fresh;
    node_with(&used, "used", "kcycle.io/gpus", "[{\"count\": 2, \"memory\": 81920}]");
    node_with(&fresh, "fresh", "kcycle.io/gpus", "[{\"count\": 2, \"memory\": 81920}]");
    node_event(KC_EVENT_NODE_ADD, &used);
    node_event(KC_EVENT_NODE_ADD, &fresh);
    kc_pod half, quarter;
    kc_cycle cycle;
    gpu_pod(&half, "half", 1, 0, 50, 50);
    assert_int_equal(place(&cycle, &half, &used), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    gpu_pod(&quarter, "quarter", 1, 0, 25, 25);
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &quarter), KC_SUCCESS);
    assert_int_equal(ops->pre_score(self, &cycle, &quarter), KC_SUCCESS);
    int64_t scores[2];
    assert_int_equal(ops->score(self, &cycle, &quarter, &used, &scores[0]), KC_SUCCESS);
    assert_int_equal(ops->score(self, &cycle, &quarter, &fresh, &scores[1]), KC_SUCCESS);
    const kc_node *both[2] = {&used, &fresh};
    assert_int_equal(ops->normalize_score(self, &cycle, &quarter, both, scores, 2), KC_SUCCESS);
    assert_int_equal(scores[0], 100);
    assert_int_equal(scores[1], 0);
    fake_cycle_clear(&cycle);
    /* a whole card: no fragmentation either way; the node policy decides (binpack: the used
     * node; spread by annotation or by args: the fresh one) */
    kc_pod whole;
    for (int variant = 0; variant < 3; variant++) {
        gpu_pod(&whole, "whole", 1, 0, 0, 0);
        if (variant == 1)
            add_annotation(&whole, "hami.io/node-scheduler-policy", "spread");
        if (variant == 2) {
            ops->fini(self);
            assert_int_equal(open_plugin("{\"nodePolicy\": \"Spread\"}"), 0);
            node_event(KC_EVENT_NODE_ADD, &used);
            node_event(KC_EVENT_NODE_ADD, &fresh);
            assert_int_equal(place(&cycle, &half, &used), KC_SUCCESS);
            fake_cycle_clear(&cycle);
        }
        fake_cycle_init(&cycle);
        assert_int_equal(ops->pre_filter(self, &cycle, &whole), KC_SUCCESS);
        assert_int_equal(ops->score(self, &cycle, &whole, &used, &scores[0]), KC_SUCCESS);
        assert_int_equal(ops->score(self, &cycle, &whole, &fresh, &scores[1]), KC_SUCCESS);
        assert_int_equal(ops->normalize_score(self, &cycle, &whole, both, scores, 2), KC_SUCCESS);
        assert_int_equal(scores[0], variant == 0 ? 100 : 0);
        assert_int_equal(scores[1], variant == 0 ? 0 : 100);
        fake_cycle_clear(&cycle);
    }
    ops->fini(self);
    assert_int_equal(open_plugin("{}"), 0);
    node_event(KC_EVENT_NODE_ADD, &used);
    node_event(KC_EVENT_NODE_ADD, &fresh);
    assert_int_equal(place(&cycle, &half, &used), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &quarter), KC_SUCCESS);
    /* on the used node, the quarter joins the half rather than breaking the free card */
    assert_int_equal(ops->reserve(self, &cycle, &quarter, &used), KC_SUCCESS);
    const char *decision = annotation_of(&cycle, "hami.io/vgpu-devices-allocated");
    assert_non_null(strstr(decision, "used-gpu0,"));
    fake_cycle_clear(&cycle);
}

/* NUMA ---------------------------------------------------------------------------------- */

/* Two zones; cards 0-1 in zone 0, 2-3 in zone 1 (or one per zone); CPUs free per zone. */
static const char *nrt_json(char *out, size_t size, int zone0_cpus, int zone1_cpus)
{
    snprintf(out, size,
             "{\"kind\": \"NodeResourceTopology\", \"zones\": ["
             "{\"name\": \"node-0\", \"type\": \"Node\", \"resources\": [{\"name\": \"cpu\", "
             "\"capacity\": \"32\", \"allocatable\": \"32\", \"available\": \"%d\"}]},"
             "{\"name\": \"node-1\", \"type\": \"Node\", \"resources\": [{\"name\": \"cpu\", "
             "\"capacity\": 32, \"allocatable\": 32, \"available\": %d}]}]}",
             zone0_cpus, zone1_cpus);
    return out;
}

static void nrt_event(const char *name, const char *json)
{
    kc_event ev = {.struct_size = sizeof(ev),
                   .type = KC_EVENT_OBJECT_ADD,
                   .object_kind = "NodeResourceTopology",
                   .object_name = name,
                   .object_json = json};
    ops->on_event(self, &ev);
}

static void single_numa_node_puts_cards_and_cpus_in_one_zone(void **state)
{
    (void)state;
    static kc_node aligned, split, starved;
    node_with(&aligned, "aligned", "kcycle.io/gpus",
              "[{\"count\": 2, \"memory\": 81920, \"numa\": 0},"
              " {\"count\": 2, \"memory\": 81920, \"numa\": 1}]");
    node_with(&split, "split", "kcycle.io/gpus",
              "[{\"memory\": 81920, \"numa\": 0}, {\"memory\": 81920, \"numa\": 1}]");
    node_with(&starved, "starved", "kcycle.io/gpus",
              "[{\"count\": 2, \"memory\": 81920, \"numa\": 0},"
              " {\"memory\": 81920, \"numa\": 1}]");
    fake_host_add_node(&aligned);
    fake_host_add_node(&split);
    fake_host_add_node(&starved);
    char json[1024];
    /* aligned: zone 0 has too few CPUs, zone 1 has cards and CPUs */
    nrt_event("aligned", nrt_json(json, sizeof(json), 4, 16));
    nrt_event("split", nrt_json(json, sizeof(json), 16, 16));
    /* starved: the zone with two cards has no room for the CPUs */
    nrt_event("starved", nrt_json(json, sizeof(json), 2, 16));
    node_event(KC_EVENT_NODE_ADD, &aligned);
    node_event(KC_EVENT_NODE_ADD, &split);
    node_event(KC_EVENT_NODE_ADD, &starved);
    kc_pod pod;
    gpu_pod(&pod, "train", 2, 0, 0, 0);
    pod.request[KC_RESOURCE_CPU] = 8000;
    add_annotation(&pod, "kcycle.io/numa-policy", "single-numa-node");
    kc_cycle cycle;
    assert_int_equal(place(&cycle, &pod, &aligned), KC_SUCCESS);
    json_t *own = json_loads(annotation_of(&cycle, "kcycle.io/gpu-assignment"), 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(own, "numaZone")), 1);
    json_t *cards = json_object_get(json_array_get(json_object_get(own, "containers"), 0), "cards");
    assert_int_equal(json_array_size(cards), 2);
    for (size_t i = 0; i < 2; i++) {
        json_int_t index = json_integer_value(json_object_get(json_array_get(cards, i), "index"));
        assert_true(index == 2 || index == 3);
    }
    json_decref(own);
    fake_cycle_clear(&cycle);
    assert_int_equal(place(&cycle, &pod, &split), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "cannot put GPUs and CPUs in one NUMA zone");
    fake_cycle_clear(&cycle);
    assert_int_equal(place(&cycle, &pod, &starved), KC_UNSCHEDULABLE);
    fake_cycle_clear(&cycle);
    /* numaalign ran first and took the CPUs from zone 0 of a node where both zones could
     * serve: the cards follow its choice */
    nrt_event("aligned", nrt_json(json, sizeof(json), 16, 16));
    node_event(KC_EVENT_NODE_UPDATE, &aligned);
    for (int zone = 0; zone < 2; zone++) {
        fake_cycle_init(&cycle);
        assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
        assert_int_equal(ops->filter(self, &cycle, &pod, &aligned), KC_SUCCESS);
        char *chosen = malloc(2);
        snprintf(chosen, 2, "%d", zone);
        assert_int_equal(kc_host->cycle_set(&cycle, "kcycle.io/numa-zones", chosen, free), 0);
        assert_int_equal(ops->reserve(self, &cycle, &pod, &aligned), KC_SUCCESS);
        own = json_loads(annotation_of(&cycle, "kcycle.io/gpu-assignment"), 0, NULL);
        assert_int_equal(json_integer_value(json_object_get(own, "numaZone")), zone);
        json_decref(own);
        ops->unreserve(self, &cycle, &pod, &aligned);
        fake_cycle_clear(&cycle);
    }
    /* without the policy the split node serves it */
    gpu_pod(&pod, "free", 2, 0, 0, 0);
    assert_int_equal(place(&cycle, &pod, &split), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* Cards from a NodeResourceTopology's zones (whole cards, memory from GFD's label). */
static void nrt_zones_give_whole_cards_in_their_zones(void **state)
{
    (void)state;
    static kc_node node;
    fake_node_init(&node, "nrt");
    node.labels[0] = (struct fake_kv){"nvidia.com/gpu.memory", "81920"};
    node.labels[1] = (struct fake_kv){"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"};
    node.label_count = 2;
    fake_host_add_node(&node);
    nrt_event("nrt", "{\"kind\": \"NodeResourceTopology\", \"zones\": ["
                     "{\"name\": \"node-0\", \"resources\": [{\"name\": \"cpu\", "
                     "\"available\": \"2\"}, {\"name\": \"nvidia.com/gpu\", \"capacity\": "
                     "\"2\"}]}, {\"name\": \"node-1\", \"resources\": [{\"name\": \"cpu\", "
                     "\"available\": \"30500m\"}, {\"name\": \"nvidia.com/gpu\", "
                     "\"capacity\": 2}]}]}");
    node_event(KC_EVENT_NODE_ADD, &node);
    const struct gpu_node *gpus = ledger_node(gpushare_ledger(self), "nrt");
    assert_non_null(gpus);
    assert_int_equal(gpus->card_count, 4);
    assert_int_equal(gpus->source, SOURCE_NRT);
    assert_int_equal(gpus->cards[3].numa, 1);
    assert_int_equal(gpus->cards[3].memory_mib, 81920);
    assert_int_equal(gpus->cards[3].mode, CARD_WHOLE);
    assert_int_equal(gpus->zones.available_milli[1], 30500);
    kc_pod pod;
    gpu_pod(&pod, "pair", 2, 0, 0, 0);
    pod.request[KC_RESOURCE_CPU] = 16000;
    add_annotation(&pod, "kcycle.io/numa-policy", "single-numa-node");
    kc_cycle cycle;
    assert_int_equal(place(&cycle, &pod, &node), KC_SUCCESS);
    json_t *own = json_loads(annotation_of(&cycle, "kcycle.io/gpu-assignment"), 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(own, "numaZone")), 1);
    json_decref(own);
    fake_cycle_clear(&cycle);
    /* a second pair: zone 1's cards are taken, zone 0 has too few CPUs */
    kc_pod second;
    gpu_pod(&second, "pair-2", 2, 0, 0, 0);
    second.request[KC_RESOURCE_CPU] = 16000;
    add_annotation(&second, "kcycle.io/numa-policy", "single-numa-node");
    assert_int_equal(place(&cycle, &second, &node), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "cannot put GPUs and CPUs in one NUMA zone");
    fake_cycle_clear(&cycle);
}

static void nodes_without_gpus_and_gfd_labels(void **state)
{
    (void)state;
    kc_node plain, labelled;
    fake_node_init(&plain, "plain");
    node_event(KC_EVENT_NODE_ADD, &plain);
    fake_node_init(&labelled, "gfd");
    labelled.labels[0] = (struct fake_kv){"nvidia.com/gpu.product", "Tesla-T4"};
    labelled.labels[1] = (struct fake_kv){"nvidia.com/gpu.memory", "15360"};
    labelled.labels[2] = (struct fake_kv){"nvidia.com/gpu.count", "2"};
    labelled.label_count = 3;
    node_event(KC_EVENT_NODE_ADD, &labelled);
    kc_pod pod;
    kc_cycle cycle;
    gpu_pod(&pod, "w", 1, 0, 0, 0);
    assert_int_equal(place(&cycle, &pod, &plain), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle), "node has no GPUs");
    fake_cycle_clear(&cycle);
    assert_int_equal(place(&cycle, &pod, &labelled), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    gpu_pod(&pod, "frac", 1, 1024, 0, 0); /* GFD cards are whole cards only */
    assert_int_equal(place(&cycle, &pod, &labelled), KC_UNSCHEDULABLE);
    assert_string_equal(first_reason(&cycle),
                        "GPU mode does not match the request (whole, shared or MIG)");
    fake_cycle_clear(&cycle);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(hami_register_documented_example_parses, setup, teardown),
        cmocka_unit_test_setup_teardown(kcycle_gpus_annotation_parses_and_refuses_unknown_keys,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(handshake_requesting_too_long_makes_the_node_stale, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(hami_decision_round_trips_the_documented_example, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(reserve_writes_hami_and_kcycle_annotations, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(bad_requests_are_refused_naming_container_and_value, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(overlong_selection_annotations_are_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(hami_defaults_apply_to_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(
            cards_are_shared_by_memory_cores_and_users_never_overcommitted, setup, teardown),
        cmocka_unit_test_setup_teardown(mig_profiles_follow_the_nvidia_placement_rules, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(mig_pods_get_instances_on_mig_cards, setup, teardown),
        cmocka_unit_test_setup_teardown(ledger_never_overcommits_under_10000_random_operations,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(restart_rebuilds_the_ledger_from_decision_annotations,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(adopted_overcommit_is_kept_whichever_arrives_first,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(forged_assignment_annotations_are_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(ledger_refuses_mig_items_outside_the_card, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(fragmentation_score_keeps_whole_cards_free, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(single_numa_node_puts_cards_and_cpus_in_one_zone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nrt_zones_give_whole_cards_in_their_zones, setup, teardown),
        cmocka_unit_test_setup_teardown(nodes_without_gpus_and_gfd_labels, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
