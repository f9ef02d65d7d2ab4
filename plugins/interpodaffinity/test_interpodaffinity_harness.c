/* interpodaffinity on the plugin test harness, in both isolation modes: kube-scheduler's
 * filtering and scoring cases (affinity_cases.h), each written as a cluster whose existing pods
 * (with their own terms) sit on their nodes and whose Namespace objects carry the labels a
 * namespaceSelector reads, asserting every node's Filter status and reason and the normalized
 * scores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "affinity_cases.h"
#include "harness_test.h"

/* A pod in the Kubernetes form: terms (the pod's affinity JSON, which YAML reads) or none. */
static void yaml_pod(char *buf, size_t size, const char *name, const char *labels_spec,
                     const char *node, const char *terms)
{
    char ns[64];
    sscanf(labels_spec, "%63s", ns);
    harness_append(buf, size, "  - metadata: {name: %s, namespace: %s, labels: ", name, ns);
    harness_yaml_labels(buf, size, labels_spec, 1);
    harness_append(buf, size, "}\n    spec: {\"containers\": [{\"name\": \"c\"}]");
    if (node != NULL)
        harness_append(buf, size, ", \"nodeName\": \"%s\"", node);
    if (terms != NULL)
        harness_append(buf, size, ", \"affinity\": %s", terms);
    harness_append(buf, size, "}\n");
}

static const char *cluster_of(const struct affinity_case *c)
{
    static char text[16384];
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    for (int n = 0; n < MAX_NODES && c->nodes[n] != NULL; n++) {
        char name[64];
        sscanf(c->nodes[n], "%63s", name);
        harness_append(text, sizeof(text), "  - name: %s\n    labels: ", name);
        harness_yaml_labels(text, sizeof(text), c->nodes[n], 1);
        harness_append(text, sizeof(text), "\n");
    }
    harness_append(
        text, sizeof(text),
        "objects:\n"
        "  - {apiVersion: v1, kind: Namespace, metadata: {name: ns1, labels: {team: a}}}\n"
        "  - {apiVersion: v1, kind: Namespace, metadata: {name: ns2, labels: {team: b}}}\n"
        "pods:\n");
    for (int i = 0; i < MAX_PODS && c->existing[i] != NULL; i++) {
        /* "node ns labels... [| terms]" */
        char spec[1024], name[16];
        snprintf(spec, sizeof(spec), "%s", c->existing[i]);
        char *terms = strstr(spec, " | ");
        if (terms != NULL) {
            *terms = '\0';
            terms += 3;
        }
        char *space = strchr(spec, ' ');
        assert_non_null(space);
        *space = '\0';
        snprintf(name, sizeof(name), "p%d", i);
        yaml_pod(text, sizeof(text), name, space + 1, spec, terms);
    }
    yaml_pod(text, sizeof(text), "incoming", c->pod, NULL, c->terms);
    return text;
}

static void check_filter(const struct affinity_case *c, int node_count, const char *pod)
{
    static const struct {
        const char *word;
        kc_status status;
        const char *reason;
    } outcomes[] = {{"ok", KC_SUCCESS, ""},
                    {"aff", KC_UNRESOLVABLE, REASON_AFFINITY},
                    {"anti", KC_UNSCHEDULABLE, REASON_ANTI},
                    {"exist", KC_UNSCHEDULABLE, REASON_EXISTING}};
    char copy[128];
    snprintf(copy, sizeof(copy), "%s", c->filter != NULL ? c->filter : "ok ok ok ok");
    char *w = strtok(copy, " ");
    for (int n = 0; n < node_count; n++, w = strtok(NULL, " ")) {
        assert_non_null(w);
        int o = 0;
        while (o < 4 && strcmp(outcomes[o].word, w) != 0)
            o++;
        assert_true(o < 4);
        char node[64];
        sscanf(c->nodes[n], "%63s", node);
        harness_expect_status(c->name, kc_harness_filter(harness, pod, node), outcomes[o].status);
        if (strcmp(kc_harness_message(harness), outcomes[o].reason) != 0)
            fail_msg("%s (%s): node %s: reason \"%s\", want \"%s\"", c->name, harness_mode_name(),
                     node, kc_harness_message(harness), outcomes[o].reason);
    }
}

static void check_scores(const struct affinity_case *c, int node_count, const char *pod)
{
    if (c->scores[0] == NO_SCORE)
        return; /* kube's case says nothing of the scores */
    harness_expect_status(c->name, kc_harness_evaluate(harness, pod), KC_SUCCESS);
    for (int n = 0; n < node_count; n++) {
        char node[64];
        sscanf(c->nodes[n], "%63s", node);
        int64_t got = kc_harness_score(harness, node);
        if (got != c->scores[n])
            fail_msg("%s (%s): node %s scored %lld, want %d", c->name, harness_mode_name(), node,
                     (long long)got, c->scores[n]);
    }
}

/* Whether every existing pod sits on a node of the case: a simulation file refuses a pod on
 * a node it does not define, so the case of a pod outside the snapshot stays on the fake host. */
static bool expressible(const struct affinity_case *c)
{
    for (int i = 0; i < MAX_PODS && c->existing[i] != NULL; i++) {
        char node[64];
        sscanf(c->existing[i], "%63s", node);
        bool found = false;
        for (int n = 0; n < MAX_NODES && c->nodes[n] != NULL && !found; n++)
            found = strncmp(c->nodes[n], node, strlen(node)) == 0 &&
                    (c->nodes[n][strlen(node)] == ' ' || c->nodes[n][strlen(node)] == '\0');
        if (!found)
            return false;
    }
    return true;
}

static void kube_cases(void **state)
{
    (void)state;
    uint32_t left_out = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct affinity_case *c = &cases[i];
        if (!expressible(c)) {
            left_out++;
            continue;
        }
        int node_count = 0;
        while (node_count < MAX_NODES && c->nodes[node_count] != NULL)
            node_count++;
        char ns[64], pod[80];
        sscanf(c->pod, "%63s", ns);
        snprintf(pod, sizeof(pod), "%s/incoming", ns);
        harness_start(c->args != NULL ? c->args : "{}", cluster_of(c));
        check_filter(c, node_count, pod);
        check_scores(c, node_count, pod);
    }
    assert_true(sizeof(cases) / sizeof(cases[0]) >= 30);
    assert_int_equal(left_out, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(kube_cases),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
