/* gpushare's pure internal functions, called directly without a host: HAMi's registration
 * and decision formats (the protocol document's examples), kcycle.io/gpus, HAMi's handshake
 * times, the decoder's refusal of forged assignments, the NVIDIA MIG placement tables and
 * NodeResourceTopology zones. Request parsing and the ledger's invariants need a pod or the
 * plugin's ledger: test_gpushare.c; the plugin through its phases runs on the harness in both
 * modes (test_gpushare_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare.h"

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

static void hami_handshake_times_parse(void **state)
{
    (void)state;
    int64_t requested = parse_hami_time("2024-05-14 07:07:33");
    assert_int_equal(requested, 1715670453000LL);
    assert_int_equal(parse_hami_time("2024.05.14 07:07:33"), requested); /* older releases */
    assert_int_equal(parse_hami_time("2024/05/14 07:07:33"), -1);
}

/* NodeResourceTopology zones: CPUs free per zone (quantities, "30500m" included) and GPUs. */
static void nrt_zones_give_cpus_and_gpus_per_zone(void **state)
{
    (void)state;
    struct zone_cpus zones;
    int32_t gpus[GPU_MAX_ZONES] = {0};
    char why[GPU_REASON_LEN] = "";
    assert_int_equal(inventory_from_nrt("{\"kind\": \"NodeResourceTopology\", \"zones\": ["
                                        "{\"name\": \"node-0\", \"resources\": [{\"name\": "
                                        "\"cpu\", \"available\": \"2\"}, {\"name\": "
                                        "\"nvidia.com/gpu\", \"capacity\": \"2\"}]}, {\"name\": "
                                        "\"node-1\", \"resources\": [{\"name\": \"cpu\", "
                                        "\"available\": \"30500m\"}, {\"name\": "
                                        "\"nvidia.com/gpu\", \"capacity\": 2}]}]}",
                                        &zones, gpus, why, sizeof(why)),
                     0);
    assert_int_equal(zones.count, 2);
    assert_int_equal(zones.id[1], 1);
    assert_int_equal(zones.available_milli[0], 2000);
    assert_int_equal(zones.available_milli[1], 30500);
    assert_int_equal(gpus[0], 2);
    assert_int_equal(gpus[1], 2);
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

static void forged_assignment_annotations_are_refused_by_the_decoder(void **state)
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hami_register_documented_example_parses),
        cmocka_unit_test(kcycle_gpus_annotation_parses_and_refuses_unknown_keys),
        cmocka_unit_test(hami_handshake_times_parse),
        cmocka_unit_test(nrt_zones_give_cpus_and_gpus_per_zone),
        cmocka_unit_test(hami_decision_round_trips_the_documented_example),
        cmocka_unit_test(forged_assignment_annotations_are_refused_by_the_decoder),
        cmocka_unit_test(mig_profiles_follow_the_nvidia_placement_rules),
    };
    return cmocka_run_group_tests_name("gpushare_internal", tests, NULL, NULL);
}
