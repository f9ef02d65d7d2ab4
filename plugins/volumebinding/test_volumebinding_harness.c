/* volumebinding on the plugin test harness, in both isolation modes: kube-scheduler's cases
 * (vb_cases.h) written as a cluster (claims, volumes and classes as objects), asserting
 * PreFilter's verdict and reason, each node's Filter verdict and reasons, and the object writes
 * Reserve + PreBind ask the runtime for; then reservations across cycles, object updates and
 * deletes one event at a time, and a write the runtime cannot take. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"
#include "vb_cases.h"

static const char *cluster_of(const struct vb_case *c)
{
    static char text[16384];
    text[0] = '\0';
    harness_append(text, sizeof(text),
                   "nodes:\n"
                   "  - {name: node-a, labels: {kubernetes.io/hostname: node-a, "
                   "topology.kubernetes.io/zone: a}}\n"
                   "  - {name: node-b, labels: {kubernetes.io/hostname: node-b, "
                   "topology.kubernetes.io/zone: b}}\n"
                   "  - {name: node-c, labels: {kubernetes.io/hostname: node-c, "
                   "topology.kubernetes.io/zone: a, disk: ssd}}\n");
    if (c->objects[0] != NULL)
        harness_append(text, sizeof(text), "objects:\n");
    for (int i = 0; i < VT_MAX_OBJECTS && c->objects[i] != NULL; i++)
        harness_yaml_object(text, sizeof(text), c->objects[i]);
    /* uid "uid-web-0": the owner an ephemeral volume's claim names */
    harness_append(text, sizeof(text),
                   "pods:\n  - metadata: {name: web-0, namespace: default, uid: uid-web-0}\n"
                   "    spec: {containers: [{name: c}], volumes: [");
    for (int i = 0; i < 4 && c->volumes[i].name != NULL; i++) {
        const struct vb_volume *v = &c->volumes[i];
        const char *sep = i > 0 ? ", " : "";
        if (v->source == KC_VOLUME_PVC)
            harness_append(text, sizeof(text),
                           "%s{name: %s, persistentVolumeClaim: {claimName: %s}}", sep, v->name,
                           v->claim);
        else if (v->source == KC_VOLUME_EPHEMERAL) /* its claim: "web-0-<name>" */
            harness_append(text, sizeof(text), "%s{name: %s, ephemeral: {volumeClaimTemplate: {}}}",
                           sep, v->name);
        else if (v->source == KC_VOLUME_GCE_PD)
            harness_append(text, sizeof(text), "%s{name: %s, gcePersistentDisk: {pdName: %s}}", sep,
                           v->name, v->claim);
        else
            harness_append(text, sizeof(text), "%s{name: %s, emptyDir: {}}", sep, v->name);
    }
    harness_append(text, sizeof(text), "]}\n");
    return text;
}

/* The fake host's reasons joined with "|" are the harness's message joined with "; ". */
static void expect_reason(const struct vb_case *c, const char *node, const char *want)
{
    char joined[1024] = "";
    for (const char *p = want; *p != '\0'; p++)
        harness_append(joined, sizeof(joined), *p == '|' ? "; " : "%c", *p);
    if (strcmp(kc_harness_message(harness), joined) != 0)
        fail_msg("%s (%s): %s: reason \"%s\", want \"%s\"", c->name, harness_mode_name(), node,
                 kc_harness_message(harness), joined);
}

static void check_writes(const struct vb_case *c)
{
    uint32_t expected = 0;
    while (expected < 3 && c->writes[expected] != NULL)
        expected++;
    if (kc_harness_write_count(harness) != expected)
        fail_msg("%s (%s): %u writes, want %u", c->name, harness_mode_name(),
                 kc_harness_write_count(harness), expected);
    for (uint32_t i = 0; i < expected; i++) {
        const char *got = kc_harness_write_at(harness, i);
        size_t len = strlen(c->writes[i]);
        if (strncmp(got, c->writes[i], len) != 0 || got[len] != ' ' ||
            strstr(got + len, c->patch_has[i]) == NULL)
            fail_msg("%s (%s): write \"%s\", want \"%s\" with %s", c->name, harness_mode_name(),
                     got, c->writes[i], c->patch_has[i]);
    }
}

static void table(void **state)
{
    (void)state;
    static const char *const nodes[VT_NODES] = {"node-a", "node-b", "node-c"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct vb_case *c = &cases[i];
        harness_start("{}", cluster_of(c));
        for (int n = 0; n < VT_NODES; n++) {
            bool filtered = c->pre_filter == KC_SUCCESS;
            kc_status want = filtered                   ? c->filter[n]
                             : c->pre_filter == KC_SKIP ? KC_SUCCESS
                                                        : c->pre_filter;
            const char *reason = filtered ? c->reason[n] : c->pre_filter_reason;
            harness_expect_status(c->name, kc_harness_filter(harness, "web-0", nodes[n]), want);
            expect_reason(c, nodes[n], reason != NULL ? reason : "");
        }
        if (c->reserve_on < 0)
            continue;
        /* a cycle that chose the node: Filter found its volumes there, then Reserve, PreBind */
        const char *node = nodes[c->reserve_on];
        harness_expect_status(c->name, kc_harness_filter(harness, "web-0", node), KC_SUCCESS);
        harness_expect_status(c->name, kc_harness_call(harness, "web-0", KC_HARNESS_RESERVE, node),
                              KC_SUCCESS);
        harness_expect_status(c->name, kc_harness_call(harness, "web-0", KC_HARNESS_PRE_BIND, node),
                              KC_SUCCESS);
        check_writes(c);
    }
}

/* The three nodes of the table, the objects (NULL-terminated) and the pods (YAML entries). */
static const char *cluster_with(const char *const *objects, const char *pods)
{
    static char text[16384];
    static const struct vb_case none = {.name = "none"};
    const char *nodes = cluster_of(&none);
    text[0] = '\0';
    harness_append(text, sizeof(text), "%.*s", (int)(strstr(nodes, "pods:") - nodes), nodes);
    harness_append(text, sizeof(text), "objects:\n");
    for (int i = 0; objects[i] != NULL; i++)
        harness_yaml_object(text, sizeof(text), objects[i]);
    harness_append(text, sizeof(text), "pods:\n%s", pods);
    return text;
}

/* One object put (added or updated) as its own event. */
static void put_object(const char *quoted)
{
    char text[2048] = "objects:\n";
    harness_yaml_object(text, sizeof(text), quoted);
    if (kc_harness_update(harness, text) != 0)
        fail_msg("%s: update: %s", harness_mode_name(), kc_harness_error(harness));
}

/* A cycle that chose node for pod: Filter passes there, then Reserve. */
static void reserve_on(const char *pod, const char *node)
{
    harness_expect_status(pod, kc_harness_filter(harness, pod, node), KC_SUCCESS);
    harness_expect_status(pod, kc_harness_call(harness, pod, KC_HARNESS_RESERVE, node), KC_SUCCESS);
}

#define POD_WITH_CLAIM(name, claim)                                                                \
    "  - {name: " name ", volumes: [{name: data, persistentVolumeClaim: {claimName: " claim      \
    "}}]}\n"

/* Reserve's assumption keeps a second pod off the volume; Unreserve gives it back. */
static void reserved_volume_is_not_offered_again_until_unreserved(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                                   VT_CLAIM("two", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""), NULL};
    harness_start("{}", cluster_with(objects, POD_WITH_CLAIM("first", "one")
                                                  POD_WITH_CLAIM("second", "two")));
    reserve_on("first", "node-a");
    harness_expect_status("second", kc_harness_filter(harness, "second", "node-a"),
                          KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), NB);
    harness_expect_status("unreserve",
                          kc_harness_call(harness, "first", KC_HARNESS_UNRESERVE, NULL), KC_SUCCESS);
    harness_expect_status("second again", kc_harness_filter(harness, "second", "node-a"),
                          KC_SUCCESS);
    assert_string_equal(kc_harness_message(harness), "");
}

/* The API's update of the volume replaces the assumption: a claimRef now says who owns it. */
static void volume_update_from_the_api_replaces_the_assumption(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""), NULL};
    harness_start("{}", cluster_with(objects, POD_WITH_CLAIM("first", "one")
                                                  POD_WITH_CLAIM("second", "two")));
    reserve_on("first", "node-a");
    put_object("{'kind':'PersistentVolume','metadata':{'name':'pv-a'},'spec':{"
               "'storageClassName':'local','capacity':{'storage':'1Gi'},'accessModes':"
               "['ReadWriteOnce'],'claimRef':{'namespace':'default','name':'one'}},"
               "'status':{'phase':'Bound'}}");
    put_object(VT_CLAIM("two", "local", "1Gi", "ReadWriteOnce"));
    harness_expect_status("second", kc_harness_filter(harness, "second", "node-b"),
                          KC_UNRESOLVABLE);
}

/* A write the runtime cannot take fails PreBind: the runtime unreserves and retries the pod. */
static void failed_write_fails_pre_bind(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_FAST, VT_CLAIM("data", "fast", "1Gi", "ReadWriteOnce"),
                                   NULL};
    harness_start("{}", cluster_with(objects, POD_WITH_CLAIM("web-0", "data")));
    reserve_on("web-0", "node-a");
    assert_int_equal(kc_harness_fail_writes(harness, -5), 0);
    harness_expect_status("PreBind", kc_harness_call(harness, "web-0", KC_HARNESS_PRE_BIND, "node-a"),
                          KC_ERROR);
    assert_string_equal(kc_harness_error(harness), "");
    assert_non_null(strstr(kc_harness_message(harness), "writing the claim update of data failed"));
    assert_null(strstr(kc_harness_message(harness), "; "));
    assert_int_equal(kc_harness_write_count(harness), 0);
}

/* Deleting a claim makes the pod's claim missing again. */
static void deleted_claim_is_missing_again(void **state)
{
    (void)state;
    const char *const objects[] = {VT_BOUND_CLAIM("data", "pv-a", "ReadWriteOnce"), NULL};
    harness_start("{}", cluster_with(objects, POD_WITH_CLAIM("web-0", "data")));
    harness_expect_status("present", kc_harness_filter(harness, "web-0", "node-a"),
                          KC_UNRESOLVABLE); /* its volume pv-a is not in the cluster */
    assert_null(strstr(kc_harness_message(harness), "not found"));
    assert_int_equal(kc_harness_delete_object(harness, "PersistentVolumeClaim", "default/data"), 0);
    harness_expect_status("deleted", kc_harness_filter(harness, "web-0", "node-a"),
                          KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), "persistentvolumeclaim \"data\" not found");
    assert_int_equal(kc_harness_delete_object(harness, "PersistentVolumeClaim", "default/none"),
                     -2);
}

/* A volume whose class changes is looked up under its new class only; a deleted one is gone;
 * a new one is found. Events arrive between attempts, one at a time. */
static void volume_class_change_delete_and_add_are_followed(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "other", "1Gi", "ReadWriteOnce", ""), NULL};
    harness_start("{}", cluster_with(objects, POD_WITH_CLAIM("web-0", "data")));
    harness_expect_status("other class", kc_harness_filter(harness, "web-0", "node-a"),
                          KC_UNRESOLVABLE);
    put_object(VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""));
    harness_expect_status("class changed", kc_harness_filter(harness, "web-0", "node-a"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_delete_object(harness, "PersistentVolume", "pv-a"), 0);
    harness_expect_status("deleted", kc_harness_filter(harness, "web-0", "node-a"),
                          KC_UNRESOLVABLE);
    put_object(VT_VOLUME("pv-b", "local", "1Gi", "ReadWriteOnce", VT_ON_HOST("node-a")));
    harness_expect_status("added", kc_harness_filter(harness, "web-0", "node-a"), KC_SUCCESS);
    harness_expect_status("added elsewhere", kc_harness_filter(harness, "web-0", "node-b"),
                          KC_UNRESOLVABLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(table),
        HARNESS_TEST(reserved_volume_is_not_offered_again_until_unreserved),
        HARNESS_TEST(volume_update_from_the_api_replaces_the_assumption),
        HARNESS_TEST(failed_write_fails_pre_bind),
        HARNESS_TEST(deleted_claim_is_missing_again),
        HARNESS_TEST(volume_class_change_delete_and_add_are_followed),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
