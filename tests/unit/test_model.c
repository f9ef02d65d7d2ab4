/* Unit tests of the object model: sorted lists, pods and nodes from Kubernetes-shaped trees,
 * the effective request, and the affinity and toleration predicates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"
#include "pod_fields.h"
#include "resource_table.h"
#include "tree.h"

#define GI (1024LL * 1024 * 1024)
#define MI (1024LL * 1024)

static struct tree *parse(const char *yaml)
{
    struct tree *t = NULL;
    struct kc_error err = {{0}};
    int rc = tree_parse_buffer("pod.yaml", yaml, strlen(yaml), &t, &err);
    if (rc != 0)
        print_error("%s\n", err.message);
    assert_int_equal(rc, 0);
    return t;
}

static struct pod *pod_yaml(const char *yaml)
{
    struct tree *t = parse(yaml);
    struct pod *pod = NULL;
    struct kc_error err = {{0}};
    int rc = pod_from_tree(t, &pod, &err);
    if (rc != 0)
        print_error("%s\n", err.message);
    assert_int_equal(rc, 0);
    tree_free(t);
    return pod;
}

static struct node *node_yaml(const char *yaml)
{
    struct tree *t = parse(yaml);
    struct node *node = NULL;
    struct kc_error err = {{0}};
    int rc = node_from_tree(t, &node, &err);
    if (rc != 0)
        print_error("%s\n", err.message);
    assert_int_equal(rc, 0);
    tree_free(t);
    return node;
}

/* The error pod_from_tree gives for yaml, which must fail. */
static void pod_error(const char *yaml, struct kc_error *err)
{
    struct tree *t = parse(yaml);
    struct pod *pod = NULL;
    memset(err, 0, sizeof(*err));
    assert_int_equal(pod_from_tree(t, &pod, err), -EINVAL);
    assert_null(pod);
    tree_free(t);
}

static void assert_contains(const char *text, const char *part)
{
    if (strstr(text, part) == NULL)
        fail_msg("\"%s\" does not contain \"%s\"", text, part);
}

/* ---- lists ------------------------------------------------------------------------------- */

static const char *const volume_pod_yaml =
    "metadata: {name: web-0, namespace: shop}\n"
    "spec:\n"
    "  volumes:\n"
    "    - {name: data, persistentVolumeClaim: {claimName: web-data, readOnly: true}}\n"
    "    - {name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}\n"
    "    - {name: pd, gcePersistentDisk: {pdName: disk-1}}\n"
    "    - {name: ebs, awsElasticBlockStore: {volumeID: vol-1}}\n"
    "    - {name: iscsi, iscsi: {iqn: iqn.2024-01.io:t, targetPortal: 10.0.0.1}}\n"
    "    - {name: ceph, rbd: {monitors: [m1, m2], image: img}}\n"
    "    - {name: inline, csi: {driver: csi.example.com}}\n"
    "    - {name: cache, emptyDir: {}}\n";

/* spec.volumes: each kind the volume plugins read, the ephemeral claim named after the pod,
 * RBD's pool defaulted as the API server does; other kinds are kept as "other". */
static void pod_reads_volumes_and_names_ephemeral_claims(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(volume_pod_yaml);
    assert_int_equal(pod->volume_count, 8);
    assert_int_equal(pod->volumes[0].source, KC_VOLUME_PVC);
    assert_string_equal(pod->volumes[0].claim_name, "web-data");
    assert_true(pod->volumes[0].read_only);
    assert_int_equal(pod->volumes[1].source, KC_VOLUME_EPHEMERAL);
    assert_string_equal(pod->volumes[1].claim_name, "web-0-scratch");
    assert_int_equal(pod->volumes[2].source, KC_VOLUME_GCE_PD);
    assert_string_equal(pod->volumes[2].disk, "disk-1");
    assert_int_equal(pod->volumes[3].source, KC_VOLUME_AWS_EBS);
    assert_string_equal(pod->volumes[3].disk, "vol-1");
    assert_int_equal(pod->volumes[4].source, KC_VOLUME_ISCSI);
    assert_string_equal(pod->volumes[4].disk, "iqn.2024-01.io:t");
    assert_int_equal(pod->volumes[5].source, KC_VOLUME_RBD);
    assert_string_equal(pod->volumes[5].pool, "rbd");
    assert_string_equal(pod->volumes[5].monitors, "m1,m2");
    assert_int_equal(pod->volumes[6].source, KC_VOLUME_CSI);
    assert_string_equal(pod->volumes[6].disk, "csi.example.com");
    assert_int_equal(pod->volumes[7].source, KC_VOLUME_OTHER);
    assert_null(pod->volumes[7].claim_name);
    /* a rename (a counted workload entry) renames the ephemeral claim */
    free(pod->name);
    pod->name = strdup("web-7");
    assert_int_equal(pod_finish_volumes(pod), 0);
    assert_string_equal(pod->volumes[1].claim_name, "web-7-scratch");
    pod_free(pod);
    struct kc_error err = {{0}};
    pod_error("metadata: {name: p}\nspec: {volumes: [{name: d, persistentVolumeClaim: {}}]}\n",
              &err);
    assert_contains(err.message, "claimName is required");
}

static void kv_list_keeps_keys_sorted_and_unique(void **state)
{
    (void)state;
    struct kv_list list = {0};
    assert_int_equal(kv_list_set(&list, "zone", "a"), 0);
    assert_int_equal(kv_list_set(&list, "app", "web"), 0);
    assert_int_equal(kv_list_set(&list, "m", "1"), 0);
    assert_int_equal(kv_list_set(&list, "zone", "b"), 0);
    assert_int_equal(list.count, 3);
    assert_string_equal(list.items[0].key, "app");
    assert_string_equal(list.items[1].key, "m");
    assert_string_equal(list.items[2].key, "zone");
    assert_string_equal(kv_list_get(&list, "zone"), "b");
    assert_string_equal(kv_list_get(&list, "app"), "web");
    assert_null(kv_list_get(&list, "missing"));
    assert_null(kv_list_get(&list, "a"));
    kv_list_free(&list);
    assert_int_equal(list.count, 0);
    assert_null(kv_list_get(&list, "zone"));
}

static void res_list_sorts_by_id_and_drops_zeros(void **state)
{
    (void)state;
    struct res_list list = {0};
    assert_int_equal(res_list_set(&list, KC_RESOURCE_PODS, 110), 0);
    assert_int_equal(res_list_set(&list, KC_RESOURCE_CPU, 4000), 0);
    assert_int_equal(res_list_set(&list, KC_RESOURCE_MEMORY, 0), 0);
    assert_int_equal(list.count, 2);
    assert_int_equal(list.items[0].id, KC_RESOURCE_CPU);
    assert_int_equal(list.items[1].id, KC_RESOURCE_PODS);
    assert_int_equal(res_list_set(&list, KC_RESOURCE_MEMORY, 5), 0);
    assert_int_equal(list.items[1].id, KC_RESOURCE_MEMORY);
    assert_int_equal(res_list_set(&list, KC_RESOURCE_CPU, 0), 0);
    assert_int_equal(list.count, 2);
    assert_int_equal(res_list_get(&list, KC_RESOURCE_CPU), 0);
    assert_int_equal(res_list_get(&list, KC_RESOURCE_MEMORY), 5);
    assert_int_equal(res_list_get(&list, KC_RESOURCE_PODS), 110);
    res_list_free(&list);
    assert_int_equal(list.count, 0);
}

/* ---- effective request ------------------------------------------------------------------- */

struct request_case {
    const char *name;
    const char *spec; /* the pod's spec, flow YAML */
    int64_t cpu;      /* milli */
    int64_t memory;   /* bytes */
    int64_t gpu;
};

static const struct request_case request_cases[] = {
    {"one container",
     "{containers: [{name: a, resources: {requests: {cpu: 100m, "
     "memory: 200Mi}}}]}",
     100, 200 * MI, 0},
    {"app containers add up",
     "{containers: [{name: a, resources: {requests: {cpu: 100m}}}, "
     "{name: b, resources: {requests: {cpu: 250m, memory: 1Gi}}}]}",
     350, GI, 0},
    {"no resources", "{containers: [{name: a}]}", 0, 0, 0},
    {"limit defaults a missing request",
     "{containers: [{name: a, resources: {limits: "
     "{cpu: 2, memory: 1Gi}}}]}",
     2000, GI, 0},
    {"request kept below its limit",
     "{containers: [{name: a, resources: {requests: "
     "{cpu: 500m}, limits: {cpu: 2, memory: 1Gi}}}]}",
     500, GI, 0},
    {"extended resource from limits",
     "{containers: [{name: a, resources: {limits: "
     "{nvidia.com/gpu: 2}}}]}",
     0, 0, 2},
    {"largest init container wins",
     "{initContainers: [{name: i1, resources: {requests: "
     "{cpu: 1}}}, {name: i2, resources: {requests: {cpu: 3, memory: 1Mi}}}], containers: "
     "[{name: a, resources: {requests: {cpu: 2, memory: 2Mi}}}]}",
     3000, 2 * MI, 0},
    {"init container limits default too",
     "{initContainers: [{name: i, resources: {limits: "
     "{cpu: 4}}}], containers: [{name: a, resources: {requests: {cpu: 1}}}]}",
     4000, 0, 0},
    {"overhead is added",
     "{containers: [{name: a, resources: {requests: {cpu: 1, "
     "memory: 1Gi}}}], overhead: {cpu: 250m, memory: 120Mi}}",
     1250, GI + 120 * MI, 0},
    {"overhead on top of the init peak",
     "{initContainers: [{name: i, resources: {requests: "
     "{cpu: 5}}}], containers: [{name: a, resources: {requests: {cpu: 1}}}], overhead: "
     "{cpu: 100m}}",
     5100, 0, 0},
    /* steady 200m + sidecar 100m = 300m; the regular init runs next to the sidecar: 600m */
    {"init runs next to earlier sidecars",
     "{initContainers: [{name: s, restartPolicy: Always, "
     "resources: {requests: {cpu: 100m}}}, {name: i, resources: {requests: {cpu: 500m}}}], "
     "containers: [{name: a, resources: {requests: {cpu: 200m}}}]}",
     600, 0, 0},
    /* the sidecar starts after the regular init: it does not run next to it */
    {"init before a sidecar runs alone",
     "{initContainers: [{name: i, resources: {requests: "
     "{cpu: 700m}}}, {name: s, restartPolicy: Always, resources: {requests: {cpu: 400m}}}], "
     "containers: [{name: a, resources: {requests: {cpu: 200m}}}]}",
     700, 0, 0},
    {"sidecars accumulate into the steady state",
     "{initContainers: [{name: s1, "
     "restartPolicy: Always, resources: {requests: {cpu: 1, memory: 1Gi}}}, {name: s2, "
     "restartPolicy: Always, resources: {requests: {cpu: 1}}}], containers: [{name: a, "
     "resources: {requests: {cpu: 1, memory: 1Gi}}}]}",
     3000, 2 * GI, 0},
    {"regular init after two sidecars",
     "{initContainers: [{name: s1, restartPolicy: Always, "
     "resources: {requests: {cpu: 1}}}, {name: s2, restartPolicy: Always, resources: "
     "{requests: {cpu: 1}}}, {name: i, resources: {requests: {cpu: 2}}}], containers: "
     "[{name: a, resources: {requests: {cpu: 500m}}}]}",
     4000, 0, 0},
    {"sidecar limit defaults its request",
     "{initContainers: [{name: s, restartPolicy: Always, "
     "resources: {limits: {memory: 64Mi}}}], containers: [{name: a, resources: {requests: "
     "{memory: 64Mi}}}]}",
     0, 128 * MI, 0},
    {"per-resource maxima mix sources",
     "{initContainers: [{name: i, resources: {requests: "
     "{cpu: 8, nvidia.com/gpu: 1}}}], containers: [{name: a, resources: {requests: "
     "{cpu: 1, memory: 4Gi}, limits: {nvidia.com/gpu: 2}}}]}",
     8000, 4 * GI, 2},
    {"restartPolicy Never is a plain init container",
     "{initContainers: [{name: i, "
     "restartPolicy: Never, resources: {requests: {cpu: 3}}}], containers: [{name: a, "
     "resources: {requests: {cpu: 1}}}]}",
     3000, 0, 0},
};

static void effective_request_matches_kube_scheduler(void **state)
{
    (void)state;
    kc_resource gpu = resource_intern("nvidia.com/gpu");
    for (size_t i = 0; i < sizeof(request_cases) / sizeof(request_cases[0]); i++) {
        const struct request_case *c = &request_cases[i];
        char yaml[1024];
        snprintf(yaml, sizeof(yaml), "{metadata: {name: p}, spec: %s}", c->spec);
        struct pod *pod = pod_yaml(yaml);
        int64_t cpu = res_list_get(&pod->request, KC_RESOURCE_CPU);
        int64_t memory = res_list_get(&pod->request, KC_RESOURCE_MEMORY);
        int64_t gpus = res_list_get(&pod->request, gpu);
        if (cpu != c->cpu || memory != c->memory || gpus != c->gpu)
            fail_msg("%s: got cpu %lld memory %lld gpu %lld", c->name, (long long)cpu,
                     (long long)memory, (long long)gpus);
        for (uint32_t j = 0; j < pod->request.count; j++)
            assert_int_not_equal(pod->request.items[j].value, 0);
        pod_free(pod);
    }
}

static void container_requests_are_defaulted_from_limits(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("{metadata: {name: p}, spec: {containers: [{name: a, resources: "
                               "{requests: {cpu: 100m}, limits: {cpu: 1, memory: 2Gi}}}]}}");
    assert_int_equal(pod->container_count, 1);
    assert_string_equal(pod->containers[0].name, "a");
    assert_int_equal(res_list_get(&pod->containers[0].requests, KC_RESOURCE_CPU), 100);
    assert_int_equal(res_list_get(&pod->containers[0].requests, KC_RESOURCE_MEMORY), 2 * GI);
    assert_int_equal(res_list_get(&pod->containers[0].limits, KC_RESOURCE_CPU), 1000);
    pod_free(pod);
}

static void pod_finish_recomputes_a_hand_built_pod(void **state)
{
    (void)state;
    struct pod *pod = pod_new();
    assert_non_null(pod);
    assert_int_equal(pod_finish(pod), -EINVAL); /* no name */
    pod->name = strdup("hand");
    pod->containers = calloc(1, sizeof(*pod->containers));
    pod->container_count = 1;
    assert_int_equal(res_list_set(&pod->containers[0].limits, KC_RESOURCE_CPU, 1500), 0);
    assert_int_equal(kv_list_set(&pod->labels, "scheduling.x-k8s.io/pod-group", "g1"), 0);
    assert_int_equal(pod_finish(pod), 0);
    assert_string_equal(pod->namespace, "default");
    assert_string_equal(pod->uid, "default/hand");
    assert_string_equal(pod->scheduler_name, "default-scheduler");
    assert_string_equal(pod->pod_group, "g1");
    assert_int_equal(res_list_get(&pod->request, KC_RESOURCE_CPU), 1500);
    assert_int_equal(pod_finish(pod), 0); /* idempotent */
    assert_int_equal(res_list_get(&pod->request, KC_RESOURCE_CPU), 1500);
    pod_free(pod);
}

/* ---- pods and nodes from trees ----------------------------------------------------------- */

static void pod_reads_metadata_and_applies_defaults(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("kind: Pod\n"
                               "apiVersion: v1\n"
                               "metadata:\n"
                               "  name: worker-0\n"
                               "  labels: {app: train, scheduling.x-k8s.io/pod-group: gang-a}\n"
                               "  annotations: {note: hi}\n"
                               "  creationTimestamp: \"2024-05-01T12:00:01.250Z\"\n"
                               "  managedFields: [{manager: kubectl}]\n"
                               "spec:\n"
                               "  priority: 1000\n"
                               "  restartPolicy: Never\n"
                               "  nodeSelector: {zone: a}\n"
                               "  schedulingGates: [{name: wait}]\n"
                               "  tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]\n"
                               "  containers: [{name: main, image: busybox}]\n"
                               "status:\n"
                               "  phase: Pending\n"
                               "  conditions: []\n");
    assert_string_equal(pod->name, "worker-0");
    assert_string_equal(pod->namespace, "default");
    assert_string_equal(pod->uid, "default/worker-0");
    assert_string_equal(pod->scheduler_name, "default-scheduler");
    assert_string_equal(pod->pod_group, "gang-a");
    assert_null(pod->node_name);
    assert_int_equal(pod->priority, 1000);
    assert_int_equal(pod->creation_ms, 1714564801250LL);
    assert_false(pod->deleting);
    assert_int_equal(pod->phase, POD_PENDING);
    assert_string_equal(kv_list_get(&pod->labels, "app"), "train");
    assert_string_equal(kv_list_get(&pod->annotations, "note"), "hi");
    assert_string_equal(kv_list_get(&pod->node_selector, "zone"), "a");
    assert_int_equal(pod->scheduling_gate_count, 1);
    assert_string_equal(pod->scheduling_gates[0], "wait");
    assert_int_equal(pod->toleration_count, 1);
    assert_int_equal(pod->tolerations[0].op, TOLERATION_EXISTS);
    assert_int_equal(pod->tolerations[0].effect, KC_TAINT_NO_SCHEDULE);
    assert_string_equal(pod->tolerations[0].value, "");
    assert_int_equal(pod->request.count, 0);
    pod_free(pod);
}

static void pod_keeps_given_identity(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(
        "{metadata: {name: p, namespace: team-a, uid: 1234-abcd, creationTimestamp: "
        "\"2024-05-01T14:00:00+02:00\", deletionTimestamp: \"2024-05-01T12:00:05Z\"}, "
        "spec: {nodeName: n1, schedulerName: kcycle, priority: -5}, status: {phase: Running}}");
    assert_string_equal(pod->namespace, "team-a");
    assert_string_equal(pod->uid, "1234-abcd");
    assert_string_equal(pod->node_name, "n1");
    assert_string_equal(pod->scheduler_name, "kcycle");
    assert_int_equal(pod->priority, -5);
    assert_int_equal(pod->creation_ms, 1714564800000LL);
    assert_true(pod->deleting);
    assert_int_equal(pod->phase, POD_RUNNING);
    assert_null(pod->pod_group);
    /* preemption's fields at their defaults */
    assert_false(pod->preempt_never);
    assert_null(pod->nominated_node_name);
    assert_int_equal(pod->start_ms, 0);
    pod_free(pod);
}

static void pod_reads_preemption_fields(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(
        "{metadata: {name: p}, spec: {priority: 10, preemptionPolicy: PreemptLowerPriority}, "
        "status: {nominatedNodeName: n2, startTime: \"2024-05-01T12:00:05Z\"}}");
    assert_false(pod->preempt_never);
    assert_string_equal(pod->nominated_node_name, "n2");
    assert_int_equal(pod->start_ms, 1714564805000LL);
    pod_free(pod);
    pod = pod_yaml("{metadata: {name: p}, spec: {preemptionPolicy: Never}, "
                   "status: {nominatedNodeName: ''}}");
    assert_true(pod->preempt_never);
    assert_null(pod->nominated_node_name); /* empty is absent, as the API server writes it */
    pod_free(pod);
    struct kc_error err = {{0}};
    pod_error("metadata: {name: p}\nspec: {preemptionPolicy: Sometimes}\n", &err);
    assert_non_null(strstr(err.message, "preemptionPolicy"));
    assert_non_null(strstr(err.message, "Never"));
}

static void node_reads_taints_and_allocatable(void **state)
{
    (void)state;
    struct node *node = node_yaml(
        "{kind: Node, metadata: {name: n1, uid: u-1, labels: {zone: a}}, spec: {unschedulable: "
        "true, taints: [{key: gpu, value: only, effect: NoSchedule}, {key: spot, effect: "
        "PreferNoSchedule}], podCIDR: 10.0.0.0/24}, status: {capacity: {cpu: 8, memory: 64Gi, "
        "pods: 110}, allocatable: {cpu: 7500m, memory: 60Gi, pods: 110}, conditions: []}}");
    assert_string_equal(node->name, "n1");
    assert_string_equal(node->uid, "u-1");
    assert_true(node->unschedulable);
    assert_string_equal(kv_list_get(&node->labels, "zone"), "a");
    assert_int_equal(node->taint_count, 2);
    assert_string_equal(node->taints[0].key, "gpu");
    assert_string_equal(node->taints[0].value, "only");
    assert_int_equal(node->taints[0].effect, KC_TAINT_NO_SCHEDULE);
    assert_string_equal(node->taints[1].value, "");
    assert_int_equal(node->taints[1].effect, KC_TAINT_PREFER_NO_SCHEDULE);
    assert_int_equal(res_list_get(&node->allocatable, KC_RESOURCE_CPU), 7500);
    assert_int_equal(res_list_get(&node->allocatable, KC_RESOURCE_MEMORY), 60 * GI);
    assert_int_equal(res_list_get(&node->allocatable, KC_RESOURCE_PODS), 110);
    node_free(node);
}

static void node_allocatable_falls_back_to_capacity(void **state)
{
    (void)state;
    struct node *node = node_yaml("{metadata: {name: n2}, status: {capacity: {cpu: 4, "
                                  "memory: 32Gi, nvidia.com/gpu: 8}}}");
    assert_string_equal(node->uid, "n2");
    assert_false(node->unschedulable);
    assert_int_equal(res_list_get(&node->allocatable, KC_RESOURCE_CPU), 4000);
    assert_int_equal(res_list_get(&node->allocatable, KC_RESOURCE_MEMORY), 32 * GI);
    assert_int_equal(res_list_get(&node->allocatable, resource_intern("nvidia.com/gpu")), 8);
    node_free(node);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void bad_quantity_names_line_and_column(void **state)
{
    (void)state;
    struct kc_error err;
    pod_error("metadata:\n"
              "  name: p\n"
              "spec:\n"
              "  containers:\n"
              "  - name: a\n"
              "    resources:\n"
              "      requests:\n"
              "        cpu: 1x\n",
              &err);
    assert_contains(err.message, "pod.yaml:8:14");
    assert_contains(err.message, "cpu");
}

static void bad_values_are_errors_with_position(void **state)
{
    (void)state;
    struct kc_error err;
    pod_error("spec: {}\n", &err);
    assert_contains(err.message, "pod.yaml:1:1");
    assert_contains(err.message, "metadata");

    pod_error("metadata: {namespace: x}\n", &err);
    assert_contains(err.message, "pod.yaml:1:11");
    assert_contains(err.message, "'name': is required");

    pod_error("metadata: {name: p}\n"
              "spec:\n"
              "  tolerations:\n"
              "  - {key: a, operator: Equals}\n",
              &err);
    assert_contains(err.message, "pod.yaml:4:");
    assert_contains(err.message, "Equals");

    pod_error("metadata: {name: p}\n"
              "spec:\n"
              "  tolerations: [{key: a, effect: NoScheduleX}]\n",
              &err);
    assert_contains(err.message, "pod.yaml:3:");
    assert_contains(err.message, "NoScheduleX");

    pod_error("metadata: {name: p}\n"
              "spec:\n"
              "  overhead: {cpu: -1}\n",
              &err);
    assert_contains(err.message, "pod.yaml:3:");
    assert_contains(err.message, "negative");

    pod_error("metadata: {name: p}\n"
              "spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchExpressions: [{key: gen, operator: Gt, values: "
              "[big]}]}]}}}}\n",
              &err);
    assert_contains(err.message, "pod.yaml:2:");
    assert_contains(err.message, "integer");

    pod_error("metadata: {name: p}\n"
              "spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchExpressions: [{key: z, operator: Near}]}]}}}}\n",
              &err);
    assert_contains(err.message, "Near");

    pod_error("metadata: {name: p}\n"
              "spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
              " {nodeSelectorTerms: [{matchFields: [{key: metadata.uid, operator: In, values: "
              "[x]}]}]}}}}\n",
              &err);
    assert_contains(err.message, "metadata.uid");

    pod_error("metadata: {name: p}\nspec: {priority: high}\n", &err);
    assert_contains(err.message, "pod.yaml:2:");

    pod_error("metadata: {name: p}\nstatus: {phase: Sleeping}\n", &err);
    assert_contains(err.message, "Sleeping");

    pod_error("metadata: {name: p, creationTimestamp: yesterday}\n", &err);
    assert_contains(err.message, "pod.yaml:1:");
    assert_contains(err.message, "yesterday");

    pod_error("metadata: {name: p}\nspec: {containers: {name: a}}\n", &err);
    assert_contains(err.message, "pod.yaml:2:");
}

/* ---- node affinity ----------------------------------------------------------------------- */

struct affinity_case {
    const char *spec; /* pod spec in flow YAML */
    bool matches;
};

#define REQUIRED(terms)                                                                            \
    "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "                  \
    "{nodeSelectorTerms: [" terms "]}}}}"

static const struct affinity_case affinity_cases[] = {
    {"{}", true},
    {"{nodeSelector: {zone: a}}", true},
    {"{nodeSelector: {zone: b}}", false},
    {"{nodeSelector: {zone: a, disk: ssd}}", false},
    {"{nodeSelector: {zone: a, gen: '5'}}", true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: In, values: [b, a]}]}"), true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: In, values: [b]}]}"), false},
    {REQUIRED("{matchExpressions: [{key: disk, operator: In, values: [ssd]}]}"), false},
    {REQUIRED("{matchExpressions: [{key: zone, operator: NotIn, values: [b]}]}"), true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: NotIn, values: [a]}]}"), false},
    {REQUIRED("{matchExpressions: [{key: disk, operator: NotIn, values: [ssd]}]}"), true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: Exists}]}"), true},
    {REQUIRED("{matchExpressions: [{key: disk, operator: Exists}]}"), false},
    {REQUIRED("{matchExpressions: [{key: disk, operator: DoesNotExist}]}"), true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: DoesNotExist}]}"), false},
    {REQUIRED("{matchExpressions: [{key: gen, operator: Gt, values: ['4']}]}"), true},
    {REQUIRED("{matchExpressions: [{key: gen, operator: Gt, values: ['5']}]}"), false},
    {REQUIRED("{matchExpressions: [{key: gen, operator: Lt, values: ['6']}]}"), true},
    {REQUIRED("{matchExpressions: [{key: gen, operator: Lt, values: ['5']}]}"), false},
    {REQUIRED("{matchExpressions: [{key: gen, operator: Gt, values: ['-10']}]}"), true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: Gt, values: ['1']}]}"), false},
    {REQUIRED("{matchExpressions: [{key: disk, operator: Lt, values: ['1']}]}"), false},
    /* expressions of one term are ANDed */
    {REQUIRED("{matchExpressions: [{key: zone, operator: In, values: [a]}, {key: gen, "
              "operator: Gt, values: ['7']}]}"),
     false},
    {REQUIRED("{matchExpressions: [{key: zone, operator: In, values: [a]}, {key: gen, "
              "operator: Lt, values: ['7']}]}"),
     true},
    /* terms are ORed */
    {REQUIRED("{matchExpressions: [{key: zone, operator: In, values: [b]}]}, "
              "{matchExpressions: [{key: gen, operator: Gt, values: ['4']}]}"),
     true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: In, values: [b]}]}, "
              "{matchExpressions: [{key: gen, operator: Gt, values: ['9']}]}"),
     false},
    /* an empty term matches nothing, even next to nothing else */
    {REQUIRED("{}"), false},
    {REQUIRED("{matchExpressions: []}"), false},
    {REQUIRED(""), false},
    {REQUIRED("{}, {matchExpressions: [{key: zone, operator: Exists}]}"), true},
    /* matchFields on metadata.name */
    {REQUIRED("{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}"), true},
    {REQUIRED("{matchFields: [{key: metadata.name, operator: In, values: [n2]}]}"), false},
    {REQUIRED("{matchFields: [{key: metadata.name, operator: NotIn, values: [n1]}]}"), false},
    {REQUIRED("{matchFields: [{key: metadata.name, operator: NotIn, values: [n2]}]}"), true},
    {REQUIRED("{matchExpressions: [{key: zone, operator: In, values: [a]}], matchFields: "
              "[{key: metadata.name, operator: In, values: [n2]}]}"),
     false},
    /* nodeSelector and required affinity must both pass */
    {"{nodeSelector: {zone: b}, affinity: {nodeAffinity: "
     "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: "
     "[{key: zone, operator: Exists}]}]}}}}",
     false},
    /* preferred terms never filter */
    {"{affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, "
     "preference: {matchExpressions: [{key: zone, operator: In, values: [b]}]}}]}}}",
     true},
};

static void node_affinity_truth_table(void **state)
{
    (void)state;
    struct node *node = node_yaml("{metadata: {name: n1, labels: {zone: a, gen: '5', "
                                  "gpu: 'true'}}}");
    for (size_t i = 0; i < sizeof(affinity_cases) / sizeof(affinity_cases[0]); i++) {
        char yaml[1024];
        snprintf(yaml, sizeof(yaml), "{metadata: {name: p}, spec: %s}", affinity_cases[i].spec);
        struct pod *pod = pod_yaml(yaml);
        if (pod_matches_node_selector_and_affinity(pod, node) != affinity_cases[i].matches)
            fail_msg("case %zu (%s): expected %s", i, affinity_cases[i].spec,
                     affinity_cases[i].matches ? "match" : "no match");
        pod_free(pod);
    }
    node_free(node);
}

static void preferred_weights_add_up_for_matching_terms(void **state)
{
    (void)state;
    struct node *node = node_yaml("{metadata: {name: n1, labels: {zone: a, gen: '5'}}}");
    struct pod *pod = pod_yaml(
        "{metadata: {name: p}, spec: {affinity: {nodeAffinity: "
        "{preferredDuringSchedulingIgnoredDuringExecution: ["
        "{weight: 10, preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}},"
        "{weight: 20, preference: {matchExpressions: [{key: zone, operator: In, values: [b]}]}},"
        "{weight: 30, preference: {matchExpressions: [{key: gen, operator: Gt, values: ['1']}]}},"
        "{weight: 40, preference: {}},"
        "{weight: 50, preference: {matchFields: [{key: metadata.name, operator: In, values: "
        "[n1]}]}}]}}}}");
    assert_int_equal(pod->affinity.preferred_count, 5);
    assert_int_equal(pod_preferred_affinity_weight(pod, node), 90);
    pod_free(pod);
    node_free(node);
}

/* ---- node names of the required affinity (kube's NodeAffinity PreFilter) ----------------- */

#define NAME_IN(n) "{key: metadata.name, operator: In, values: [" n "]}"

struct affinity_names_case {
    const char *spec;
    int32_t count;       /* -1: no restriction by name */
    const char *names;   /* the names in order, comma-separated */
};

static const struct affinity_names_case affinity_names_cases[] = {
    {"{}", -1, ""},
    {"{nodeSelector: {zone: a}}", -1, ""},
    {REQUIRED("{matchExpressions: [{key: zone, operator: Exists}]}"), -1, ""},
    {REQUIRED("{matchFields: [" NAME_IN("n1") "]}"), 1, "n1"},
    /* ORed terms: the union */
    {REQUIRED("{matchFields: [" NAME_IN("n1") "]}, {matchFields: [" NAME_IN("n2") "]}"), 2,
     "n1,n2"},
    /* one term without a name requirement opens every node */
    {REQUIRED("{matchFields: [" NAME_IN("n1") "]}, {matchExpressions: [{key: a, operator: "
              "Exists}]}"),
     -1, ""},
    /* ANDed requirements in one term: the intersection, here empty: a conflict */
    {REQUIRED("{matchFields: [" NAME_IN("n1") ", " NAME_IN("n2") "]}"), 0, ""},
    {REQUIRED("{matchFields: [" NAME_IN("n1") ", " NAME_IN("n1") "]}"), 1, "n1"},
    /* the same name from two terms counts once */
    {REQUIRED("{matchFields: [" NAME_IN("n1") "]}, {matchFields: [" NAME_IN("n1") "]}"), 1, "n1"},
    /* NotIn does not narrow; it leaves the term restricted only by its In */
    {REQUIRED("{matchFields: [" NAME_IN("n1") ", {key: metadata.name, operator: NotIn, "
              "values: [n2]}]}"),
     1, "n1"},
    {REQUIRED("{matchFields: [{key: metadata.name, operator: NotIn, values: [n2]}]}"), -1, ""},
    /* a label expression beside the name keeps the name list */
    {REQUIRED("{matchExpressions: [{key: a, operator: Exists}], matchFields: [" NAME_IN("n3") "]}"),
     1, "n3"},
};

static void affinity_node_names_follow_kube_prefilter(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(affinity_names_cases) / sizeof(affinity_names_cases[0]); i++) {
        const struct affinity_names_case *c = &affinity_names_cases[i];
        char yaml[1024];
        snprintf(yaml, sizeof(yaml), "{metadata: {name: p}, spec: %s}", c->spec);
        struct pod *pod = pod_yaml(yaml);
        const char *names[4] = {0};
        int32_t count = pod_affinity_node_names(pod, names, 4);
        if (count != c->count)
            fail_msg("case %zu (%s): %d names, want %d", i, c->spec, count, c->count);
        char joined[128] = "";
        for (int32_t k = 0; k < count && k < 4; k++)
            snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s",
                     k > 0 ? "," : "", names[k]);
        if (strcmp(joined, c->names) != 0)
            fail_msg("case %zu (%s): names \"%s\", want \"%s\"", i, c->spec, joined, c->names);
        /* the count does not depend on the room given */
        assert_int_equal(pod_affinity_node_names(pod, NULL, 0), c->count);
        pod_free(pod);
    }
}

/* ---- tolerations ------------------------------------------------------------------------- */

struct toleration_case {
    const char *key;
    enum toleration_op op;
    const char *value;
    kc_taint_effect effect;
    const char *taint_key;
    const char *taint_value;
    kc_taint_effect taint_effect;
    bool tolerates;
};

#define NO_SCHEDULE KC_TAINT_NO_SCHEDULE
#define PREFER KC_TAINT_PREFER_NO_SCHEDULE
#define NO_EXECUTE KC_TAINT_NO_EXECUTE
#define ANY ((kc_taint_effect)0)

static const struct toleration_case toleration_cases[] = {
    {"k", TOLERATION_EQUAL, "v", NO_SCHEDULE, "k", "v", NO_SCHEDULE, true},
    {"k", TOLERATION_EQUAL, "v", NO_SCHEDULE, "k", "w", NO_SCHEDULE, false},
    {"k", TOLERATION_EQUAL, "v", NO_SCHEDULE, "k", "v", NO_EXECUTE, false},
    {"k", TOLERATION_EQUAL, "v", NO_SCHEDULE, "k", "v", PREFER, false},
    {"k", TOLERATION_EQUAL, "v", ANY, "k", "v", PREFER, true},
    {"k", TOLERATION_EQUAL, "v", ANY, "k", "v", NO_EXECUTE, true},
    {"k", TOLERATION_EQUAL, "v", ANY, "x", "v", NO_SCHEDULE, false},
    {"k", TOLERATION_EQUAL, "", ANY, "k", "", NO_SCHEDULE, true},
    {"k", TOLERATION_EQUAL, "", ANY, "k", "v", NO_SCHEDULE, false},
    {"k", TOLERATION_EXISTS, "", ANY, "k", "anything", NO_EXECUTE, true},
    {"k", TOLERATION_EXISTS, "", NO_EXECUTE, "k", "v", NO_SCHEDULE, false},
    {"k", TOLERATION_EXISTS, "", ANY, "other", "v", NO_SCHEDULE, false},
    {"", TOLERATION_EXISTS, "", ANY, "any", "thing", NO_EXECUTE, true},
    {"", TOLERATION_EXISTS, "", ANY, "other", "", PREFER, true},
    {"", TOLERATION_EXISTS, "", NO_SCHEDULE, "x", "y", PREFER, false},
    {"", TOLERATION_EXISTS, "", PREFER, "x", "y", PREFER, true},
    {"k", TOLERATION_EXISTS, "ignored", ANY, "k", "v", NO_SCHEDULE, true},
};

static void toleration_truth_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(toleration_cases) / sizeof(toleration_cases[0]); i++) {
        const struct toleration_case *c = &toleration_cases[i];
        struct toleration tol = {
            .key = (char *)c->key, .value = (char *)c->value, .op = c->op, .effect = c->effect};
        if (toleration_tolerates(&tol, c->taint_key, c->taint_value, c->taint_effect) !=
            c->tolerates)
            fail_msg("case %zu: expected %s", i, c->tolerates ? "tolerated" : "not tolerated");
    }
}

static void pod_tolerates_when_any_toleration_does(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(
        "{metadata: {name: p}, spec: {tolerations: [{key: gpu, operator: Equal, value: "
        "shared, effect: NoSchedule}, {key: spot, operator: Exists}, {key: evict, operator: "
        "Exists, effect: NoExecute, tolerationSeconds: 30}]}}");
    assert_true(pod->tolerations[2].has_seconds);
    assert_int_equal(pod->tolerations[2].seconds, 30);
    assert_true(pod_tolerates(pod, "gpu", "shared", KC_TAINT_NO_SCHEDULE));
    assert_false(pod_tolerates(pod, "gpu", "exclusive", KC_TAINT_NO_SCHEDULE));
    assert_true(pod_tolerates(pod, "spot", "", KC_TAINT_PREFER_NO_SCHEDULE));
    assert_true(pod_tolerates(pod, "evict", "x", KC_TAINT_NO_EXECUTE));
    assert_false(pod_tolerates(pod, "evict", "x", KC_TAINT_NO_SCHEDULE));
    assert_false(pod_tolerates(pod, "other", "", KC_TAINT_NO_SCHEDULE));
    pod_free(pod);

    struct pod *bare = pod_yaml("{metadata: {name: q}}");
    assert_false(pod_tolerates(bare, "gpu", "", KC_TAINT_NO_SCHEDULE));
    pod_free(bare);
}


/* ---- host ports and the fields a pod uses ---- */

static void host_ports_of_containers_and_sidecars_with_defaults(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("metadata: {name: web}\n"
                               "spec:\n"
                               "  initContainers:\n"
                               "  - {name: setup, ports: [{containerPort: 9, hostPort: 9}]}\n"
                               "  - name: proxy\n"
                               "    restartPolicy: Always\n"
                               "    ports: [{containerPort: 15001, hostPort: 15001, "
                               "protocol: UDP}]\n"
                               "  containers:\n"
                               "  - name: app\n"
                               "    ports:\n"
                               "    - {containerPort: 80, hostPort: 8080}\n"
                               "    - {containerPort: 81}\n"
                               "    - {containerPort: 53, hostPort: 53, hostIP: 10.0.0.1, "
                               "protocol: SCTP}\n");
    /* the plain init container has exited before the app binds; a port without hostPort
     * takes nothing on the node */
    assert_int_equal(pod->host_port_count, 3);
    assert_int_equal(pod->host_ports[0].port, 8080);
    assert_int_equal(pod->host_ports[0].container_port, 80);
    assert_string_equal(pod->host_ports[0].protocol, "TCP");
    assert_string_equal(pod->host_ports[0].host_ip, "0.0.0.0");
    assert_int_equal(pod->host_ports[1].port, 53);
    assert_string_equal(pod->host_ports[1].protocol, "SCTP");
    assert_string_equal(pod->host_ports[1].host_ip, "10.0.0.1");
    assert_int_equal(pod->host_ports[2].port, 15001);
    assert_string_equal(pod->host_ports[2].protocol, "UDP");
    assert_int_equal(pod->fields, POD_FIELD_HOST_PORTS);
    pod_free(pod);
}

static void host_network_defaults_host_port_to_container_port(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("metadata: {name: agent}\n"
                               "spec:\n"
                               "  hostNetwork: true\n"
                               "  containers: [{name: a, ports: [{containerPort: 9100}]}]\n");
    assert_int_equal(pod->host_port_count, 1);
    assert_int_equal(pod->host_ports[0].port, 9100);
    pod_free(pod);
}

static void bad_ports_are_errors_with_position(void **state)
{
    (void)state;
    struct kc_error err = {{0}};
    pod_error("metadata: {name: p}\n"
              "spec:\n"
              "  containers: [{name: a, ports: [{containerPort: 80, hostPort: 70000}]}]\n",
              &err);
    assert_contains(err.message, "pod.yaml:3:");
    assert_contains(err.message, "hostPort");
    pod_error("metadata: {name: p}\n"
              "spec:\n"
              "  containers: [{name: a, ports: [{hostPort: 80, protocol: tcp}]}]\n",
              &err);
    assert_contains(err.message, "unknown protocol \"tcp\"");
}

struct field_case {
    const char *spec; /* YAML of spec */
    uint32_t fields;
};

static const struct field_case field_cases[] = {
    {"{}", 0},
    {"nodeSelector: {zone: a}", POD_FIELD_NODE_SELECTOR},
    {"affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, "
     "preference: {matchExpressions: [{key: a, operator: Exists}]}}]}}",
     POD_FIELD_NODE_AFFINITY},
    {"affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: "
     "zone}]}}",
     POD_FIELD_POD_AFFINITY},
    {"affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
     "[{weight: 1}]}}",
     POD_FIELD_POD_ANTI_AFFINITY},
    /* empty stanzas ask for nothing */
    {"affinity: {podAffinity: {}, podAntiAffinity: {}}\ntopologySpreadConstraints: []", 0},
    {"topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: "
     "DoNotSchedule}]",
     POD_FIELD_TOPOLOGY_SPREAD},
    {"resourceClaims: [{name: gpu, resourceClaimName: gpu-0}]", POD_FIELD_RESOURCE_CLAIMS},
    {"volumes: [{name: d, persistentVolumeClaim: {claimName: data}}, {name: c, configMap: "
     "{name: x}}]",
     POD_FIELD_PVC_VOLUMES},
    {"volumes: [{name: e, ephemeral: {volumeClaimTemplate: {spec: {}}}}, {name: i, csi: "
     "{driver: x}}]",
     POD_FIELD_EPHEMERAL_VOLUMES | POD_FIELD_CSI_VOLUMES},
    {"volumes: [{name: a, gcePersistentDisk: {pdName: a}}, {name: b, awsElasticBlockStore: "
     "{volumeID: b}}, {name: c, rbd: {image: c}}, {name: d, iscsi: {iqn: d}}]",
     POD_FIELD_GCE_PD_VOLUMES | POD_FIELD_AWS_EBS_VOLUMES | POD_FIELD_RBD_VOLUMES |
         POD_FIELD_ISCSI_VOLUMES},
    {"volumes: [{name: t, emptyDir: {}}, {name: h, hostPath: {path: /x}}]", 0},
    {"resources: {requests: {cpu: 1}}", POD_FIELD_POD_RESOURCES},
    {"resources: {}", 0},
};

static void pod_records_the_scheduling_fields_it_uses(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(field_cases) / sizeof(field_cases[0]); i++) {
        char yaml[1024];
        snprintf(yaml, sizeof(yaml), "metadata: {name: p}\nspec:\n  %s\n", field_cases[i].spec);
        struct pod *pod = pod_yaml(yaml);
        if (pod->fields != field_cases[i].fields)
            fail_msg("case %zu (%s): fields 0x%x, want 0x%x", i, field_cases[i].spec,
                     pod->fields, field_cases[i].fields);
        pod_free(pod);
    }
}

static void pod_field_table_names_every_bit_and_its_plugin(void **state)
{
    (void)state;
    uint32_t all = pod_fields_all();
    assert_int_equal(all, (POD_FIELD_POD_RESOURCES << 1) - 1);
    for (uint32_t bit = 1; bit != 0 && (all & bit); bit <<= 1) {
        const char *name = pod_field_name(bit);
        assert_non_null(name);
        assert_int_equal(pod_field_by_name(name), bit);
    }
    assert_int_equal(pod_field_by_name("spec.nope"), 0);
    assert_string_equal(pod_field_handlers(POD_FIELD_HOST_PORTS), "nodeports");
    assert_string_equal(pod_field_handlers(POD_FIELD_TOPOLOGY_SPREAD), "podtopologyspread");
    assert_string_equal(pod_field_handlers(POD_FIELD_POD_RESOURCES), "");
    const char *names[] = {"prioritysort", "nodeports", "volumebinding"};
    uint32_t unhandled = pod_fields_unhandled_by(names, 3);
    assert_false(unhandled & POD_FIELD_HOST_PORTS);
    assert_false(unhandled & POD_FIELD_PVC_VOLUMES);
    assert_false(unhandled & POD_FIELD_EPHEMERAL_VOLUMES);
    assert_true(unhandled & POD_FIELD_TOPOLOGY_SPREAD);
    assert_true(unhandled & POD_FIELD_POD_RESOURCES);
    char text[256];
    pod_fields_format(POD_FIELD_TOPOLOGY_SPREAD | POD_FIELD_POD_AFFINITY, text, sizeof(text));
    assert_string_equal(text, "spec.affinity.podAffinity, spec.topologySpreadConstraints");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kv_list_keeps_keys_sorted_and_unique),
        cmocka_unit_test(res_list_sorts_by_id_and_drops_zeros),
        cmocka_unit_test(effective_request_matches_kube_scheduler),
        cmocka_unit_test(container_requests_are_defaulted_from_limits),
        cmocka_unit_test(pod_finish_recomputes_a_hand_built_pod),
        cmocka_unit_test(pod_reads_metadata_and_applies_defaults),
        cmocka_unit_test(pod_keeps_given_identity),
    cmocka_unit_test(pod_reads_preemption_fields),
        cmocka_unit_test(node_reads_taints_and_allocatable),
        cmocka_unit_test(node_allocatable_falls_back_to_capacity),
        cmocka_unit_test(bad_quantity_names_line_and_column),
        cmocka_unit_test(bad_values_are_errors_with_position),
        cmocka_unit_test(node_affinity_truth_table),
        cmocka_unit_test(preferred_weights_add_up_for_matching_terms),
        cmocka_unit_test(affinity_node_names_follow_kube_prefilter),
        cmocka_unit_test(toleration_truth_table),
        cmocka_unit_test(pod_tolerates_when_any_toleration_does),
        cmocka_unit_test(host_ports_of_containers_and_sidecars_with_defaults),
        cmocka_unit_test(host_network_defaults_host_port_to_container_port),
        cmocka_unit_test(bad_ports_are_errors_with_position),
        cmocka_unit_test(pod_records_the_scheduling_fields_it_uses),
        cmocka_unit_test(pod_field_table_names_every_bit_and_its_plugin),
        cmocka_unit_test(pod_reads_volumes_and_names_ephemeral_claims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
