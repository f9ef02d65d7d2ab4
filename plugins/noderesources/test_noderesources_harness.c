/* noderesources on the plugin test harness, in both isolation modes: kube-scheduler's Fit
 * cases (fit_test.go) with kube's reasons, and the scoring strategies (LeastAllocated,
 * MostAllocated, BalancedAllocation, RequestedToCapacityRatio after kube's tests), on a node
 * whose requests come from the pods placed on it, as in a cluster (past its allocatable too:
 * a pod without a cpu request passes Filter there and scores with kube's non-zero default),
 * ignored resources, kube's broken linear function, two cycles open at once, and the args.
 * What calls the plugin's functions directly (Filter or Score without PreFilter, the host
 * calls of the hot path) stays in test_noderesources.c on the fake host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

struct fit_case {
    const char *name;
    const char *args;          /* NULL: "{}" */
    const char *allocatable;   /* the node's, beyond cpu 4 and memory 8Gi */
    const char *busy_requests; /* the pod already on the node */
    const char *requests;      /* the incoming pod's, "" for none */
    kc_status status;
    const char *reasons[2];
};

static const struct fit_case cases[] = {
    {"exactly the remaining room passes",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 1, memory: 4Gi",
     KC_SUCCESS,
     {0}},
    {"one millicpu over is insufficient cpu",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 1001m, memory: 1Gi",
     KC_UNSCHEDULABLE,
     {"Insufficient cpu"}},
    {"one byte over is insufficient memory",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 500m, memory: 4294967297",
     KC_UNSCHEDULABLE,
     {"Insufficient memory"}},
    /* the node has none at all, so preemption cannot help: unresolvable, as in kube */
    {"an extended resource the node lacks is unresolvable",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi, nvidia.com/gpu: 1",
     KC_UNRESOLVABLE,
     {"Insufficient nvidia.com/gpu"}},
    {"an extended resource with room passes",
     NULL,
     "pods: 110, nvidia.com/gpu: 4",
     "cpu: 3, memory: 4Gi, nvidia.com/gpu: 2",
     "cpu: 100m, memory: 1Gi, nvidia.com/gpu: 2",
     KC_SUCCESS,
     {0}},
    {"a full node is too many pods",
     NULL,
     "pods: 1",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi",
     KC_UNSCHEDULABLE,
     {"Too many pods"}},
    {"a pod without requests checks only the pod count",
     NULL,
     "pods: 110",
     "cpu: 4, memory: 4Gi",
     "",
     KC_SUCCESS,
     {0}},
    {"two failures give two reasons",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 2, memory: 5Gi",
     KC_UNSCHEDULABLE,
     {"Insufficient cpu", "Insufficient memory"}},
    {"a request above the node's allocatable is unresolvable",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 5, memory: 1Gi",
     KC_UNRESOLVABLE,
     {"Insufficient cpu"}},
    {"ignoredResources skips an extended resource",
     "{\"ignoredResources\": [\"example.com/foo\", \"cpu\"]}",
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi, example.com/foo: 3",
     KC_SUCCESS,
     {0}},
    /* kube ignores only extended resources: "cpu" in the list changes nothing */
    {"ignoredResources does not skip cpu",
     "{\"ignoredResources\": [\"example.com/foo\", \"cpu\"]}",
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 2, memory: 1Gi",
     KC_UNSCHEDULABLE,
     {"Insufficient cpu"}},
    {"ignoredResourceGroups skips by prefix",
     "{\"ignoredResourceGroups\": [\"example.com\"]}",
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi, example.com/foo: 1, other.io/bar: 1",
     KC_UNRESOLVABLE,
     {"Insufficient other.io/bar"}},
};

static void fit_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct fit_case *c = &cases[i];
        char cluster[1024];
        snprintf(cluster, sizeof(cluster),
                 "nodes:\n"
                 "  - {name: n1, allocatable: {cpu: 4, memory: 8Gi, %s}}\n"
                 "pods:\n"
                 "  - {name: busy, nodeName: n1, requests: {%s}}\n"
                 "  - {name: web-0%s%s%s}\n",
                 c->allocatable, c->busy_requests, c->requests[0] ? ", requests: {" : "",
                 c->requests, c->requests[0] ? "}" : "");
        harness_start(c->args != NULL ? c->args : "{}", cluster);
        harness_expect_status(c->name, kc_harness_filter(harness, "web-0", "n1"), c->status);
        uint32_t want = 0;
        for (int r = 0; r < 2 && c->reasons[r] != NULL; r++, want++)
            if (kc_harness_reason_count(harness, c->reasons[r]) != 1)
                fail_msg("%s (%s): no reason \"%s\" in \"%s\"", c->name, harness_mode_name(),
                         c->reasons[r], kc_harness_message(harness));
        if (want == 0 && kc_harness_message(harness)[0] != '\0')
            fail_msg("%s (%s): unexpected reason \"%s\"", c->name, harness_mode_name(),
                     kc_harness_message(harness));
    }
}

/* Each node adds its own reasons: the runtime's "0/N nodes are available" histogram is built
 * from these counts. */
static void reasons_accumulate_per_node_for_the_histogram(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n"
                        "  - {name: n0, allocatable: {cpu: 4, memory: 8Gi}}\n"
                        "  - {name: n1, allocatable: {cpu: 4, memory: 8Gi}}\n"
                        "  - {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 1}}\n"
                        "pods:\n"
                        "  - {name: b0, nodeName: n0, requests: {cpu: 3}}\n"
                        "  - {name: b1, nodeName: n1, requests: {cpu: 3}}\n"
                        "  - {name: b2, nodeName: n2}\n"
                        "  - {name: web-0, requests: {cpu: 2, memory: 1Gi}}\n");
    harness_expect_status("three nodes", kc_harness_evaluate(harness, "web-0"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_reason_count(harness, "Insufficient cpu"), 2);
    assert_int_equal(kc_harness_reason_count(harness, "Too many pods"), 1);
    /* the pod on n0 goes: n0 fits, the others still do not */
    assert_int_equal(kc_harness_delete_pod(harness, "b0"), 0);
    harness_expect_status("b0 gone", kc_harness_evaluate(harness, "web-0"), KC_SUCCESS);
    assert_true(kc_harness_feasible(harness, "n0"));
    assert_false(kc_harness_feasible(harness, "n1"));
}

/* Scores ----------------------------------------------------------------------------------- */

struct score_case {
    const char *name;
    const char *args;        /* NULL: {} */
    const char *allocatable; /* node n's, beside pods: 110 */
    const char *placed[2];   /* the requests of the pods on n ("" none), NULL: no more */
    const char *requests;    /* the incoming pod's, "" none */
    int64_t want;            /* n's score */
};

#define LEAST NULL
#define MOST "{\"scoringStrategy\": {\"type\": \"MostAllocated\"}}"
#define BALANCED "{\"balancedAllocation\": {\"enabled\": true}}"
#define GPU_WEIGHTED                                                                               \
    "{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", \"weight\": 1}, {\"name\": "       \
    "\"nvidia.com/gpu\", \"weight\": 2}]}}"
#define RTCR_LEAST                                                                                 \
    "{\"scoringStrategy\": {\"type\": \"RequestedToCapacityRatio\", "                              \
    "\"requestedToCapacityRatio\": {\"shape\": [{\"utilization\": 0, \"score\": 10}, "             \
    "{\"utilization\": 100, \"score\": 0}]}}}"
#define RTCR_FOO                                                                                   \
    "{\"scoringStrategy\": {\"type\": \"RequestedToCapacityRatio\", \"resources\": [{\"name\": "   \
    "\"intel.com/foo\", \"weight\": 1}], \"requestedToCapacityRatio\": {\"shape\": "               \
    "[{\"utilization\": 0, \"score\": 0}, {\"utilization\": 100, \"score\": 1}]}}}"
#define RTCR_FOO_BAR                                                                               \
    "{\"scoringStrategy\": {\"type\": \"RequestedToCapacityRatio\", \"resources\": [{\"name\": "   \
    "\"intel.com/foo\", \"weight\": 3}, {\"name\": \"intel.com/bar\", \"weight\": 5}], "           \
    "\"requestedToCapacityRatio\": {\"shape\": [{\"utilization\": 0, \"score\": 0}, "              \
    "{\"utilization\": 100, \"score\": 1}]}}}"
#define SMALL "cpu: 4, memory: 10000"
#define EMPTY "cpu: 1, memory: 1000Mi"

static const struct score_case score_cases[] = {
    /* cpu (4000-2000)*100/4000 = 50, memory (10000-7000)*100/10000 = 30: (50+30)/2 */
    {"least allocated scores the free fraction", LEAST, SMALL, {"cpu: 1, memory: 4000"},
     "cpu: 1, memory: 3000", 40},
    /* (50*3 + 30*1) / 4 = 45 */
    {"least allocated applies weights",
     "{\"scoringStrategy\": {\"type\": \"LeastAllocated\", \"resources\": [{\"name\": \"cpu\", "
     "\"weight\": 3}, {\"name\": \"memory\", \"weight\": 1}]}}",
     SMALL, {"cpu: 1, memory: 4000"}, "cpu: 1, memory: 3000", 45},
    /* cpu 2000*100/4000 = 50, memory 7000*100/10000 = 70: (50+70)/2 */
    {"most allocated scores the used fraction", MOST, SMALL, {"cpu: 1, memory: 4000"},
     "cpu: 1, memory: 3000", 60},
    /* a pod that requests nothing counts as 100m cpu and 200 MiB: cpu 90, memory 80 */
    {"a best-effort pod scores with kube's defaults (least)", LEAST, EMPTY, {NULL}, "", 85},
    {"a best-effort pod scores with kube's defaults (most)", MOST, EMPTY, {NULL}, "", 15},
    /* kube's NonZeroRequested on the node side: the node's pods without a cpu or memory request
     * count 100m / 200 MiB too. cpu 300: least 70, most 30; memory 600: least 40, most 60 */
    {"best-effort pods everywhere (least)", LEAST, EMPTY, {"", ""}, "", 55},
    {"best-effort pods everywhere (most)", MOST, EMPTY, {"", ""}, "", 45},
    /* cpu 500+200 = 700: 30 / 70; memory 200 (default) + 300 = 500: 50 / 50 */
    {"a placed pod without a memory request (least)", LEAST, EMPTY, {"cpu: 500m"},
     "cpu: 200m, memory: 300Mi", 40},
    {"a placed pod without a memory request (most)", MOST, EMPTY, {"cpu: 500m"},
     "cpu: 200m, memory: 300Mi", 60},
    /* nothing defaulted: cpu 400+100 = 500, memory 100+100 = 200: least (50+80)/2 */
    {"every request set (least)", LEAST, EMPTY, {"cpu: 400m, memory: 100Mi"},
     "cpu: 100m, memory: 100Mi", 65},
    {"every request set (most)", MOST, EMPTY, {"cpu: 400m, memory: 100Mi"},
     "cpu: 100m, memory: 100Mi", 35},
    /* no gpu requested: gpu leaves the weight sum even on a gpu node, cpu alone scores 50 */
    {"an extended resource not requested is not scored", GPU_WEIGHTED,
     SMALL ", nvidia.com/gpu: 4", {"cpu: 1, memory: 4000"}, "cpu: 1, memory: 3000", 50},
    /* gpu (4-2)*100/4 = 50: (50*1 + 50*2)/3 = 50 */
    {"an extended resource requested is weighted (half used)", GPU_WEIGHTED,
     SMALL ", nvidia.com/gpu: 4", {"cpu: 1, memory: 4000, nvidia.com/gpu: 1"},
     "cpu: 1, memory: 3000, nvidia.com/gpu: 1", 50},
    /* gpu (4-1)*100/4 = 75: (50 + 75*2)/3 = 66 */
    {"an extended resource requested is weighted (a quarter used)", GPU_WEIGHTED,
     SMALL ", nvidia.com/gpu: 4", {"cpu: 1, memory: 4000"},
     "cpu: 1, memory: 3000, nvidia.com/gpu: 1", 66},
    /* least: cpu 50, memory 50 -> 50; balanced: fractions 0.5, 0.5 -> 100: (50+100)/2 */
    {"balanced: equal fractions average with the strategy", BALANCED, SMALL,
     {"cpu: 1, memory: 1000"}, "cpu: 1, memory: 4000", 75},
    /* fractions cpu 0.75, memory 0.25: std 0.25 -> 75; least: cpu 25, memory 75 -> 50 */
    {"balanced: two resources use half the difference",
     "{\"balancedAllocation\": {\"enabled\": true, \"resources\": [\"cpu\", {\"name\": "
     "\"memory\"}]}}",
     "cpu: 4, memory: 8000", {"cpu: 1, memory: 1500"}, "cpu: 2, memory: 500", 62},
    /* fractions 0.5, 0.5, 1.0: mean 2/3, std sqrt(1/18) = 0.2357 -> 76; least 50 */
    {"balanced: three resources use the standard deviation",
     "{\"balancedAllocation\": {\"enabled\": true, \"resources\": [\"cpu\", \"memory\", "
     "\"ephemeral-storage\"]}}",
     SMALL ", ephemeral-storage: 1000", {"cpu: 1, memory: 1000, ephemeral-storage: 600"},
     "cpu: 1, memory: 4000, ephemeral-storage: 400", 63},
    /* kube skips BalancedAllocation for best-effort pods (kubernetes#129138) */
    {"balanced: a best-effort pod is skipped", BALANCED, EMPTY, {NULL}, "", 85},
    {"balanced: off unless enabled", "{\"balancedAllocation\": {\"enabled\": false}}", SMALL,
     {"cpu: 1, memory: 1000"}, "cpu: 1, memory: 4000", 50},
    /* kube's requested_to_capacity_ratio_test.go: utilization 0 scores the shape's 10 -> 100 */
    {"ratio: nothing requested scores the most", RTCR_LEAST, SMALL, {NULL}, "", 100},
    /* cpu 3000/4000 = 75 -> 25, memory 5000/10000 = 50 -> 50: round(37.5) = 38 */
    {"ratio: a small node", RTCR_LEAST, SMALL, {NULL}, "cpu: 3, memory: 5000", 38},
    {"ratio: a big node", RTCR_LEAST, "cpu: 6, memory: 10000", {NULL}, "cpu: 3, memory: 5000",
     50},
    /* the pod requests nothing, the node's pods hold the same amounts (no non-zero defaults
     * under this strategy) */
    {"ratio: the node's pods count", RTCR_LEAST, SMALL, {"cpu: 3, memory: 5000"}, "", 38},
    /* over capacity reads as utilization 100: shape score 0 drops cpu from the mean */
    {"ratio: an overcommitted resource leaves the mean", RTCR_LEAST, SMALL,
     {"cpu: 5, memory: 5000"}, "", 50},
    {"ratio: an extended resource not requested scores 0", RTCR_FOO, SMALL ", intel.com/foo: 8",
     {NULL}, "", 0},
    /* foo 2 of 8 = 25% -> 10*25/100 = 2; 2 of 4 = 50% -> 5; with 2 used on 4: 100% -> 10 */
    {"ratio: a quarter of an extended resource", RTCR_FOO, SMALL ", intel.com/foo: 8", {NULL},
     "intel.com/foo: 2", 2},
    {"ratio: half of an extended resource", RTCR_FOO, SMALL ", intel.com/foo: 4", {NULL},
     "intel.com/foo: 2", 5},
    {"ratio: an extended resource full with a placed pod", RTCR_FOO, SMALL ", intel.com/foo: 4",
     {"intel.com/foo: 2"}, "intel.com/foo: 2", 10},
    /* weights 3 and 5: foo 2/8 -> 2, bar 2/4 -> 5: (6+25)/8 = 3.875 -> 4; mirrored: foo 2/4 ->
     * 5, bar 2/8 -> 2: (15+10)/8 = 3.125 -> 3 */
    {"ratio: two extended resources weighted", RTCR_FOO_BAR,
     SMALL ", intel.com/foo: 8, intel.com/bar: 4", {NULL}, "intel.com/foo: 2, intel.com/bar: 2",
     4},
    {"ratio: two extended resources weighted, mirrored", RTCR_FOO_BAR,
     SMALL ", intel.com/foo: 4, intel.com/bar: 8", {NULL}, "intel.com/foo: 2, intel.com/bar: 2",
     3},
};

/* The case's node n and a roomy node beside it (the runtime scores only when two nodes are
 * feasible), web-0 evaluated; n's score. */
static int64_t score_of(const struct score_case *c)
{
    char cluster[2048] = "";
    harness_append(cluster, sizeof(cluster),
                   "nodes:\n"
                   "  - {name: n, allocatable: {pods: 110, %s}}\n"
                   "  - {name: roomy, allocatable: {pods: 110, cpu: 64, memory: 64Gi, "
                   "ephemeral-storage: 64Gi, nvidia.com/gpu: 8, intel.com/foo: 64, "
                   "intel.com/bar: 64}}\n"
                   "pods:\n",
                   c->allocatable);
    for (int k = 0; k < 2 && c->placed[k] != NULL; k++)
        harness_append(cluster, sizeof(cluster), "  - {name: placed-%d, nodeName: n%s%s%s}\n",
                       k, c->placed[k][0] ? ", requests: {" : "", c->placed[k],
                       c->placed[k][0] ? "}" : "");
    harness_append(cluster, sizeof(cluster), "  - {name: web-0%s%s%s}\n",
                   c->requests[0] ? ", requests: {" : "", c->requests,
                   c->requests[0] ? "}" : "");
    harness_start(c->args, cluster);
    harness_expect_status(c->name, kc_harness_evaluate(harness, "web-0"), KC_SUCCESS);
    return kc_harness_score(harness, "n");
}

static void score_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(score_cases) / sizeof(score_cases[0]); i++) {
        const struct score_case *c = &score_cases[i];
        int64_t score = score_of(c);
        if (score != c->want)
            fail_msg("%s (%s): score %lld, want %lld", c->name, harness_mode_name(),
                     (long long)score, (long long)c->want);
    }
}

/* Args ------------------------------------------------------------------------------------- */

/* kube's "least allocated scores the free fraction" case under args that mean the defaults. */
static void args_empty_or_missing_mean_defaults(void **state)
{
    (void)state;
    static const char *const variants[] = {NULL, "", "{}", "{\"scoringStrategy\": {}}"};
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        const struct score_case c = {"defaults", variants[i], SMALL, {"cpu: 1, memory: 4000"},
                                     "cpu: 1, memory: 3000", 40};
        assert_int_equal(score_of(&c), 40);
        assert_int_equal(kc_harness_log_count(harness), 0);
    }
}

static void args_good_full_configuration_accepted(void **state)
{
    (void)state;
    /* Most: cpu 50*2, memory 50 -> 50. Balanced 100. (50+100)/2 */
    const struct score_case c = {
        "full configuration",
        "{\"scoringStrategy\": {\"type\": \"MostAllocated\", \"resources\": ["
        "{\"name\": \"cpu\", \"weight\": 2}, {\"name\": \"memory\", \"weight\": 1}]},"
        " \"balancedAllocation\": {\"enabled\": true, \"resources\": ["
        "{\"name\": \"cpu\", \"weight\": 1}, {\"name\": \"memory\"}]},"
        " \"ignoredResources\": [\"example.com/foo\"],"
        " \"ignoredResourceGroups\": [\"vendor.io\"]}",
        SMALL,
        {"cpu: 1, memory: 1000"},
        "cpu: 1, memory: 4000",
        75};
    assert_int_equal(score_of(&c), 75);
    assert_int_equal(kc_harness_log_count(harness), 0);
}

/* Kube defaults weight 0 (and a missing weight) to 1, then requires 1..100. */
static void args_weight_zero_means_one(void **state)
{
    (void)state;
    /* (50*1 + 30*3) / 4 = 35 */
    const struct score_case zero = {
        "weight 0", "{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", \"weight\": 0}, "
                    "{\"name\": \"memory\", \"weight\": 3}]}}",
        SMALL, {"cpu: 1, memory: 4000"}, "cpu: 1, memory: 3000", 35};
    assert_int_equal(score_of(&zero), 35);
    const struct score_case missing = {
        "no weight", "{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\"}, "
                     "{\"name\": \"memory\", \"weight\": 3}]}}",
        SMALL, {"cpu: 1, memory: 4000"}, "cpu: 1, memory: 3000", 35};
    assert_int_equal(score_of(&missing), 35);
}

/* init refuses args with one error line of the plugin's, naming what is wrong. */
static void expect_rejected(const char *args, const char *fragment)
{
    const char *error =
        harness_expect_open_error(args, "the plugin logged: ERROR noderesources: args: ");
    if (strstr(error, fragment) == NULL)
        fail_msg("%s: error \"%s\" lacks \"%s\"", harness_mode_name(), error, fragment);
}

static void args_unknown_strategy_rejected_with_message(void **state)
{
    (void)state;
    expect_rejected("{\"scoringStrategy\": {\"type\": \"Balanced\"}}",
                    "scoringStrategy.type \"Balanced\" is not supported; expected "
                    "\"LeastAllocated\", \"MostAllocated\" or \"RequestedToCapacityRatio\"");
    expect_rejected("{\"scoringStrategy\": {\"type\": 3}}", "scoringStrategy.type");
}

static void args_weight_out_of_range_rejected(void **state)
{
    (void)state;
    expect_rejected("{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", "
                    "\"weight\": 101}]}}",
                    "scoringStrategy.resources[0].weight of \"cpu\" is 101; expected 1 to 100");
    expect_rejected("{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", "
                    "\"weight\": -1}]}}",
                    "is -1");
    expect_rejected("{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", "
                    "\"weight\": 1.5}]}}",
                    "weight must be an integer");
    expect_rejected("{\"balancedAllocation\": {\"resources\": [{\"name\": \"cpu\", "
                    "\"weight\": 2}]}}",
                    "balancedAllocation.resources[0].weight of \"cpu\" is 2; expected 1");
}

static void args_malformed_rejected_with_message(void **state)
{
    (void)state;
    expect_rejected("{\"scoringStrategy\": ", "invalid JSON at line 1");
    expect_rejected("[1, 2]", "expected a JSON object");
    expect_rejected("{\"scoringStrategies\": {}}", "unknown key \"scoringStrategies\"");
    expect_rejected("{\"scoringStrategy\": {\"typo\": 1}}", "unknown key \"typo\" in "
                                                            "scoringStrategy");
    expect_rejected("{\"scoringStrategy\": []}", "scoringStrategy must be an object");
    expect_rejected("{\"scoringStrategy\": {\"resources\": [{\"weight\": 1}]}}",
                    "resources[0].name must be a non-empty resource name");
    expect_rejected("{\"scoringStrategy\": {\"resources\": [\"cpu\"]}}",
                    "scoringStrategy.resources[0] must be an object");
    expect_rejected("{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\"}, "
                    "{\"name\": \"cpu\"}]}}",
                    "lists \"cpu\" twice");
    expect_rejected("{\"balancedAllocation\": {\"enabled\": \"yes\"}}",
                    "balancedAllocation.enabled must be true or false");
    expect_rejected("{\"ignoredResources\": \"example.com/foo\"}",
                    "ignoredResources must be a list of strings");
    expect_rejected("{\"ignoredResources\": [\"\"]}", "ignoredResources[0] must be");
    expect_rejected("{\"ignoredResourceGroups\": [\"example.com/foo\"]}",
                    "resource group is the part before '/'");
}

static void requested_to_capacity_ratio_args_checked_like_kube(void **state)
{
    (void)state;
    static const struct {
        const char *ratio; /* the requestedToCapacityRatio value, or NULL for none */
        const char *fragment;
    } ratio_cases[] = {
        {NULL, "requestedToCapacityRatio is required"},
        {"{\"shape\": []}", "at least one point must be specified"},
        {"{}", "at least one point must be specified"},
        {"{\"shape\": [{\"utilization\": 50, \"score\": 1}, {\"utilization\": 50, \"score\": 2}]}",
         "shape[1].utilization: utilization values must be sorted in increasing order"},
        {"{\"shape\": [{\"utilization\": 60, \"score\": 1}, {\"utilization\": 50, \"score\": 2}]}",
         "must be sorted"},
        {"{\"shape\": [{\"utilization\": 101, \"score\": 1}]}", "not in valid range [0, 100]"},
        {"{\"shape\": [{\"utilization\": -1, \"score\": 1}]}", "not in valid range [0, 100]"},
        {"{\"shape\": [{\"utilization\": 10, \"score\": 11}]}",
         "shape[0].score: 11 not in valid range [0, 10]"},
        {"{\"shape\": [{\"utilization\": 10, \"weight\": 1}]}", "unknown key \"weight\""},
        {"{\"shape\": [{\"utilization\": \"10\", \"score\": 1}]}", "must be integers"},
        {"{\"curve\": []}", "must be an object {\"shape\""},
    };
    for (size_t i = 0; i < sizeof(ratio_cases) / sizeof(ratio_cases[0]); i++) {
        char args[512];
        if (ratio_cases[i].ratio != NULL)
            snprintf(args, sizeof(args),
                     "{\"scoringStrategy\": {\"type\": \"RequestedToCapacityRatio\", "
                     "\"requestedToCapacityRatio\": %s}}",
                     ratio_cases[i].ratio);
        else
            snprintf(args, sizeof(args),
                     "{\"scoringStrategy\": {\"type\": \"RequestedToCapacityRatio\"}}");
        expect_rejected(args, ratio_cases[i].fragment);
    }
}

/* ---- what a node's requests set apart from its pods showed on the fake host, through pods
 * placed on the node (a pod without a cpu request scores with kube's non-zero 100m) ---- */

/* Node n (allocatable, pods 110) with the placed pods' requests (NULL-terminated, "" none), a
 * roomy node beside it so that two nodes are feasible (the runtime scores only then), and
 * web-0 with requests ("" none); web-0's score on n after an evaluation. */
static int64_t score_on_node(const char *args, const char *allocatable,
                             const char *const *placed, const char *requests)
{
    const char *list[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 2 && placed != NULL && placed[k] != NULL; k++)
        list[k] = placed[k];
    struct score_case c = {"score_on_node", args, allocatable, {list[0], list[1]}, requests, 0};
    return score_of(&c);
}

static void least_allocated_truncates_like_kube(void **state)
{
    (void)state;
    /* cpu 2000*100/3000 = 66 (not 67), memory (10000-7000)*100/10000 = 30: (66+30)/2 = 48 */
    assert_int_equal(score_on_node(NULL, "cpu: 3, memory: 10000", NULL, "cpu: 1, memory: 7000"),
                     48);
}

static void least_allocated_overcommitted_resource_scores_zero(void **state)
{
    (void)state;
    /* cpu 4000 + 100 (web-0's default) over 4000: 0; memory 30: (0+30)/2 = 15 */
    static const char *const placed[] = {"cpu: 4, memory: 4000", NULL};
    assert_int_equal(score_on_node(NULL, "cpu: 4, memory: 10000", placed, "memory: 3000"), 15);
}

static void most_allocated_caps_at_capacity(void **state)
{
    (void)state;
    /* cpu capped at 100, memory 70: 85 */
    static const char *const placed[] = {"cpu: 4, memory: 4000", NULL};
    assert_int_equal(score_on_node("{\"scoringStrategy\": {\"type\": \"MostAllocated\"}}",
                                   "cpu: 4, memory: 10000", placed, "memory: 3000"),
                     85);
}

/* A requested extended resource the node does not have leaves the weight sum: cpu alone
 * scores 50. Filter passes the node only with the resource ignored (kube's ignoredResources
 * is Filter's alone; the scoring strategy still lists it). */
static void extended_resource_the_node_lacks_is_not_scored(void **state)
{
    (void)state;
    static const char *const placed[] = {"cpu: 1, memory: 4000", NULL};
    assert_int_equal(
        score_on_node("{\"ignoredResources\": [\"nvidia.com/gpu\"], \"scoringStrategy\": "
                      "{\"resources\": [{\"name\": \"cpu\", \"weight\": 1}, {\"name\": "
                      "\"nvidia.com/gpu\", \"weight\": 2}]}}",
                      "cpu: 4, memory: 10000", placed, "cpu: 1, memory: 3000, nvidia.com/gpu: 1"),
        50);
}

static void balanced_caps_fraction_at_one(void **state)
{
    (void)state;
    /* fractions: cpu 8100/4000 capped at 1.0, memory 5000/10000 0.5: std 0.25 -> 75; least: cpu
     * 0, memory 50 -> 25. (25+75)/2 = 50 */
    static const char *const placed[] = {"cpu: 8, memory: 1000", NULL};
    assert_int_equal(score_on_node("{\"balancedAllocation\": {\"enabled\": true}}",
                                   "cpu: 4, memory: 10000", placed, "memory: 4000"),
                     50);
}

/* kube's TestBrokenLinearFunction, read through whole-node scores: a one-resource shape whose
 * utilization is set by the cpu of the pod placed on the node (web-0 requests nothing). */
static void requested_to_capacity_ratio_broken_linear_function(void **state)
{
    (void)state;
    static const struct {
        const char *shape;
        int64_t utilization, want; /* want: the 0..10 score, scaled by 10 */
    } shape_cases[] = {
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 0, 10},
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 15, 15},
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 89, 89},
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 100, 90},
        {"[{\"utilization\": 0, \"score\": 2}, {\"utilization\": 40, \"score\": 10}, "
         "{\"utilization\": 100, \"score\": 0}]",
         20, 60},
        {"[{\"utilization\": 0, \"score\": 2}, {\"utilization\": 40, \"score\": 10}, "
         "{\"utilization\": 100, \"score\": 0}]",
         70, 50},
        /* 100% scores 0: cpu leaves the mean, nothing is left */
        {"[{\"utilization\": 0, \"score\": 2}, {\"utilization\": 40, \"score\": 10}, "
         "{\"utilization\": 100, \"score\": 0}]",
         100, 0},
        {"[{\"utilization\": 50, \"score\": 7}]", 10, 70},
        {"[{\"utilization\": 50, \"score\": 7}]", 90, 70},
    };
    for (size_t i = 0; i < sizeof(shape_cases) / sizeof(shape_cases[0]); i++) {
        char args[512], used[64];
        snprintf(args, sizeof(args),
                 "{\"scoringStrategy\": {\"type\": \"RequestedToCapacityRatio\", \"resources\": "
                 "[{\"name\": \"cpu\"}], \"requestedToCapacityRatio\": {\"shape\": %s}}}",
                 shape_cases[i].shape);
        snprintf(used, sizeof(used), "cpu: %lldm", (long long)shape_cases[i].utilization * 10);
        const char *const placed[] = {shape_cases[i].utilization > 0 ? used : NULL, NULL};
        int64_t got = score_on_node(args, "cpu: 1, memory: 1Gi", placed, "");
        if (got != shape_cases[i].want)
            fail_msg("case %zu (utilization %lld, %s): score %lld, want %lld", i,
                     (long long)shape_cases[i].utilization, harness_mode_name(), (long long)got,
                     (long long)shape_cases[i].want);
    }
}

/* kube's fit_test.go cases for ignoredResources / ignoredResourceGroups. */
static void fit_ignored_resources_table(void **state)
{
    (void)state;
    static const struct {
        const char *args;
        const char *resource; /* the pod asks for 1; the node has none */
        kc_status want;
        const char *reason;
    } ignored_cases[] = {
        {"{\"ignoredResources\": [\"example.com/aaa\"]}", "example.com/aaa", KC_SUCCESS, NULL},
        {"{\"ignoredResources\": [\"example.com/aaa\"]}", "example.com/bbb", KC_UNRESOLVABLE,
         "Insufficient example.com/bbb"},
        {"{\"ignoredResourceGroups\": [\"example.com\"]}", "example.com/aaa", KC_SUCCESS, NULL},
        {"{\"ignoredResourceGroups\": [\"example.com\"]}", "example.org/aaa", KC_UNRESOLVABLE,
         "Insufficient example.org/aaa"},
        /* a group is the whole part before '/': no prefix matching */
        {"{\"ignoredResourceGroups\": [\"example\"]}", "example.com/aaa", KC_UNRESOLVABLE,
         "Insufficient example.com/aaa"},
        /* kubernetes.io resources are native, never ignored */
        {"{\"ignoredResourceGroups\": [\"hugepages.kubernetes.io\"]}",
         "hugepages.kubernetes.io/x", KC_UNRESOLVABLE, "Insufficient hugepages.kubernetes.io/x"},
        {"{\"ignoredResources\": [\"hugepages-2Mi\"]}", "hugepages-2Mi", KC_UNRESOLVABLE,
         "Insufficient hugepages-2Mi"},
        {"{}", "example.com/aaa", KC_UNRESOLVABLE, "Insufficient example.com/aaa"},
    };
    for (size_t i = 0; i < sizeof(ignored_cases) / sizeof(ignored_cases[0]); i++) {
        char cluster[1024];
        snprintf(cluster, sizeof(cluster),
                 "nodes:\n  - {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}\n"
                 "pods:\n  - {name: busy, nodeName: n1, requests: {cpu: 3, memory: 4Gi}}\n"
                 "  - {name: web-0, requests: {cpu: 100m, memory: 1Gi, '%s': 1}}\n",
                 ignored_cases[i].resource);
        harness_start(ignored_cases[i].args, cluster);
        harness_expect_status(ignored_cases[i].resource, kc_harness_filter(harness, "web-0", "n1"),
                              ignored_cases[i].want);
        if (strcmp(kc_harness_message(harness), ignored_cases[i].reason != NULL ? ignored_cases[i].reason : "") !=
            0)
            fail_msg("case %zu (%s, %s, %s): reason \"%s\", want \"%s\"", i, ignored_cases[i].args,
                     ignored_cases[i].resource, harness_mode_name(), kc_harness_message(harness),
                     ignored_cases[i].reason != NULL ? ignored_cases[i].reason : "");
    }
}

/* Two cycles open at once (a group cycle's members: the first chosen and reserved, the next
 * evaluated): each Filter reads its own cycle's state, also once the other cycle has ended and
 * its state is freed. Filter runs again on a cycle without a new PreFilter in preemption's
 * what-if view of the node. */
static void interleaved_cycles_read_their_own_state(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}\n"
                        "pods:\n  - {name: busy, nodeName: n1, requests: {cpu: 3, memory: 4Gi}}\n"
                        "  - {name: small, requests: {cpu: 100m, memory: 1Gi}}\n"
                        "  - {name: big, requests: {cpu: 64, memory: 1Gi}}\n");
    harness_expect_status("small", kc_harness_filter(harness, "small", "n1"), KC_SUCCESS);
    harness_expect_status("small reserved",
                          kc_harness_call(harness, "small", KC_HARNESS_RESERVE, "n1"), KC_SUCCESS);
    harness_expect_status("big", kc_harness_filter(harness, "big", "n1"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), "Insufficient cpu");
    assert_int_equal(kc_harness_cycle_has(harness, "small", "noderesources/prefilter"), 1);
    assert_int_equal(kc_harness_cycle_has(harness, "big", "noderesources/prefilter"), 1);
    harness_expect_status("small again", kc_harness_what_if(harness, "small", "n1", NULL, NULL),
                          KC_SUCCESS);
    harness_expect_status("big again", kc_harness_what_if(harness, "big", "n1", NULL, NULL),
                          KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), "Insufficient cpu");
    harness_expect_status("small ends",
                          kc_harness_call(harness, "small", KC_HARNESS_UNRESERVE, NULL), KC_SUCCESS);
    assert_int_not_equal(kc_harness_cycle_has(harness, "small", "noderesources/prefilter"), 1);
    harness_expect_status("big after", kc_harness_what_if(harness, "big", "n1", NULL, NULL),
                          KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), "Insufficient cpu");
    assert_int_equal(kc_harness_cycle_has(harness, "big", "noderesources/prefilter"), 1);
}

/* kube's default scoring takes a shorter path per node (cpu_memory_score); the same resources
 * listed memory first take the general one. Both must give every score alike: nodes short of
 * room, over-committed, without memory, pods with and without requests, weights. The runtime
 * scores the nodes Filter passes: both orders must also agree on which those are. */
static void default_scoring_path_scores_as_the_general_one(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"{\"balancedAllocation\": {\"enabled\": true}}",
         "{\"scoringStrategy\": {\"resources\": [{\"name\": \"memory\"}, {\"name\": \"cpu\"}]},"
         " \"balancedAllocation\": {\"enabled\": true, \"resources\": [{\"name\": \"memory\"},"
         " {\"name\": \"cpu\"}]}}"},
        {"{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", \"weight\": 3},"
         " {\"name\": \"memory\", \"weight\": 1}]}}",
         "{\"scoringStrategy\": {\"resources\": [{\"name\": \"memory\", \"weight\": 1},"
         " {\"name\": \"cpu\", \"weight\": 3}]}}"},
    };
    static const char *const pods[] = {"p0", "p1", "p2", "p3"};
    static const char *const nodes[] = {"busy", "empty", "over", "no-memory", "tight"};
    /* allocatable and the placed pods' requests of the fake host's five nodes */
    static const char cluster[] =
        "nodes:\n"
        "  - {name: busy, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}\n"
        "  - {name: empty, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}\n"
        "  - {name: over, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}\n"
        "  - {name: no-memory, allocatable: {cpu: 4, memory: 0, pods: 110}}\n"
        "  - {name: tight, allocatable: {cpu: 1, memory: 32Gi, pods: 110}}\n"
        /* two roomy nodes: two nodes are always feasible, so every feasible one is scored */
        "  - {name: roomy-a, allocatable: {cpu: 64, memory: 64Gi, pods: 110}}\n"
        "  - {name: roomy-b, allocatable: {cpu: 64, memory: 64Gi, pods: 110}}\n"
        "pods:\n"
        "  - {name: b, nodeName: busy, requests: {cpu: 3, memory: 4Gi}}\n"
        "  - {name: o, nodeName: over, requests: {cpu: 5, memory: 9Gi}}\n"
        "  - {name: m, nodeName: no-memory, requests: {cpu: 1}}\n"
        "  - {name: t, nodeName: tight, requests: {cpu: 999m, memory: 1}}\n"
        "  - {name: p0}\n"
        "  - {name: p1, requests: {cpu: 500m, memory: 1Gi}}\n"
        "  - {name: p2, requests: {cpu: 100m}}\n"
        "  - {name: p3, requests: {cpu: 3500m, memory: 6Gi}}\n";
    enum { PODS = 4, NODES = 5 };
    int scored = 0;
    for (size_t a = 0; a < sizeof(pairs) / sizeof(pairs[0]); a++) {
        int64_t got[2][PODS][NODES];
        for (int order = 0; order < 2; order++) {
            harness_start(pairs[a][order], cluster);
            for (int p = 0; p < PODS; p++) {
                kc_status st = kc_harness_evaluate(harness, pods[p]);
                if (st != KC_SUCCESS && st != KC_UNSCHEDULABLE && st != KC_UNRESOLVABLE)
                    fail_msg("%s (%s): status %d: %s", pods[p], harness_mode_name(), (int)st,
                             kc_harness_error(harness));
                for (int n = 0; n < NODES; n++)
                    got[order][p][n] = kc_harness_feasible(harness, nodes[n])
                                           ? kc_harness_score(harness, nodes[n])
                                           : -2;
            }
        }
        for (int p = 0; p < PODS; p++)
            for (int n = 0; n < NODES; n++) {
                if (got[0][p][n] != got[1][p][n])
                    fail_msg("args %zu, %s on %s (%s): %lld by the default path, %lld by the "
                             "general one",
                             a, pods[p], nodes[n], harness_mode_name(), (long long)got[0][p][n],
                             (long long)got[1][p][n]);
                if (got[0][p][n] != -2) {
                    assert_in_range(got[0][p][n], 0, 100);
                    scored++;
                }
            }
    }
    /* the overcommitted and memoryless nodes are scored for the pods they pass */
    assert_true(scored >= 2 * 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(least_allocated_truncates_like_kube),
        HARNESS_TEST(least_allocated_overcommitted_resource_scores_zero),
        HARNESS_TEST(most_allocated_caps_at_capacity),
        HARNESS_TEST(extended_resource_the_node_lacks_is_not_scored),
        HARNESS_TEST(balanced_caps_fraction_at_one),
        HARNESS_TEST(requested_to_capacity_ratio_broken_linear_function),
        HARNESS_TEST(fit_ignored_resources_table),
        HARNESS_TEST(interleaved_cycles_read_their_own_state),
        HARNESS_TEST(default_scoring_path_scores_as_the_general_one),
        HARNESS_TEST(fit_table),
        HARNESS_TEST(score_table),
        HARNESS_TEST(reasons_accumulate_per_node_for_the_histogram),
        HARNESS_TEST(args_empty_or_missing_mean_defaults),
        HARNESS_TEST(args_good_full_configuration_accepted),
        HARNESS_TEST(args_unknown_strategy_rejected_with_message),
        HARNESS_TEST(args_weight_zero_means_one),
        HARNESS_TEST(args_weight_out_of_range_rejected),
        HARNESS_TEST(args_malformed_rejected_with_message),
        HARNESS_TEST(requested_to_capacity_ratio_args_checked_like_kube),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
