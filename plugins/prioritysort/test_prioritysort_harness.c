/* prioritysort on the plugin test harness, in both isolation modes: kube's PrioritySort order
 * (higher priority first, then the earlier queue timestamp, then the earlier creation) made
 * total by namespace and name, asked through QueueSort's less for pods of a simulation file.
 * A pod's queue timestamp is 0 unless a test sets it (kc_harness_set_enqueue_ms). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

struct tpod {
    const char *namespace_name;
    const char *name;
    int32_t priority;
    int created_s; /* seconds after 2024-05-01T10:00:00Z */
};

/* A cluster of one node and pods in the API's form (for their creationTimestamp). */
static void start_with(const struct tpod *pods, size_t count)
{
    static char cluster[8192];
    cluster[0] = '\0';
    harness_append(cluster, sizeof(cluster),
                   "nodes:\n  - {name: n1, allocatable: {cpu: 4}}\npods:\n");
    for (size_t i = 0; i < count; i++)
        harness_append(cluster, sizeof(cluster),
                       "  - metadata: {name: %s, namespace: %s, creationTimestamp: "
                       "'2024-05-01T10:%02d:%02dZ'}\n"
                       "    spec: {priority: %d, containers: [{name: main}]}\n",
                       pods[i].name, pods[i].namespace_name, pods[i].created_s / 60,
                       pods[i].created_s % 60, (int)pods[i].priority);
    harness_start("{}", cluster);
}

static int less(const char *a, const char *b)
{
    int result = kc_harness_less(harness, a, b);
    if (result < 0)
        fail_msg("less(%s, %s) (%s): %s", a, b, harness_mode_name(), kc_harness_error(harness));
    return result;
}

static void higher_priority_goes_first_even_if_later(void **state)
{
    (void)state;
    const struct tpod pods[] = {{"default", "low", 10, 1}, {"default", "high", 1000, 900}};
    start_with(pods, 2);
    assert_true(less("high", "low"));
    assert_false(less("low", "high"));
}

static void negative_priority_goes_after_zero(void **state)
{
    (void)state;
    const struct tpod pods[] = {{"default", "zero", 0, 500}, {"default", "negative", -5, 1}};
    start_with(pods, 2);
    assert_true(less("zero", "negative"));
    assert_false(less("negative", "zero"));
}

static void equal_priority_earlier_creation_goes_first(void **state)
{
    (void)state;
    const struct tpod pods[] = {{"zz", "older", 5, 10}, {"aa", "newer", 5, 20}};
    start_with(pods, 2);
    assert_true(less("zz/older", "aa/newer"));
    assert_false(less("aa/newer", "zz/older"));
}

static void set_enqueue(const char *pod, int64_t enqueue_ms)
{
    if (kc_harness_set_enqueue_ms(harness, pod, enqueue_ms) != 0)
        fail_msg("set_enqueue_ms(%s): %s", pod, kc_harness_error(harness));
}

/* kube's tie-break after priority: the pod the queue took first, whatever their creation. */
static void equal_priority_earlier_enqueue_goes_first(void **state)
{
    (void)state;
    const struct tpod pods[] = {{"zz", "zz", 5, 900}, {"aa", "aa", 5, 1}};
    start_with(pods, 2);
    set_enqueue("zz/zz", 100);
    set_enqueue("aa/aa", 200);
    assert_true(less("zz/zz", "aa/aa"));
    assert_false(less("aa/aa", "zz/zz"));
}

static void equal_enqueue_earlier_creation_goes_first(void **state)
{
    (void)state;
    const struct tpod pods[] = {{"zz", "zz", 5, 10}, {"aa", "aa", 5, 20}};
    start_with(pods, 2);
    set_enqueue("zz/zz", 100);
    set_enqueue("aa/aa", 100);
    assert_true(less("zz/zz", "aa/aa"));
    assert_false(less("aa/aa", "zz/zz"));
}

static void full_tie_orders_by_namespace_then_name(void **state)
{
    (void)state;
    const struct tpod pods[] = {
        {"alpha", "zeta", 5, 10}, {"beta", "alpha", 5, 10}, {"beta", "xray", 5, 10}};
    start_with(pods, 3);
    assert_true(less("alpha/zeta", "beta/alpha"));
    assert_false(less("beta/alpha", "alpha/zeta"));
    assert_true(less("beta/alpha", "beta/xray"));
    assert_false(less("beta/xray", "beta/alpha"));
}

/* less(a, a) hands the plugin two pod objects with identical fields (each side of a queue call
 * is its own object): neither goes before the other, queue timestamp included. */
static void pod_is_not_before_itself(void **state)
{
    (void)state;
    const struct tpod pods[] = {{"default", "a", 5, 10}};
    start_with(pods, 1);
    assert_false(less("a", "a"));
    set_enqueue("a", 100);
    assert_false(less("a", "a"));
}

static void priority_outweighs_any_creation_time(void **state)
{
    (void)state;
    const struct tpod pods[] = {
        {"default", "old-low", 1, 0}, {"default", "new-high", 2, 3599}, {"default", "mid", 1, 30}};
    start_with(pods, 3);
    assert_true(less("new-high", "old-low"));
    assert_true(less("new-high", "mid"));
    assert_true(less("old-low", "mid"));
    assert_false(less("mid", "old-low"));
}

/* Exactly one of less(a, b), less(b, a) holds for distinct pods, and less is transitive: the
 * queue order cannot depend on how the heap happened to compare them. */
static void order_is_total_and_transitive(void **state)
{
    (void)state;
    enum { COUNT = 8 };
    static const char *const names[COUNT] = {"a", "b", "c", "d", "a", "b", "c", "d"};
    struct tpod pods[COUNT];
    char refs[COUNT][16];
    for (int i = 0; i < COUNT; i++) {
        pods[i] = (struct tpod){i < 4 ? "ns1" : "ns2", names[i], (i % 3) * 10, 50 + (i % 4)};
        snprintf(refs[i], sizeof(refs[i]), "%s/%s", pods[i].namespace_name, names[i]);
    }
    start_with(pods, COUNT);
    int order[COUNT][COUNT];
    for (int a = 0; a < COUNT; a++)
        for (int b = 0; b < COUNT; b++)
            order[a][b] = less(refs[a], refs[b]);
    for (int a = 0; a < COUNT; a++) {
        assert_int_equal(order[a][a], 0);
        for (int b = 0; b < COUNT; b++) {
            if (a != b)
                assert_int_equal(order[a][b] + order[b][a], 1);
            for (int c = 0; c < COUNT; c++)
                if (order[a][b] && order[b][c])
                    assert_true(order[a][c]);
        }
    }
}

/* A test that names a pod the cluster lacks gets an error, not a verdict. */
static void an_unknown_pod_is_an_error(void **state)
{
    (void)state;
    const struct tpod pods[] = {{"default", "a", 5, 10}};
    start_with(pods, 1);
    assert_int_equal(kc_harness_less(harness, "a", "ghost"), -1);
    assert_non_null(strstr(kc_harness_error(harness), "no pod 'ghost'"));
    /* and the plugin has nothing to say about admission or groups */
    harness_expect_status("PreEnqueue", kc_harness_pre_enqueue(harness, "a"), KC_SUCCESS);
    harness_expect_status("group_of", kc_harness_group_of(harness, "a"), KC_SKIP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(higher_priority_goes_first_even_if_later),
        HARNESS_TEST(negative_priority_goes_after_zero),
        HARNESS_TEST(equal_priority_earlier_creation_goes_first),
        HARNESS_TEST(equal_priority_earlier_enqueue_goes_first),
        HARNESS_TEST(equal_enqueue_earlier_creation_goes_first),
        HARNESS_TEST(full_tie_orders_by_namespace_then_name),
        HARNESS_TEST(pod_is_not_before_itself),
        HARNESS_TEST(priority_outweighs_any_creation_time),
        HARNESS_TEST(order_is_total_and_transitive),
        HARNESS_TEST(an_unknown_pod_is_an_error),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
