/* coscheduling on the plugin test harness, in both isolation modes: the group each pod
 * declares (group_of) from PodGroup objects as scheduler-plugins writes them, the queue order
 * (QueueSort), PreFilter's refusals with their reasons and Permit's wait for the quorum
 * (PostFilter only rejects waiting siblings: test_coscheduling.c), and bad args. Members with
 * a nodeName are the group's placed pods; the others are pending pods the test evaluates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#define LABEL "scheduling.x-k8s.io/pod-group"

/* A scheduler-plugins PodGroup as an object of the cluster (JSON is YAML). */
#define PODGROUP(name, created, spec)                                                              \
    "  - {\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\", "              \
    "\"metadata\": {\"name\": \"" name "\", \"namespace\": \"default\", "                          \
    "\"creationTimestamp\": \"" created "\"}, \"spec\": " spec "}\n"

#define NODES                                                                                      \
    "nodes:\n"                                                                                     \
    "  - {name: a, allocatable: {cpu: 4, pods: 110}}\n"                                            \
    "  - {name: b, allocatable: {cpu: 4, pods: 110}}\n"

static void group_of_declares_the_podgroup_and_its_quorum(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-0, labels: {" LABEL ": nginx}}\n"
                              "  - {name: alone}\n"
                              "objects:\n" PODGROUP("nginx", "2024-05-01T10:00:00Z",
                                                    "{\"scheduleTimeoutSeconds\": 10, "
                                                    "\"minMember\": 3}"));
    harness_expect_status("member", kc_harness_group_of(harness, "nginx-0"), KC_SUCCESS);
    assert_string_equal(kc_harness_group_name(harness), "default/nginx");
    assert_int_equal(kc_harness_group_min_member(harness), 3);
    harness_expect_status("no label", kc_harness_group_of(harness, "alone"), KC_SKIP);
    assert_null(kc_harness_group_name(harness));
}

/* A label whose PodGroup is not known yet declares nothing; the PodGroup arriving does. */
static void a_group_is_declared_once_its_podgroup_exists(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-0, labels: {" LABEL ": nginx}}\n");
    harness_expect_status("no PodGroup", kc_harness_group_of(harness, "nginx-0"), KC_SKIP);
    assert_int_equal(kc_harness_update(harness, "objects:\n" PODGROUP("nginx",
                                                                      "2024-05-01T10:00:00Z",
                                                                      "{\"minMember\": 4}")),
                     0);
    harness_expect_status("PodGroup added", kc_harness_group_of(harness, "nginx-0"), KC_SUCCESS);
    assert_int_equal(kc_harness_group_min_member(harness), 4);
    /* a change of the object changes the quorum */
    assert_int_equal(kc_harness_update(harness, "objects:\n" PODGROUP("nginx",
                                                                      "2024-05-01T10:00:00Z",
                                                                      "{\"minMember\": 2}")),
                     0);
    harness_expect_status("PodGroup changed", kc_harness_group_of(harness, "nginx-0"), KC_SUCCESS);
    assert_int_equal(kc_harness_group_min_member(harness), 2);
}

static void volcano_podgroups_are_not_ours(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: job-0, labels: {" LABEL ": job}}\n"
                              "objects:\n"
                              "  - {\"apiVersion\": \"scheduling.volcano.sh/v1beta1\", \"kind\": "
                              "\"PodGroup\", \"metadata\": {\"name\": \"job\", \"namespace\": "
                              "\"default\"}, \"spec\": {\"minMember\": 2}}\n");
    harness_expect_status("volcano", kc_harness_group_of(harness, "job-0"), KC_SKIP);
    harness_expect_status("PreFilter", kc_harness_filter(harness, "job-0", "a"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), "pod group default/job not found");
}

static void pre_filter_refuses_a_member_of_an_unknown_group(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-0, labels: {" LABEL ": nginx}}\n"
                              "  - {name: plain}\n");
    harness_expect_status("unknown group", kc_harness_evaluate(harness, "nginx-0"),
                          KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), "pod group default/nginx not found");
    assert_int_equal(kc_harness_feasible(harness, "a"), 0);
    /* a pod of no group is not the plugin's business */
    harness_expect_status("plain", kc_harness_evaluate(harness, "plain"), KC_SUCCESS);
    assert_int_equal(kc_harness_feasible(harness, "a"), 1);
    assert_int_equal(kc_harness_feasible(harness, "b"), 1);
}

static void pre_filter_refuses_a_group_short_of_min_member(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-0, nodeName: a, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-1, labels: {" LABEL ": nginx}}\n"
                              "objects:\n" PODGROUP("nginx", "2024-05-01T10:00:00Z",
                                                    "{\"minMember\": 3}"));
    harness_expect_status("short", kc_harness_filter(harness, "nginx-1", "b"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness),
                        "pod group default/nginx: 1 pods exist, fewer than minMember 3");
}

/* Once minMember members are placed the group runs: its later members pass PreFilter and
 * Permit at once. */
static void a_group_with_its_quorum_placed_admits_more_members(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-0, nodeName: a, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-1, nodeName: a, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-2, nodeName: b, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-3, labels: {" LABEL ": nginx}}\n"
                              "objects:\n" PODGROUP("nginx", "2024-05-01T10:00:00Z",
                                                    "{\"minMember\": 3}"));
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "nginx-3"), KC_SUCCESS);
    harness_expect_status("reserve", kc_harness_call(harness, "nginx-3", KC_HARNESS_RESERVE, "b"),
                          KC_SUCCESS);
    harness_expect_status("permit", kc_harness_call(harness, "nginx-3", KC_HARNESS_PERMIT, "b"),
                          KC_SUCCESS);
}

#define NODE_B "nodes:\n  - {name: b, allocatable: {cpu: 4, pods: 110}}\n"

/* Outside a group cycle (the permit path), a member waits at Permit while fewer than minMember
 * are placed, and passes once they are. The harness counts placed members only (a pending pod
 * is no cluster event here), so Permit is called on the cycle of an evaluation PreFilter
 * refused. */
static void permit_waits_until_min_member_are_placed(void **state)
{
    (void)state;
    harness_start("{\"groupCycle\": false}",
                  NODES "pods:\n"
                        "  - {name: nginx-0, nodeName: a, labels: {" LABEL ": nginx}}\n"
                        "  - {name: nginx-1, nodeName: a, labels: {" LABEL ": nginx}}\n"
                        "  - {name: nginx-2, labels: {" LABEL ": nginx}}\n"
                        "objects:\n" PODGROUP("nginx", "2024-05-01T10:00:00Z",
                                              "{\"scheduleTimeoutSeconds\": 10, \"minMember\": "
                                              "3}"));
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "nginx-2"), KC_UNRESOLVABLE);
    harness_expect_status("permit", kc_harness_call(harness, "nginx-2", KC_HARNESS_PERMIT, "b"),
                          KC_WAIT);
    /* another pod of another group changes nothing */
    assert_int_equal(kc_harness_update(harness, NODE_B "pods:\n"
                                                       "  - {name: x-0, nodeName: b, labels: {"
                                                       LABEL ": other}}\n"),
                     0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "nginx-2"), KC_UNRESOLVABLE);
    harness_expect_status("permit", kc_harness_call(harness, "nginx-2", KC_HARNESS_PERMIT, "b"),
                          KC_WAIT);
    /* a third member placed: the quorum is there */
    assert_int_equal(kc_harness_update(harness, NODE_B "pods:\n"
                                                       "  - {name: nginx-5, nodeName: b, labels: {"
                                                       LABEL ": nginx}}\n"),
                     0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "nginx-2"), KC_SUCCESS);
    harness_expect_status("reserve", kc_harness_call(harness, "nginx-2", KC_HARNESS_RESERVE, "b"),
                          KC_SUCCESS);
    harness_expect_status("permit", kc_harness_call(harness, "nginx-2", KC_HARNESS_PERMIT, "b"),
                          KC_SUCCESS);
}

/* The count of a group's pods follows pods placed and deleted. */
static void counts_follow_pods_placed_and_deleted(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-0, nodeName: a, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-1, nodeName: a, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-2, nodeName: b, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-3, labels: {" LABEL ": nginx}}\n"
                              "objects:\n" PODGROUP("nginx", "2024-05-01T10:00:00Z",
                                                    "{\"minMember\": 5}"));
    harness_expect_status("3 of 5", kc_harness_evaluate(harness, "nginx-3"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness),
                        "pod group default/nginx: 3 pods exist, fewer than minMember 5");
    assert_int_equal(kc_harness_update(harness, NODE_B "pods:\n"
                                                       "  - {name: nginx-4, nodeName: b, labels: {"
                                                       LABEL ": nginx}}\n"),
                     0);
    harness_expect_status("4 of 5", kc_harness_evaluate(harness, "nginx-3"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness),
                        "pod group default/nginx: 4 pods exist, fewer than minMember 5");
    assert_int_equal(kc_harness_delete_pod(harness, "nginx-4"), 0);
    assert_int_equal(kc_harness_delete_pod(harness, "nginx-2"), 0);
    harness_expect_status("2 of 5", kc_harness_filter(harness, "nginx-3", "a"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness),
                        "pod group default/nginx: 2 pods exist, fewer than minMember 5");
}

static void queue_orders_priority_then_group_creation_then_group_name(void **state)
{
    (void)state;
    harness_start("{}", NODES
                  "pods:\n"
                  "  - {name: z, labels: {" LABEL ": early}}\n"
                  "  - {name: a, labels: {" LABEL ": early}}\n"
                  "  - {name: a0, labels: {" LABEL ": late}}\n"
                  "  - {name: a1, labels: {" LABEL ": later}}\n"
                  "  - {name: u, priority: 10, labels: {" LABEL ": later}}\n"
                  "objects:\n" PODGROUP("early", "2024-05-01T10:00:00Z", "{\"minMember\": 2}")
                  /* 11:00+01:00 is 10:00Z: the same instant as early */
                  PODGROUP("late", "2024-05-01T11:00:00+01:00", "{\"minMember\": 2}")
                  PODGROUP("later", "2024-05-01T10:00:00.5Z", "{\"minMember\": 2}"));
    /* priority first, whatever the group */
    assert_int_equal(kc_harness_less(harness, "u", "a"), 1);
    assert_int_equal(kc_harness_less(harness, "a", "u"), 0);
    /* then the group's creation */
    assert_int_equal(kc_harness_less(harness, "a", "a1"), 1);
    assert_int_equal(kc_harness_less(harness, "a1", "a"), 0);
    /* the same instant: by group name, so a group's members stay together */
    assert_int_equal(kc_harness_less(harness, "z", "a0"), 1);
    assert_int_equal(kc_harness_less(harness, "a0", "z"), 0);
    /* within a group: by name */
    assert_int_equal(kc_harness_less(harness, "a", "z"), 1);
    assert_int_equal(kc_harness_less(harness, "z", "a"), 0);
    assert_int_equal(kc_harness_less(harness, "a", "a"), 0);
    assert_int_equal(kc_harness_less(harness, "a", "nobody"), -1);
    assert_non_null(strstr(kc_harness_error(harness), "no pod 'nobody'"));
}

static void bad_args_are_refused_naming_the_key(void **state)
{
    (void)state;
    harness_expect_open_error("{\"permitWaitingTimeSecond\": 30}",
                              "unknown key \"permitWaitingTimeSecond\"");
    harness_expect_open_error("{\"podGroupBackoffSeconds\": -1}", NULL);
    harness_expect_open_error("{\"groupCycle\": \"yes\"}", NULL);
    harness_expect_open_error("[]", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(group_of_declares_the_podgroup_and_its_quorum),
        HARNESS_TEST(a_group_is_declared_once_its_podgroup_exists),
        HARNESS_TEST(volcano_podgroups_are_not_ours),
        HARNESS_TEST(pre_filter_refuses_a_member_of_an_unknown_group),
        HARNESS_TEST(pre_filter_refuses_a_group_short_of_min_member),
        HARNESS_TEST(a_group_with_its_quorum_placed_admits_more_members),
        HARNESS_TEST(permit_waits_until_min_member_are_placed),
        HARNESS_TEST(counts_follow_pods_placed_and_deleted),
        HARNESS_TEST(queue_orders_priority_then_group_creation_then_group_name),
        HARNESS_TEST(bad_args_are_refused_naming_the_key),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
