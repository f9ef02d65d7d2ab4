/* coscheduling on the plugin test harness, in both isolation modes: the group each pod
 * declares (group_of, every field of kc_group_info) from PodGroup objects as scheduler-plugins
 * writes them and from the args, the queue order (QueueSort, the enqueue-time tie-break),
 * PreFilter's refusals with their reasons (quorum, minResources against the free room), Permit's
 * wait for the quorum, the waiting siblings Permit, Unreserve and PostFilter allow or reject on
 * the permit path and leave to the runtime in a group cycle, and bad args. Members with a
 * nodeName are the group's placed pods; the others are pending pods the test evaluates (and,
 * with harness_start_pending, pods the plugin hears of as the scheduler's cache sends them). */
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

/* ---- what the fake host used to show: the whole declaration, pending members, group cycles,
 * waiting siblings and the enqueue-time tie-break ---- */

#define NGINX                                                                                      \
    PODGROUP("nginx", "2024-05-01T10:00:00Z", "{\"scheduleTimeoutSeconds\": 10, \"minMember\": 3}")

static kc_group_info group_info(const char *pod)
{
    kc_group_info info = {.struct_size = sizeof(info)};
    harness_expect_status(pod, kc_harness_group_of(harness, pod), KC_SUCCESS);
    assert_int_equal(kc_harness_group_info(harness, &info), 1);
    return info;
}

/* Each field of kc_group_info that the args set when the PodGroup does not. */
static void args_set_the_group_declarations_defaults(void **state)
{
    (void)state;
    harness_start("{\"permitWaitingTimeSeconds\": 30, \"podGroupBackoffSeconds\": 5, "
                  "\"groupCycle\": false}",
                  NODES "pods:\n"
                        "  - {name: p, labels: {" LABEL ": nginx}}\n"
                        "objects:\n"
                        "  - {\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": "
                        "\"PodGroup\", \"metadata\": {\"name\": \"nginx\", \"namespace\": "
                        "\"default\"}, \"spec\": {\"minMember\": 2}}\n");
    kc_group_info info = group_info("p");
    assert_int_equal(info.flags & KC_GROUP_CYCLE, 0);  /* groupCycle: false */
    assert_int_equal(info.schedule_timeout_ms, 30000); /* no scheduleTimeoutSeconds */
    assert_int_equal(info.backoff_ms, 5000);
}

/* Every field of the declaration from a scheduler-plugins PodGroup, its change and its
 * deletion. */
static void scheduler_plugins_podgroup_declares_the_whole_group(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-0, labels: {" LABEL ": nginx}}\n"
                              "  - {name: alone}\n");
    /* a pod with the label whose PodGroup is not known yet is not declared */
    harness_expect_status("no PodGroup", kc_harness_group_of(harness, "nginx-0"), KC_SKIP);
    kc_group_info info = {.struct_size = sizeof(info)};
    assert_int_equal(kc_harness_group_info(harness, &info), 0);
    harness_expect_ok("PodGroup", kc_harness_update(harness, "objects:\n" NGINX));
    info = group_info("nginx-0");
    assert_string_equal(info.namespace_name, "default");
    assert_string_equal(info.name, "nginx");
    assert_int_equal(info.min_member, 3);
    assert_int_equal(info.flags, KC_GROUP_CYCLE);
    assert_int_equal(info.schedule_timeout_ms, 10000);
    assert_int_equal(info.backoff_ms, 0);
    assert_int_equal(info.creation_ms, 1714557600000ll);
    harness_expect_status("loner", kc_harness_group_of(harness, "alone"), KC_SKIP);
    /* the annotation sends one group down the permit path */
    harness_expect_ok("annotated",
                      kc_harness_update(harness,
                                        "objects:\n"
                                        "  - {\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", "
                                        "\"kind\": \"PodGroup\", \"metadata\": {\"name\": "
                                        "\"nginx\", \"namespace\": \"default\", \"annotations\": "
                                        "{\"kcycle.io/group-cycle\": \"false\"}}, \"spec\": "
                                        "{\"minMember\": 4}}\n"));
    info = group_info("nginx-0");
    assert_int_equal(info.flags, 0);
    assert_int_equal(info.min_member, 4);
    assert_int_equal(info.schedule_timeout_ms, 60000); /* permitWaitingTimeSeconds */
    harness_expect_ok("delete", kc_harness_delete_object(harness, "PodGroup", "default/nginx"));
    harness_expect_status("deleted", kc_harness_group_of(harness, "nginx-0"), KC_SKIP);
}

/* minResources against the free room of every node (allocatable less what pods use), with the
 * group's pending members counted from the cache's events; in a group cycle member 0 checked
 * it for the whole group. */
static void pre_filter_refuses_a_group_whose_min_resources_do_not_fit(void **state)
{
    (void)state;
    harness_start_pending("{}",
                          "nodes:\n"
                          "  - {name: a, allocatable: {cpu: 4, pods: 110, nvidia.com/gpu: 8}}\n"
                          "  - {name: b, allocatable: {cpu: 4, pods: 110}}\n"
                          "pods:\n"
                          "  - {name: busy, nodeName: b, requests: {cpu: 3}}\n"
                          "  - {name: nginx-0, labels: {" LABEL ": nginx}}\n"
                          "  - {name: nginx-1, labels: {" LABEL ": nginx}}\n"
                          "  - {name: plain}\n"
                          "objects:\n"
                          "  - {\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": "
                          "\"PodGroup\", \"metadata\": {\"name\": \"nginx\", \"namespace\": "
                          "\"default\"}, \"spec\": {\"minMember\": 2, \"minResources\": "
                          "{\"cpu\": \"5500m\", \"nvidia.com/gpu\": 8}}}\n");
    /* 4 + 1 CPUs free: 500m short; the GPUs fit */
    harness_expect_status("short", kc_harness_filter(harness, "nginx-0", "a"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "pod group default/nginx: minResources do not "
                                                     "fit the free room of the cluster (cpu short "
                                                     "by 500m)");
    harness_expect_ok("busy shrinks",
                      kc_harness_update(harness,
                                        "nodes:\n  - {name: b, allocatable: {cpu: 4, pods: "
                                        "110}}\npods:\n  - {name: busy, nodeName: b, "
                                        "requests: {cpu: 2}}\n"));
    harness_expect_status("fits", kc_harness_filter(harness, "nginx-0", "a"), KC_SUCCESS);
    /* quantities as the API writes them */
    harness_expect_ok("more",
                      kc_harness_update(harness,
                                        "nodes:\n  - {name: a, allocatable: {cpu: 4, pods: 110, "
                                        "nvidia.com/gpu: 8, memory: 512Mi}}\n"
                                        "objects:\n"
                                        "  - {\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", "
                                        "\"kind\": \"PodGroup\", \"metadata\": {\"name\": "
                                        "\"nginx\", \"namespace\": \"default\"}, \"spec\": "
                                        "{\"minMember\": 2, \"minResources\": {\"cpu\": \"6.5\", "
                                        "\"memory\": \"1Gi\"}}}\n"));
    harness_expect_status("short twice", kc_harness_evaluate(harness, "nginx-0"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness),
                        "pod group default/nginx: minResources do not fit the free room of the "
                        "cluster (cpu short by 500m, memory short by 536870912)");
    /* in a group cycle, member 0 checked it for the whole group */
    harness_expect_status("member 1", kc_harness_evaluate_in_group(harness, "nginx-0", 1, 2, 2),
                          KC_SUCCESS);
    harness_expect_status("member 0", kc_harness_evaluate_in_group(harness, "nginx-0", 0, 2, 2),
                          KC_UNSCHEDULABLE);
    /* a pod of no group is not the plugin's business (PreFilter skips it: every node fits) */
    harness_expect_status("plain", kc_harness_evaluate(harness, "plain"), KC_SUCCESS);
    assert_int_equal(kc_harness_feasible(harness, "a"), 1);
    assert_int_equal(kc_harness_feasible(harness, "b"), 1);
}

/* Members of one group tie on priority, the group's creation, namespace and group name: the
 * earlier enqueue goes first, before the pod's name decides. */
static void queue_orders_members_of_a_group_by_enqueue_time(void **state)
{
    (void)state;
    harness_start("{}", NODES "pods:\n"
                              "  - {name: nginx-b, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-a, labels: {" LABEL ": nginx}}\n"
                              "  - {name: nginx-c, labels: {" LABEL ": nginx}}\n"
                              "objects:\n" NGINX);
    harness_expect_ok("first", kc_harness_set_enqueue_ms(harness, "nginx-b", 100));
    harness_expect_ok("later", kc_harness_set_enqueue_ms(harness, "nginx-a", 200));
    harness_expect_ok("same", kc_harness_set_enqueue_ms(harness, "nginx-c", 100));
    assert_int_equal(kc_harness_less(harness, "nginx-b", "nginx-a"), 1);
    assert_int_equal(kc_harness_less(harness, "nginx-a", "nginx-b"), 0);
    /* the same enqueue time: the name */
    assert_int_equal(kc_harness_less(harness, "nginx-b", "nginx-c"), 1);
    assert_int_equal(kc_harness_less(harness, "nginx-c", "nginx-b"), 0);
}

/* Assume, Reserve and Permit as the scheduler's cycle runs them for pod on node. */
static kc_status place(const char *pod, const char *node)
{
    harness_expect_ok(pod, kc_harness_assume(harness, pod, node));
    harness_expect_status(pod, kc_harness_call(harness, pod, KC_HARNESS_RESERVE, node), KC_SUCCESS);
    return kc_harness_call(harness, pod, KC_HARNESS_PERMIT, node);
}

static void evaluate_member(const char *pod)
{
    harness_expect_status(pod, kc_harness_evaluate(harness, pod), KC_SUCCESS);
}

static void evaluate_in_group(const char *pod, uint32_t index, uint32_t count, uint32_t needed)
{
    harness_expect_status(pod, kc_harness_evaluate_in_group(harness, pod, index, count, needed),
                          KC_SUCCESS);
}

#define THREE_PENDING                                                                              \
    "pods:\n"                                                                                      \
    "  - {name: nginx-0, labels: {" LABEL ": nginx}}\n"                                            \
    "  - {name: nginx-1, labels: {" LABEL ": nginx}}\n"                                            \
    "  - {name: nginx-2, labels: {" LABEL ": nginx}}\n"

/* On the permit path each member waits in Permit until the quorum is assumed; the last one
 * allows its waiting siblings and no other group's pod. In a group cycle the runtime commits
 * the group: Permit never waits. */
static void permit_path_waits_until_the_group_is_placed_then_allows_all(void **state)
{
    (void)state;
    harness_start_pending(
        "{}", NODES THREE_PENDING
        "  - {name: x-0, labels: {" LABEL ": x}}\n"
        "  - {name: g-0, labels: {" LABEL ": g}}\n"
        "objects:\n" NGINX PODGROUP("g", "2024-05-01T10:00:00Z", "{\"minMember\": 5}"));
    evaluate_member("nginx-0");
    harness_expect_status("nginx-0", place("nginx-0", "a"), KC_WAIT);
    assert_int_equal(kc_harness_permit_timeout_ms(harness), 10000); /* scheduleTimeoutSeconds */
    harness_expect_ok("wait", kc_harness_wait(harness, "nginx-0", "a"));
    harness_expect_ok("x-0", kc_harness_assume(harness, "x-0", "b"));
    harness_expect_ok("wait", kc_harness_wait(harness, "x-0", "b"));
    evaluate_member("nginx-1");
    harness_expect_status("nginx-1", place("nginx-1", "a"), KC_WAIT);
    harness_expect_ok("wait", kc_harness_wait(harness, "nginx-1", "a"));
    evaluate_member("nginx-2");
    harness_expect_status("nginx-2", place("nginx-2", "b"), KC_SUCCESS);
    assert_int_equal(kc_harness_waiting_allowed(harness, "nginx-0"), 1);
    assert_int_equal(kc_harness_waiting_allowed(harness, "nginx-1"), 1);
    assert_int_equal(kc_harness_waiting_allowed(harness, "x-0"), 0); /* another group's pod */
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-0"), 0);
    /* in a group cycle the runtime commits the group: Permit never waits */
    /* 1 of 5 exists: in a group cycle the runtime gates on that, not PreFilter */
    evaluate_in_group("g-0", 0, 5, 5);
    harness_expect_status("g-0", place("g-0", "a"), KC_SUCCESS);
}

/* A group cycle's rollback is the runtime's: Unreserve and PostFilter in one release nothing.
 * On the permit path a member that fits no node, or whose reservation is undone, releases its
 * waiting siblings. */
static void unreserve_and_post_filter_release_waiting_siblings(void **state)
{
    (void)state;
    harness_start_pending("{}", NODES THREE_PENDING "objects:\n" NGINX);
    evaluate_member("nginx-0");
    harness_expect_status("nginx-0", place("nginx-0", "a"), KC_WAIT);
    harness_expect_ok("wait", kc_harness_wait(harness, "nginx-0", "a"));
    evaluate_in_group("nginx-1", 1, 3, 3);
    harness_expect_ok("assume", kc_harness_assume(harness, "nginx-1", "a"));
    harness_expect_status(
        "unreserve", kc_harness_call(harness, "nginx-1", KC_HARNESS_UNRESERVE, NULL), KC_SUCCESS);
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-0"), 0);
    evaluate_in_group("nginx-2", 2, 3, 3);
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "nginx-2"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-0"), 0);
    /* the permit path */
    evaluate_member("nginx-2");
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "nginx-2"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-0"), 1);
    assert_string_equal(kc_harness_waiting_message(harness, "nginx-0"),
                        "rejected in Permit by plugin coscheduling: pod group default/nginx: "
                        "member nginx-2 fits no node; the group is released");
    /* held again, nginx-0 is released by nginx-1's Unreserve on the permit path */
    harness_expect_ok("wait", kc_harness_wait(harness, "nginx-0", "a"));
    harness_expect_status(
        "unreserve", kc_harness_call(harness, "nginx-1", KC_HARNESS_UNRESERVE, NULL), KC_SUCCESS);
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-0"), 2);
    assert_string_equal(kc_harness_waiting_message(harness, "nginx-0"),
                        "rejected in Permit by plugin coscheduling: pod group default/nginx: "
                        "member nginx-1 was rejected; the group is released");
    harness_expect_ok("forget", kc_harness_forget(harness, "nginx-1"));
}

/* Members a group cycle placed are held and bound or released by the runtime with their group:
 * a later member (beyond the quorum, or failing on the permit path) never allows or rejects
 * them. */
static void siblings_placed_by_a_group_cycle_are_left_to_the_runtime(void **state)
{
    (void)state;
    harness_start_pending("{}",
                          NODES THREE_PENDING "  - {name: nginx-3, labels: {" LABEL ": nginx}}\n"
                                              "objects:\n" NGINX);
    static const char *const members[] = {"nginx-0", "nginx-1", "nginx-2"};
    for (uint32_t i = 0; i < 3; i++) {
        evaluate_in_group(members[i], i, 3, 3);
        harness_expect_status(members[i], place(members[i], "a"), KC_SUCCESS);
        /* another Permit plugin made them wait */
        harness_expect_ok("wait", kc_harness_wait(harness, members[i], "a"));
    }
    /* the fourth member goes alone and sees the quorum placed */
    evaluate_member("nginx-3");
    harness_expect_status("nginx-3", place("nginx-3", "b"), KC_SUCCESS);
    /* two members go away; the fourth is undone: the group is short, still nothing released */
    harness_expect_ok("forget", kc_harness_forget(harness, "nginx-1"));
    harness_expect_ok("forget", kc_harness_forget(harness, "nginx-2"));
    /* nginx-1's group-cycle attempt ended: waiting again on the permit path, it is the
     * plugin's own (released by the Unreserve and the PostFilter below) */
    evaluate_member("nginx-1");
    harness_expect_ok("wait", kc_harness_wait(harness, "nginx-1", "a"));
    harness_expect_status(
        "unreserve", kc_harness_call(harness, "nginx-3", KC_HARNESS_UNRESERVE, NULL), KC_SUCCESS);
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-1"), 1);
    harness_expect_ok("wait", kc_harness_wait(harness, "nginx-1", "a"));
    evaluate_member("nginx-3");
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "nginx-3"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-1"), 2);
    assert_int_equal(kc_harness_waiting_allowed(harness, "nginx-0"), 0);
    assert_int_equal(kc_harness_waiting_rejected(harness, "nginx-0"), 0);
}

/* The group's counts follow its pods as the cache delivers them: pending, assumed, bound,
 * forgotten and deleted. */
static void counts_follow_pods_through_assume_bind_and_delete(void **state)
{
    (void)state;
    harness_start_pending(
        "{}", NODES "pods:\n"
                    "  - {name: nginx-0, labels: {" LABEL ": nginx}}\n"
                    "objects:\n" PODGROUP("nginx", "2024-05-01T10:00:00Z", "{\"minMember\": 2}"));
    /* one pod only: PreFilter (outside a group cycle) says the group is short */
    harness_expect_status("alone", kc_harness_filter(harness, "nginx-0", "a"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness),
                        "pod group default/nginx: 1 pods exist, fewer than minMember 2");
    harness_expect_ok(
        "nginx-1",
        kc_harness_update(harness, "pods:\n  - {name: nginx-1, labels: {" LABEL ": nginx}}\n"));
    evaluate_member("nginx-0");
    /* nginx-0 assumed, then seen bound (on its node): still one placed */
    harness_expect_ok("assume", kc_harness_assume(harness, "nginx-0", "a"));
    harness_expect_ok("bound", kc_harness_update(harness, NODE_B "pods:\n  - {name: nginx-0, "
                                                                 "nodeName: b, labels: {" LABEL
                                                                 ": nginx}}\n"));
    evaluate_member("nginx-1");
    harness_expect_status("nginx-1", place("nginx-1", "a"), KC_SUCCESS);
    harness_expect_ok("forget", kc_harness_forget(harness, "nginx-1"));
    evaluate_member("nginx-1");
    harness_expect_status("nginx-1 again",
                          kc_harness_call(harness, "nginx-1", KC_HARNESS_PERMIT, "a"), KC_WAIT);
    harness_expect_ok("delete", kc_harness_delete_pod(harness, "nginx-0"));
    harness_expect_ok("delete", kc_harness_delete_pod(harness, "nginx-1"));
    harness_expect_ok(
        "nginx-2",
        kc_harness_update(harness, "pods:\n  - {name: nginx-2, labels: {" LABEL ": nginx}}\n"));
    harness_expect_status("alone again", kc_harness_filter(harness, "nginx-2", "a"),
                          KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness),
                        "pod group default/nginx: 1 pods exist, fewer than minMember 2");
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
        HARNESS_TEST(args_set_the_group_declarations_defaults),
        HARNESS_TEST(scheduler_plugins_podgroup_declares_the_whole_group),
        HARNESS_TEST(pre_filter_refuses_a_group_whose_min_resources_do_not_fit),
        HARNESS_TEST(queue_orders_members_of_a_group_by_enqueue_time),
        HARNESS_TEST(permit_path_waits_until_the_group_is_placed_then_allows_all),
        HARNESS_TEST(unreserve_and_post_filter_release_waiting_siblings),
        HARNESS_TEST(siblings_placed_by_a_group_cycle_are_left_to_the_runtime),
        HARNESS_TEST(counts_follow_pods_through_assume_bind_and_delete),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
