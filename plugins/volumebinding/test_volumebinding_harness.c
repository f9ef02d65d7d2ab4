/* volumebinding on the plugin test harness, in both isolation modes: kube-scheduler's cases
 * (vb_cases.h) written as a cluster (claims, volumes and classes as objects), asserting
 * PreFilter's verdict and reason, each node's Filter verdict and reasons, and the object writes
 * Reserve + PreBind ask the runtime for. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(table),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
