/* Unit tests of proto_convert: pods, nodes and custom objects survive the objects.proto wire
 * field by field, and bad bytes or bad values are errors that name the object and the field. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"
#include "proto_convert.h"
#include "resource_table.h"
#include "tree.h"

#define GI (1024LL * 1024 * 1024)
#define MI (1024LL * 1024)

/* Every field objects.proto carries, set to something other than its default. */
static const char *const full_pod_yaml =
    "metadata:\n"
    "  name: trainer-0\n"
    "  namespace: ml\n"
    "  uid: 7c1e-uid\n"
    "  creationTimestamp: 2024-05-01T12:00:00.250Z\n"
    "  deletionTimestamp: 2024-05-01T13:00:00Z\n"
    "  labels: {app: trainer, scheduling.x-k8s.io/pod-group: gang-a, tier: gpu}\n"
    "  annotations: {kcycle.io/queue: team-a, note: ''}\n"
    "spec:\n"
    "  nodeName: gpu-node-3\n"
    "  schedulerName: kcycle\n"
    "  priority: -7\n"
    "  preemptionPolicy: Never\n"
    "  nodeSelector: {accelerator: h100, zone: a}\n"
    "  affinity:\n"
    "    nodeAffinity:\n"
    "      requiredDuringSchedulingIgnoredDuringExecution:\n"
    "        nodeSelectorTerms:\n"
    "        - matchExpressions:\n"
    "          - {key: gpu.count, operator: Gt, values: ['3']}\n"
    "          - {key: pool, operator: In, values: [a, b]}\n"
    "          matchFields:\n"
    "          - {key: metadata.name, operator: NotIn, values: [bad-node]}\n"
    "        - matchExpressions:\n"
    "          - {key: spare, operator: Exists}\n"
    "      preferredDuringSchedulingIgnoredDuringExecution:\n"
    "      - weight: 40\n"
    "        preference:\n"
    "          matchExpressions:\n"
    "          - {key: rack, operator: DoesNotExist}\n"
    "          matchFields:\n"
    "          - {key: metadata.name, operator: In, values: [gpu-node-3]}\n"
    "      - weight: 100\n"
    "        preference:\n"
    "          matchExpressions:\n"
    "          - {key: gpu.mem, operator: Lt, values: ['81']}\n"
    "  tolerations:\n"
    "  - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}\n"
    "  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute,\n"
    "     tolerationSeconds: 300}\n"
    "  - {operator: Exists}\n"
    "  schedulingGates: [{name: kcycle.io/quota}, {name: example.com/wait}]\n"
    "  initContainers:\n"
    "  - name: fetch\n"
    "    resources: {requests: {cpu: '2', memory: 1Gi}}\n"
    "  - name: log-shipper\n"
    "    restartPolicy: Always\n"
    "    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}\n"
    "  containers:\n"
    "  - name: main\n"
    "    resources:\n"
    "      requests: {cpu: '1', memory: 2Gi, nvidia.com/gpu: '4'}\n"
    "      limits: {memory: 4Gi, nvidia.com/gpu: '4', ephemeral-storage: 10Gi}\n"
    "  - name: helper\n"
    "    resources: {limits: {cpu: 500m}}\n"
    "  overhead: {cpu: 250m, memory: 120Mi}\n"
    "status:\n"
    "  phase: Running\n"
    "  nominatedNodeName: gpu-3\n"
    "  startTime: 2024-05-01T12:00:05Z\n";

static const char *const full_node_yaml =
    "metadata:\n"
    "  name: gpu-node-3\n"
    "  uid: node-uid-3\n"
    "  labels: {zone: a, accelerator: h100, kubernetes.io/hostname: gpu-node-3}\n"
    "  annotations: {kcycle.io/numa: '2'}\n"
    "spec:\n"
    "  unschedulable: true\n"
    "  taints:\n"
    "  - {key: dedicated, value: ml, effect: NoSchedule}\n"
    "  - {key: maintenance, effect: PreferNoSchedule}\n"
    "  - {key: node.kubernetes.io/unreachable, effect: NoExecute}\n"
    "status:\n"
    "  allocatable: {cpu: '64', memory: 512Gi, pods: '110', nvidia.com/gpu: '8',\n"
    "                example.com/fpga: '2'}\n";

static struct tree *parse(const char *yaml)
{
    struct tree *t = NULL;
    struct kc_error err = {{0}};
    int rc = tree_parse_buffer("object.yaml", yaml, strlen(yaml), &t, &err);
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

/* The pod after a trip through bytes. */
static struct pod *pod_round_trip(const struct pod *pod)
{
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(pod_to_proto_bytes(pod, &bytes, &len), 0);
    assert_non_null(bytes);
    struct pod *copy = NULL;
    struct kc_error err = {{0}};
    int rc = pod_from_proto_bytes(bytes, len, &copy, &err);
    if (rc != 0)
        print_error("%s\n", err.message);
    assert_int_equal(rc, 0);
    free(bytes);
    return copy;
}

static struct node *node_round_trip(const struct node *node)
{
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(node_to_proto_bytes(node, &bytes, &len), 0);
    struct node *copy = NULL;
    struct kc_error err = {{0}};
    int rc = node_from_proto_bytes(bytes, len, &copy, &err);
    if (rc != 0)
        print_error("%s\n", err.message);
    assert_int_equal(rc, 0);
    free(bytes);
    return copy;
}

/* ---- field-by-field comparison ----------------------------------------------------------- */

static void assert_optional_string_equal(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

static void assert_kv_equal(const struct kv_list *a, const struct kv_list *b)
{
    assert_int_equal(a->count, b->count);
    for (uint32_t i = 0; i < a->count; i++) {
        assert_string_equal(a->items[i].key, b->items[i].key);
        assert_string_equal(a->items[i].value, b->items[i].value);
    }
}

static void assert_res_equal(const struct res_list *a, const struct res_list *b)
{
    assert_int_equal(a->count, b->count);
    for (uint32_t i = 0; i < a->count; i++) {
        assert_int_equal(a->items[i].id, b->items[i].id);
        assert_int_equal(a->items[i].value, b->items[i].value);
    }
}

static void assert_requirements_equal(const struct selector_requirement *a,
                                      const struct selector_requirement *b, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        assert_string_equal(a[i].key, b[i].key);
        assert_int_equal(a[i].op, b[i].op);
        assert_int_equal(a[i].value_count, b[i].value_count);
        for (uint32_t j = 0; j < a[i].value_count; j++)
            assert_string_equal(a[i].values[j], b[i].values[j]);
    }
}

static void assert_term_equal(const struct node_selector_term *a,
                              const struct node_selector_term *b)
{
    assert_int_equal(a->expression_count, b->expression_count);
    assert_requirements_equal(a->expressions, b->expressions, a->expression_count);
    assert_int_equal(a->field_count, b->field_count);
    assert_requirements_equal(a->fields, b->fields, a->field_count);
}

static void assert_affinity_equal(const struct node_affinity *a, const struct node_affinity *b)
{
    assert_int_equal(a->has_required, b->has_required);
    assert_int_equal(a->required_count, b->required_count);
    for (uint32_t i = 0; i < a->required_count; i++)
        assert_term_equal(&a->required[i], &b->required[i]);
    assert_int_equal(a->preferred_count, b->preferred_count);
    for (uint32_t i = 0; i < a->preferred_count; i++) {
        assert_int_equal(a->preferred[i].weight, b->preferred[i].weight);
        assert_term_equal(&a->preferred[i].term, &b->preferred[i].term);
    }
}

static void assert_containers_equal(const struct container *a, const struct container *b,
                                    uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        assert_optional_string_equal(a[i].name, b[i].name);
        assert_res_equal(&a[i].requests, &b[i].requests);
        assert_res_equal(&a[i].limits, &b[i].limits);
        assert_int_equal(a[i].restartable, b[i].restartable);
    }
}

static void assert_pod_equal(const struct pod *a, const struct pod *b)
{
    assert_string_equal(a->namespace, b->namespace);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->uid, b->uid);
    assert_optional_string_equal(a->node_name, b->node_name);
    assert_string_equal(a->scheduler_name, b->scheduler_name);
    assert_optional_string_equal(a->pod_group, b->pod_group);
    assert_int_equal(a->priority, b->priority);
    assert_int_equal(a->creation_ms, b->creation_ms);
    assert_int_equal(a->phase, b->phase);
    assert_int_equal(a->deleting, b->deleting);
    assert_int_equal(a->preempt_never, b->preempt_never);
    assert_optional_string_equal(a->nominated_node_name, b->nominated_node_name);
    assert_int_equal(a->start_ms, b->start_ms);
    assert_kv_equal(&a->labels, &b->labels);
    assert_kv_equal(&a->annotations, &b->annotations);
    assert_kv_equal(&a->node_selector, &b->node_selector);
    assert_affinity_equal(&a->affinity, &b->affinity);
    assert_int_equal(a->toleration_count, b->toleration_count);
    for (uint32_t i = 0; i < a->toleration_count; i++) {
        const struct toleration *x = &a->tolerations[i], *y = &b->tolerations[i];
        assert_string_equal(x->key, y->key);
        assert_string_equal(x->value, y->value);
        assert_int_equal(x->op, y->op);
        assert_int_equal(x->effect, y->effect);
        assert_int_equal(x->has_seconds, y->has_seconds);
        assert_int_equal(x->seconds, y->seconds);
    }
    assert_int_equal(a->scheduling_gate_count, b->scheduling_gate_count);
    for (uint32_t i = 0; i < a->scheduling_gate_count; i++)
        assert_string_equal(a->scheduling_gates[i], b->scheduling_gates[i]);
    assert_int_equal(a->container_count, b->container_count);
    assert_containers_equal(a->containers, b->containers, a->container_count);
    assert_int_equal(a->init_container_count, b->init_container_count);
    assert_containers_equal(a->init_containers, b->init_containers, a->init_container_count);
    assert_res_equal(&a->overhead, &b->overhead);
    assert_res_equal(&a->request, &b->request);
}

static void assert_node_equal(const struct node *a, const struct node *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->uid, b->uid);
    assert_int_equal(a->unschedulable, b->unschedulable);
    assert_kv_equal(&a->labels, &b->labels);
    assert_kv_equal(&a->annotations, &b->annotations);
    assert_int_equal(a->taint_count, b->taint_count);
    for (uint32_t i = 0; i < a->taint_count; i++) {
        assert_string_equal(a->taints[i].key, b->taints[i].key);
        assert_string_equal(a->taints[i].value, b->taints[i].value);
        assert_int_equal(a->taints[i].effect, b->taints[i].effect);
    }
    assert_res_equal(&a->allocatable, &b->allocatable);
}

/* ---- round trips ------------------------------------------------------------------------- */

static void pod_with_every_field_round_trips(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(full_pod_yaml);
    /* The fixture really sets what it claims, so the comparison below proves something. */
    assert_non_null(pod->node_name);
    assert_true(pod->deleting);
    assert_int_equal(pod->phase, POD_RUNNING);
    assert_true(pod->affinity.has_required);
    assert_int_equal(pod->affinity.required[0].field_count, 1);
    assert_int_equal(pod->affinity.preferred_count, 2);
    assert_true(pod->tolerations[1].has_seconds);
    assert_false(pod->tolerations[0].has_seconds);
    assert_true(pod->init_containers[1].restartable);
    assert_true(pod->preempt_never);
    assert_string_equal(pod->nominated_node_name, "gpu-3");
    assert_int_equal(pod->start_ms, 1714564805000LL);

    struct pod *copy = pod_round_trip(pod);
    assert_pod_equal(pod, copy);
    assert_int_equal(copy->creation_ms, 1714564800250LL);
    assert_int_equal(copy->priority, -7);
    assert_string_equal(copy->pod_group, "gang-a");
    assert_int_equal(copy->tolerations[1].seconds, 300);

    /* The request is recomputed on arrival, not sent. Steady state: main + helper (its
     * request defaulted from the limit) + the sidecar = 1.6 cpu, 2Gi + 64Mi; the regular init
     * runs before the sidecar starts and needs 2 cpu. Then the overhead is added. */
    kc_resource gpu = resource_lookup("nvidia.com/gpu");
    assert_true(gpu >= 0);
    assert_int_equal(res_list_get(&copy->request, KC_RESOURCE_CPU), 2000 + 250);
    assert_int_equal(res_list_get(&copy->request, KC_RESOURCE_MEMORY), 2 * GI + 64 * MI + 120 * MI);
    assert_int_equal(res_list_get(&copy->request, gpu), 4);
    assert_int_equal(res_list_get(&copy->request, KC_RESOURCE_EPHEMERAL_STORAGE), 10 * GI);
    pod_free(pod);
    pod_free(copy);
}


/* A plugin host applies Delta.pod_bound by setting nodeName on the pod it decoded from the
 * Assume: that must be what decoding the assigned pod's pod_put gives, derived fields included
 * (nothing derives from nodeName), and it must encode to the very same bytes. */
static void a_decoded_pod_given_its_node_name_is_the_decoded_assigned_pod(void **state)
{
    (void)state;
    struct pod *assigned = pod_yaml(full_pod_yaml);
    assert_non_null(assigned->node_name);
    struct pod *from_put = pod_round_trip(assigned);
    char *node = assigned->node_name;
    assigned->node_name = NULL;
    struct pod *from_assume = pod_round_trip(assigned);
    assigned->node_name = node;
    assert_null(from_assume->node_name);
    from_assume->node_name = strdup(node);
    assert_pod_equal(from_assume, from_put);
    assert_int_equal(from_assume->fields, from_put->fields);
    uint8_t *a = NULL, *b = NULL;
    size_t a_len = 0, b_len = 0;
    assert_int_equal(pod_to_proto_bytes(from_assume, &a, &a_len), 0);
    assert_int_equal(pod_to_proto_bytes(from_put, &b, &b_len), 0);
    assert_int_equal(a_len, b_len);
    assert_memory_equal(a, b, a_len);
    free(a);
    free(b);
    pod_free(assigned);
    pod_free(from_put);
    pod_free(from_assume);
}

static void host_ports_and_used_fields_round_trip(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("metadata: {name: web}\n"
                               "spec:\n"
                               "  topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone}]\n"
                               "  volumes: [{name: d, persistentVolumeClaim: {claimName: c}}]\n"
                               "  nodeSelector: {zone: a}\n"
                               "  containers:\n"
                               "  - name: app\n"
                               "    ports: [{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1,"
                               " protocol: UDP}, {containerPort: 443, hostPort: 443}]\n");
    uint32_t want = POD_FIELD_TOPOLOGY_SPREAD | POD_FIELD_PVC_VOLUMES | POD_FIELD_NODE_SELECTOR |
                    POD_FIELD_HOST_PORTS;
    assert_int_equal(pod->fields, want);
    struct pod *copy = pod_round_trip(pod);
    assert_int_equal(copy->fields, want);
    assert_int_equal(copy->host_port_count, 2);
    assert_int_equal(copy->host_ports[0].port, 8080);
    assert_int_equal(copy->host_ports[0].container_port, 80);
    assert_string_equal(copy->host_ports[0].protocol, "UDP");
    assert_string_equal(copy->host_ports[0].host_ip, "10.0.0.1");
    assert_int_equal(copy->host_ports[1].port, 443);
    assert_string_equal(copy->host_ports[1].protocol, "TCP");
    assert_string_equal(copy->host_ports[1].host_ip, "0.0.0.0");
    pod_free(pod);
    pod_free(copy);
}

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

/* Volumes cross the wire field by field; the ephemeral claim is named again on arrival. */
static void pod_volumes_round_trip(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(volume_pod_yaml);
    struct pod *copy = pod_round_trip(pod);
    assert_int_equal(copy->volume_count, pod->volume_count);
    for (uint32_t i = 0; i < pod->volume_count; i++) {
        const struct volume *a = &pod->volumes[i], *b = &copy->volumes[i];
        assert_int_equal(a->source, b->source);
        assert_int_equal(a->read_only, b->read_only);
        assert_optional_string_equal(a->name, b->name);
        assert_optional_string_equal(a->claim_name, b->claim_name);
        assert_optional_string_equal(a->disk, b->disk);
        assert_optional_string_equal(a->pool, b->pool);
        assert_optional_string_equal(a->monitors, b->monitors);
    }
    assert_string_equal(copy->volumes[1].claim_name, "web-0-scratch");
    pod_free(pod);
    pod_free(copy);
}

static void pod_with_only_a_name_round_trips_with_defaults(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("metadata: {name: lone}\n");
    struct pod *copy = pod_round_trip(pod);
    assert_pod_equal(pod, copy);
    assert_string_equal(copy->namespace, "default");
    assert_string_equal(copy->scheduler_name, "default-scheduler");
    assert_string_equal(copy->uid, "default/lone");
    assert_null(copy->node_name);
    assert_null(copy->pod_group);
    assert_false(copy->affinity.has_required);
    assert_int_equal(copy->request.count, 0);
    pod_free(pod);
    pod_free(copy);
}

/* has_required with no terms matches no node: it must not come back as "no affinity". */
static void required_affinity_without_terms_survives(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("metadata: {name: p}\n"
                               "spec: {affinity: {nodeAffinity: "
                               "{requiredDuringSchedulingIgnoredDuringExecution: {}}}}\n");
    assert_true(pod->affinity.has_required);
    struct pod *copy = pod_round_trip(pod);
    assert_true(copy->affinity.has_required);
    assert_int_equal(copy->affinity.required_count, 0);
    struct node *node = node_yaml("metadata: {name: n}\n");
    assert_false(pod_matches_node_selector_and_affinity(copy, node));
    node_free(node);
    pod_free(pod);
    pod_free(copy);
}

static void node_with_taints_labels_and_extended_resources_round_trips(void **state)
{
    (void)state;
    struct node *node = node_yaml(full_node_yaml);
    struct node *copy = node_round_trip(node);
    assert_node_equal(node, copy);
    assert_true(copy->unschedulable);
    assert_int_equal(copy->taint_count, 3);
    assert_int_equal(copy->taints[1].effect, KC_TAINT_PREFER_NO_SCHEDULE);
    assert_string_equal(copy->taints[1].value, "");
    assert_int_equal(res_list_get(&copy->allocatable, resource_lookup("example.com/fpga")), 2);
    assert_int_equal(res_list_get(&copy->allocatable, resource_lookup("nvidia.com/gpu")), 8);
    assert_string_equal(kv_list_get(&copy->labels, "accelerator"), "h100");
    node_free(node);
    node_free(copy);
}

static void node_without_uid_is_known_by_its_name(void **state)
{
    (void)state;
    Kcycle__V1__Node msg = KCYCLE__V1__NODE__INIT;
    msg.name = "bare";
    struct node *node = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(node_from_proto(&msg, &node, &err), 0);
    assert_string_equal(node->uid, "bare");
    node_free(node);
}

/* Ids are per process: the receiver interns names it has never seen. */
static void resources_travel_by_name_and_are_interned_on_arrival(void **state)
{
    (void)state;
    const char *fresh = "example.com/never-seen-before";
    assert_int_equal(resource_lookup(fresh), -1);
    Kcycle__V1__ResourceAmount amount = KCYCLE__V1__RESOURCE_AMOUNT__INIT;
    amount.name = (char *)fresh;
    amount.value = 3;
    Kcycle__V1__ResourceAmount *amounts[] = {&amount};
    Kcycle__V1__Node msg = KCYCLE__V1__NODE__INIT;
    msg.name = "n1";
    msg.n_allocatable = 1;
    msg.allocatable = amounts;
    struct node *node = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(node_from_proto(&msg, &node, &err), 0);
    kc_resource id = resource_lookup(fresh);
    assert_true(id >= 4);
    assert_int_equal(res_list_get(&node->allocatable, id), 3);

    Kcycle__V1__Node *encoded = node_to_proto(node);
    assert_non_null(encoded);
    assert_int_equal(encoded->n_allocatable, 1);
    assert_string_equal(encoded->allocatable[0]->name, fresh);
    node_proto_free(encoded);
    node_free(node);
}

static void labels_in_any_order_arrive_sorted(void **state)
{
    (void)state;
    Kcycle__V1__Label z = KCYCLE__V1__LABEL__INIT, a = KCYCLE__V1__LABEL__INIT,
                      m = KCYCLE__V1__LABEL__INIT;
    z.key = "zone";
    z.value = "b";
    a.key = "app";
    a.value = "web";
    m.key = "mode";
    Kcycle__V1__Label *labels[] = {&z, &a, &m};
    Kcycle__V1__Pod msg = KCYCLE__V1__POD__INIT;
    msg.name = "p";
    msg.n_labels = 3;
    msg.labels = labels;
    struct pod *pod = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(pod_from_proto(&msg, &pod, &err), 0);
    assert_int_equal(pod->labels.count, 3);
    assert_string_equal(pod->labels.items[0].key, "app");
    assert_string_equal(pod->labels.items[1].key, "mode");
    assert_string_equal(pod->labels.items[2].key, "zone");
    assert_string_equal(kv_list_get(&pod->labels, "zone"), "b");
    assert_string_equal(kv_list_get(&pod->labels, "mode"), "");
    pod_free(pod);
}

static void custom_object_round_trips(void **state)
{
    (void)state;
    struct sim_object object = {.kind = "PodGroup",
                                .namespace = "ml",
                                .name = "gang-a",
                                .json = "{\"spec\":{\"minMember\":4}}"};
    Kcycle__V1__CustomObject *msg = custom_object_to_proto(&object);
    assert_non_null(msg);
    uint8_t buf[256];
    size_t len = kcycle__v1__custom_object__pack(msg, buf);
    custom_object_proto_free(msg);
    Kcycle__V1__CustomObject *unpacked = kcycle__v1__custom_object__unpack(NULL, len, buf);
    assert_non_null(unpacked);
    struct sim_object copy;
    struct kc_error err = {{0}};
    assert_int_equal(custom_object_from_proto(unpacked, &copy, &err), 0);
    kcycle__v1__custom_object__free_unpacked(unpacked, NULL);
    assert_string_equal(copy.kind, "PodGroup");
    assert_string_equal(copy.namespace, "ml");
    assert_string_equal(copy.name, "gang-a");
    assert_string_equal(copy.json, object.json);
    custom_object_clear(&copy);

    /* Cluster-scoped objects have no namespace on either side. */
    Kcycle__V1__CustomObject cluster = KCYCLE__V1__CUSTOM_OBJECT__INIT;
    cluster.kind = "NodeResourceTopology";
    cluster.name = "gpu-node-3";
    cluster.json = "{}";
    assert_int_equal(custom_object_from_proto(&cluster, &copy, &err), 0);
    assert_null(copy.namespace);
    custom_object_clear(&copy);
    cluster.kind = "";
    assert_int_equal(custom_object_from_proto(&cluster, &copy, &err), -EINVAL);
    assert_non_null(strstr(err.message, "kind"));
    assert_null(copy.kind);
}

/* ---- bad input --------------------------------------------------------------------------- */

static void truncated_and_garbage_buffers_are_rejected(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(full_pod_yaml);
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(pod_to_proto_bytes(pod, &bytes, &len), 0);
    pod_free(pod);

    /* The last field is cut inside its length-delimited body: no decoder can accept that. */
    struct pod *copy = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(pod_from_proto_bytes(bytes, len - 1, &copy, &err), -EBADMSG);
    assert_null(copy);
    assert_non_null(strstr(err.message, "pod"));
    assert_non_null(strstr(err.message, "truncated"));

    /* Every cut either fails cleanly or lands on a field boundary and yields a valid pod
     * (protobuf has no end marker; the transport frames messages). Valgrind checks for leaks. */
    size_t rejected = 0;
    for (size_t cut = 0; cut < len; cut++) {
        int rc = pod_from_proto_bytes(bytes, cut, &copy, &err);
        if (rc == 0) {
            assert_non_null(copy);
            pod_free(copy);
            continue;
        }
        assert_null(copy);
        assert_true(rc == -EBADMSG || rc == -EINVAL);
        rejected++;
    }
    assert_true(rejected > len / 2);
    free(bytes);

    /* Wire type 7 does not exist; a length running past the end is also garbage. */
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x17, 0x42, 0x00};
    assert_int_equal(pod_from_proto_bytes(garbage, sizeof(garbage), &copy, &err), -EBADMSG);
    assert_null(copy);
    static const uint8_t overlong[] = {0x12, 0x7f, 'a', 'b'};
    struct node *node = NULL;
    assert_int_equal(node_from_proto_bytes(overlong, sizeof(overlong), &node, &err), -EBADMSG);
    assert_null(node);
    assert_non_null(strstr(err.message, "node"));
    /* An empty buffer is a message with every field default: it has no name. */
    assert_int_equal(pod_from_proto_bytes(NULL, 0, &copy, &err), -EINVAL);
    assert_non_null(strstr(err.message, "name: is required"));
}

/* Pack msg and decode it as a pod, expecting failure; returns the error text. */
static void expect_pod_error(const Kcycle__V1__Pod *msg, int code, const char *needle)
{
    uint8_t buf[4096];
    assert_true(kcycle__v1__pod__get_packed_size(msg) <= sizeof(buf));
    size_t len = kcycle__v1__pod__pack(msg, buf);
    struct pod *pod = NULL;
    struct kc_error err = {{0}};
    int rc = pod_from_proto_bytes(buf, len, &pod, &err);
    if (rc != code || strstr(err.message, needle) == NULL)
        print_error("rc %d, message \"%s\", expected %d and \"%s\"\n", rc, err.message, code,
                    needle);
    assert_int_equal(rc, code);
    assert_null(pod);
    assert_non_null(strstr(err.message, needle));
}

static void enum_out_of_range_is_rejected_naming_the_field(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(full_pod_yaml);
    Kcycle__V1__Pod *msg = pod_to_proto(pod);
    assert_non_null(msg);

    msg->phase = (Kcycle__V1__PodPhase)9;
    expect_pod_error(msg, -EINVAL, "pod ml/trainer-0: phase: 9 is not a kcycle.v1.PodPhase");
    msg->phase = KCYCLE__V1__POD_PHASE__POD_PHASE_RUNNING;

    Kcycle__V1__SelectorRequirement *req = msg->affinity->required[0]->expressions[1];
    req->operator_ = (Kcycle__V1__SelectorOperator)42;
    expect_pod_error(msg, -EINVAL, "affinity.required[0].expressions[1].operator: 42");
    req->operator_ = KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;

    msg->tolerations[2]->effect = (Kcycle__V1__TaintEffect)-1;
    expect_pod_error(msg, -EINVAL, "tolerations[2].effect: -1 is not");
    msg->tolerations[2]->effect = KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED;

    msg->affinity->preferred[1]->weight = 101;
    expect_pod_error(msg, -EINVAL, "affinity.preferred[1].weight: 101 is out of range");
    pod_proto_free(msg);
    pod_free(pod);

    struct node *node = node_yaml(full_node_yaml);
    Kcycle__V1__Node *node_msg = node_to_proto(node);
    assert_non_null(node_msg);
    node_msg->taints[1]->effect = (Kcycle__V1__TaintEffect)7;
    uint8_t buf[1024];
    size_t len = kcycle__v1__node__pack(node_msg, buf);
    struct node *copy = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(node_from_proto_bytes(buf, len, &copy, &err), -EINVAL);
    assert_null(copy);
    assert_non_null(strstr(err.message, "node gpu-node-3: taints[1].effect: 7"));
    /* A taint must say what it does; only tolerations may leave the effect open. */
    node_msg->taints[1]->effect = KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED;
    len = kcycle__v1__node__pack(node_msg, buf);
    assert_int_equal(node_from_proto_bytes(buf, len, &copy, &err), -EINVAL);
    assert_non_null(strstr(err.message, "taints[1].effect: is required"));
    node_proto_free(node_msg);
    node_free(node);
}

static void missing_names_are_rejected(void **state)
{
    (void)state;
    Kcycle__V1__Pod msg = KCYCLE__V1__POD__INIT;
    msg.namespace_ = "team-a";
    expect_pod_error(&msg, -EINVAL, "pod team-a/(unnamed): name: is required");

    Kcycle__V1__Node node_msg = KCYCLE__V1__NODE__INIT;
    struct node *node = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(node_from_proto(&node_msg, &node, &err), -EINVAL);
    assert_null(node);
    assert_non_null(strstr(err.message, "node (unnamed): name: is required"));

    msg.name = "gated";
    char *gates[] = {"kcycle.io/quota", ""};
    msg.n_scheduling_gates = 2;
    msg.scheduling_gates = gates;
    expect_pod_error(&msg, -EINVAL, "pod team-a/gated: scheduling_gates[1]: name must not");
}

static void bad_resources_are_rejected_naming_the_container(void **state)
{
    (void)state;
    Kcycle__V1__ResourceAmount cpu = KCYCLE__V1__RESOURCE_AMOUNT__INIT;
    cpu.name = "cpu";
    cpu.value = 500;
    Kcycle__V1__ResourceAmount bad = KCYCLE__V1__RESOURCE_AMOUNT__INIT;
    bad.value = 1;
    Kcycle__V1__ResourceAmount *amounts[] = {&cpu, &bad};
    Kcycle__V1__Container c0 = KCYCLE__V1__CONTAINER__INIT, c1 = KCYCLE__V1__CONTAINER__INIT;
    c0.name = "ok";
    c1.name = "broken";
    c1.n_requests = 2;
    c1.requests = amounts;
    Kcycle__V1__Container *containers[] = {&c0, &c1};
    Kcycle__V1__Pod msg = KCYCLE__V1__POD__INIT;
    msg.name = "p";
    msg.n_containers = 2;
    msg.containers = containers;

    expect_pod_error(&msg, -EINVAL, "pod default/p: containers[1].requests[1]: resource name");
    bad.name = "cpu";
    expect_pod_error(&msg, -EINVAL, "containers[1].requests: resource \"cpu\" appears more");
    bad.name = "memory";
    bad.value = -5;
    expect_pod_error(&msg, -EINVAL, "containers[1].requests[1]: memory must not be negative");
    /* the same paths for limits, init containers, a missing entry and the overhead */
    c1.n_requests = 0;
    c1.n_limits = 2;
    c1.limits = amounts;
    expect_pod_error(&msg, -EINVAL, "containers[1].limits[1]: memory must not be negative");
    msg.n_containers = 0;
    msg.n_init_containers = 2;
    msg.init_containers = containers;
    expect_pod_error(&msg, -EINVAL, "init_containers[1].limits[1]: memory must not be negative");
    Kcycle__V1__ResourceAmount *holes[] = {&cpu, NULL}; /* hand-built: it does not pack */
    c1.limits = holes;
    struct pod *holed = NULL;
    struct kc_error hole_err = {{0}};
    assert_int_equal(pod_from_proto(&msg, &holed, &hole_err), -EINVAL);
    assert_non_null(strstr(hole_err.message, "init_containers[1].limits[1]: entry is missing"));
    assert_null(holed);
    msg.n_init_containers = 0;
    msg.n_overhead = 2;
    msg.overhead = amounts;
    expect_pod_error(&msg, -EINVAL, "pod default/p: overhead[1]: memory must not be negative");
    msg.n_overhead = 0;
    msg.n_containers = 2;
    c1.n_limits = 0;
    c1.n_requests = 2;

    /* A zero amount means none, as in the model's lists. */
    bad.value = 0;
    struct pod *pod = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(pod_from_proto(&msg, &pod, &err), 0);
    assert_int_equal(pod->containers[1].requests.count, 1);
    assert_int_equal(res_list_get(&pod->request, KC_RESOURCE_CPU), 500);
    pod_free(pod);
}

static void duplicate_label_keys_are_rejected(void **state)
{
    (void)state;
    Kcycle__V1__Label a = KCYCLE__V1__LABEL__INIT, b = KCYCLE__V1__LABEL__INIT;
    a.key = "zone";
    a.value = "a";
    b.key = "zone";
    b.value = "b";
    Kcycle__V1__Label *labels[] = {&a, &b};
    Kcycle__V1__Pod msg = KCYCLE__V1__POD__INIT;
    msg.name = "p";
    msg.n_node_selector = 2;
    msg.node_selector = labels;
    expect_pod_error(&msg, -EINVAL, "node_selector: key \"zone\" appears more than once");
}

static void hand_built_messages_with_holes_are_errors(void **state)
{
    (void)state;
    Kcycle__V1__Toleration *tolerations[] = {NULL};
    Kcycle__V1__Pod msg = KCYCLE__V1__POD__INIT;
    msg.name = "p";
    msg.n_tolerations = 1;
    msg.tolerations = tolerations;
    struct pod *pod = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(pod_from_proto(&msg, &pod, &err), -EINVAL);
    assert_non_null(strstr(err.message, "tolerations[0]: entry is missing"));
    msg.tolerations = NULL;
    assert_int_equal(pod_from_proto(&msg, &pod, &err), -EINVAL);
    assert_non_null(strstr(err.message, "tolerations: 1 entries claimed"));
    assert_int_equal(pod_from_proto(NULL, &pod, &err), -EINVAL);
    assert_null(pod);
}

static void objects_the_wire_cannot_carry_are_refused_by_the_encoder(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("metadata: {name: p}\n");
    pod->phase = (enum pod_phase)17;
    errno = 0;
    assert_null(pod_to_proto(pod));
    assert_int_equal(errno, EINVAL);
    pod->phase = POD_PENDING;
    /* An id nobody interned has no name to send. */
    assert_int_equal(res_list_set(&pod->overhead, KC_RESOURCE_MAX - 1, 5), 0);
    uint8_t *bytes = (uint8_t *)"unchanged";
    size_t len = 99;
    assert_int_equal(pod_to_proto_bytes(pod, &bytes, &len), -EINVAL);
    assert_null(bytes);
    assert_int_equal(len, 0);
    pod_free(pod);

    struct node *node = node_yaml("metadata: {name: n}\n");
    assert_int_equal(res_list_set(&node->allocatable, KC_RESOURCE_MAX - 1, 5), 0);
    errno = 0;
    assert_null(node_to_proto(node));
    assert_int_equal(errno, EINVAL);
    node_free(node);
}

/* Enough labels and containers to need several arena chunks and a block of its own. */
static void large_pods_round_trip(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml("metadata: {name: big}\n");
    char key[32], value[32];
    for (int i = 0; i < 600; i++) {
        snprintf(key, sizeof(key), "key-%04d", 599 - i);
        snprintf(value, sizeof(value), "value-%d", i);
        assert_int_equal(kv_list_set(&pod->labels, key, value), 0);
        assert_int_equal(kv_list_set(&pod->annotations, value, key), 0);
    }
    struct pod *copy = pod_round_trip(pod);
    assert_pod_equal(pod, copy);
    pod_free(pod);
    pod_free(copy);
}

/* Pod-level constraints (podtopologyspread, interpodaffinity) reach a plugin host as the kube
 * JSON the model keeps; a pod without them has none on either side. */
static void pod_constraints_json_round_trips(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(
        "metadata: {name: web, labels: {app: web}}\n"
        "spec:\n"
        "  topologySpreadConstraints:\n"
        "    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,\n"
        "       labelSelector: {matchLabels: {app: web}}}\n"
        "  affinity:\n"
        "    nodeAffinity: {}\n"
        "    podAntiAffinity:\n"
        "      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}\n"
        "  containers: [{name: c}]\n");
    assert_non_null(pod->constraints_json);
    assert_string_equal(pod->constraints_json,
                        "{\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
                        "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":"
                        "{\"app\":\"web\"}}}],\"podAntiAffinity\":{\"requiredDuringScheduling"
                        "IgnoredDuringExecution\":[{\"topologyKey\":\"kubernetes.io/hostname\","
                        "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]}}");
    struct pod *copy = pod_round_trip(pod);
    assert_string_equal(copy->constraints_json, pod->constraints_json);
    pod_free(copy);
    pod_free(pod);
    struct pod *plain = pod_yaml("metadata: {name: plain}\nspec: {containers: [{name: c}]}\n");
    assert_null(plain->constraints_json);
    copy = pod_round_trip(plain);
    assert_null(copy->constraints_json);
    pod_free(copy);
    pod_free(plain);
}

/* The controller owner reference (podtopologyspread's default selector) is read from
 * metadata.ownerReferences (the entry with controller: true, not the first) and travels. */
static void pod_controller_round_trips(void **state)
{
    (void)state;
    struct pod *pod = pod_yaml(
        "metadata:\n"
        "  name: web-7d9c\n"
        "  ownerReferences:\n"
        "    - {apiVersion: v1, kind: ConfigMap, name: cm, uid: u0}\n"
        "    - {apiVersion: apps/v1, kind: ReplicaSet, name: web-7d, uid: u1, controller: true}\n"
        "spec: {containers: [{name: c}]}\n");
    assert_string_equal(pod->controller_api_version, "apps/v1");
    assert_string_equal(pod->controller_kind, "ReplicaSet");
    assert_string_equal(pod->controller_name, "web-7d");
    struct pod *copy = pod_round_trip(pod);
    assert_string_equal(copy->controller_api_version, "apps/v1");
    assert_string_equal(copy->controller_kind, "ReplicaSet");
    assert_string_equal(copy->controller_name, "web-7d");
    pod_free(copy);
    pod_free(pod);
    struct pod *orphan = pod_yaml("metadata:\n  name: o\n  ownerReferences:\n"
                                  "    - {apiVersion: v1, kind: Node, name: n, uid: u}\n"
                                  "spec: {containers: [{name: c}]}\n");
    assert_null(orphan->controller_kind);
    copy = pod_round_trip(orphan);
    assert_null(copy->controller_kind);
    pod_free(copy);
    pod_free(orphan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod_with_every_field_round_trips),
        cmocka_unit_test(a_decoded_pod_given_its_node_name_is_the_decoded_assigned_pod),
        cmocka_unit_test(pod_with_only_a_name_round_trips_with_defaults),
        cmocka_unit_test(host_ports_and_used_fields_round_trip),
        cmocka_unit_test(pod_volumes_round_trip),
        cmocka_unit_test(pod_constraints_json_round_trips),
        cmocka_unit_test(pod_controller_round_trips),
        cmocka_unit_test(required_affinity_without_terms_survives),
        cmocka_unit_test(node_with_taints_labels_and_extended_resources_round_trips),
        cmocka_unit_test(node_without_uid_is_known_by_its_name),
        cmocka_unit_test(resources_travel_by_name_and_are_interned_on_arrival),
        cmocka_unit_test(labels_in_any_order_arrive_sorted),
        cmocka_unit_test(custom_object_round_trips),
        cmocka_unit_test(truncated_and_garbage_buffers_are_rejected),
        cmocka_unit_test(enum_out_of_range_is_rejected_naming_the_field),
        cmocka_unit_test(missing_names_are_rejected),
        cmocka_unit_test(bad_resources_are_rejected_naming_the_container),
        cmocka_unit_test(duplicate_label_keys_are_rejected),
        cmocka_unit_test(hand_built_messages_with_holes_are_errors),
        cmocka_unit_test(objects_the_wire_cannot_carry_are_refused_by_the_encoder),
        cmocka_unit_test(large_pods_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
