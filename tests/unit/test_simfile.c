/* Unit tests of the simulation file: expansion of counts, arrival order, defaults, both shapes,
 * and the position each error names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model.h"
#include "resource_table.h"
#include "simfile.h"

#define GI (1024LL * 1024 * 1024)

static char dir[64];
static char path[128];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/kcycle-simfile-XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int remove_dir(void **state)
{
    (void)state;
    const char *names[] = {"sim.yaml", "sim.json", "bad.yaml"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
    return rmdir(dir);
}

/* Write text to <dir>/<name> and load it. */
static int load_text(const char *name, const char *text, const char *scheduler_name,
                     struct sim_spec *spec, struct kc_error *err)
{
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    memset(err, 0, sizeof(*err));
    return simfile_load(path, scheduler_name, spec, err);
}

static void load_ok(const char *text, const char *scheduler_name, struct sim_spec *spec)
{
    struct kc_error err;
    int rc = load_text("sim.yaml", text, scheduler_name, spec, &err);
    if (rc != 0)
        fail_msg("load failed: %s", err.message);
}

static void assert_contains(const char *text, const char *part)
{
    if (strstr(text, part) == NULL)
        fail_msg("\"%s\" does not contain \"%s\"", text, part);
}

/* ---- expansion and defaults --------------------------------------------------------------- */

static void nodes_expand_counts_and_default_pod_capacity(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("nodes:\n"
            "- name: cpu\n"
            "  count: 3\n"
            "  allocatable: {cpu: 4, memory: 32Gi}\n"
            "  labels: {zone: a}\n"
            "- name: gpu\n"
            "  allocatable: {cpu: 32, memory: 256Gi, pods: 20, nvidia.com/gpu: 8}\n"
            "  taints: [{key: gpu, value: \"true\", effect: NoSchedule}]\n"
            "  unschedulable: true\n"
            "- metadata: {name: real, labels: {kind: kube}}\n"
            "  status: {capacity: {cpu: 2, memory: 4Gi}}\n",
            "kcycle", &spec);
    assert_int_equal(spec.node_count, 5);
    const char *names[] = {"cpu-0", "cpu-1", "cpu-2", "gpu", "real"};
    for (uint32_t i = 0; i < 5; i++)
        assert_string_equal(spec.nodes[i]->name, names[i]);
    const struct node *cpu = spec.nodes[1];
    assert_string_equal(cpu->uid, "cpu-1");
    assert_string_equal(kv_list_get(&cpu->labels, "zone"), "a");
    assert_int_equal(res_list_get(&cpu->allocatable, KC_RESOURCE_CPU), 4000);
    assert_int_equal(res_list_get(&cpu->allocatable, KC_RESOURCE_MEMORY), 32 * GI);
    assert_int_equal(res_list_get(&cpu->allocatable, KC_RESOURCE_PODS), 110);
    const struct node *gpu = spec.nodes[3];
    assert_int_equal(res_list_get(&gpu->allocatable, KC_RESOURCE_PODS), 20);
    assert_int_equal(res_list_get(&gpu->allocatable, resource_intern("nvidia.com/gpu")), 8);
    assert_true(gpu->unschedulable);
    assert_int_equal(gpu->taint_count, 1);
    assert_string_equal(gpu->taints[0].value, "true");
    const struct node *real = spec.nodes[4];
    assert_int_equal(res_list_get(&real->allocatable, KC_RESOURCE_CPU), 2000);
    assert_int_equal(res_list_get(&real->allocatable, KC_RESOURCE_PODS), 110);
    assert_string_equal(kv_list_get(&real->labels, "kind"), "kube");
    assert_int_equal(spec.pod_count, 0);
    assert_int_equal(spec.arrival_count, 0);
    assert_false(spec.has_config);
    simfile_free(&spec);
}

static void workload_expands_and_sorts_arrivals_stably(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("nodes: [{name: n, allocatable: {cpu: 4}}]\n"
            "workload:\n"
            "- name: late\n"
            "  count: 3\n"
            "  at: 2s\n"
            "  interval: 500ms\n"
            "  requests: {cpu: 100m}\n"
            "- name: early\n"
            "  count: 2\n"
            "  interval: 1s\n"
            "  requests: {cpu: 1}\n"
            "- name: solo\n"
            "  at: 1s\n"
            "  limits: {cpu: 2, memory: 1Gi}\n"
            "- name: none\n"
            "  count: 0\n",
            "kcycle-test", &spec);
    const char *names[] = {"early-0", "early-1", "solo", "late-0", "late-1", "late-2"};
    const int64_t at[] = {0, 1000, 1000, 2000, 2500, 3000};
    assert_int_equal(spec.arrival_count, 6);
    for (uint32_t i = 0; i < 6; i++) {
        const struct pod *pod = spec.arrivals[i].pod;
        assert_string_equal(pod->name, names[i]);
        assert_int_equal(spec.arrivals[i].at_ms, at[i]);
        assert_string_equal(pod->namespace, "default");
        assert_string_equal(pod->scheduler_name, "kcycle-test");
        assert_null(pod->node_name);
    }
    const struct pod *solo = spec.arrivals[2].pod;
    assert_string_equal(solo->uid, "default/solo");
    assert_int_equal(solo->container_count, 1);
    assert_string_equal(solo->containers[0].name, "main");
    assert_int_equal(res_list_get(&solo->containers[0].limits, KC_RESOURCE_CPU), 2000);
    assert_int_equal(res_list_get(&solo->request, KC_RESOURCE_CPU), 2000);
    assert_int_equal(res_list_get(&solo->request, KC_RESOURCE_MEMORY), GI);
    assert_string_equal(spec.arrivals[4].pod->uid, "default/late-1");
    assert_int_equal(res_list_get(&spec.arrivals[4].pod->request, KC_RESOURCE_CPU), 100);
    simfile_free(&spec);
}

static void pods_take_scheduler_name_unless_they_name_one(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("nodes: [{name: n, allocatable: {cpu: 4}}]\n"
            "pods:\n"
            "- name: bound\n"
            "  namespace: team\n"
            "  nodeName: n\n"
            "  requests: {cpu: 1, memory: 1Gi}\n"
            "  labels: {app: db}\n"
            "- name: other\n"
            "  schedulerName: default-scheduler\n"
            "- metadata: {name: kube, namespace: team}\n"
            "  spec:\n"
            "    priority: 7\n"
            "    containers: [{name: c, resources: {requests: {cpu: 300m}}}]\n"
            "- metadata: {name: kube2}\n"
            "  spec: {schedulerName: default-scheduler}\n",
            "kcycle", &spec);
    assert_int_equal(spec.pod_count, 4);
    const struct pod *bound = spec.pods[0];
    assert_string_equal(bound->namespace, "team");
    assert_string_equal(bound->uid, "team/bound");
    assert_string_equal(bound->node_name, "n");
    assert_string_equal(bound->scheduler_name, "kcycle");
    assert_string_equal(kv_list_get(&bound->labels, "app"), "db");
    assert_int_equal(res_list_get(&bound->request, KC_RESOURCE_MEMORY), GI);
    assert_string_equal(spec.pods[1]->scheduler_name, "default-scheduler");
    assert_string_equal(spec.pods[2]->scheduler_name, "kcycle");
    assert_int_equal(spec.pods[2]->priority, 7);
    assert_int_equal(res_list_get(&spec.pods[2]->request, KC_RESOURCE_CPU), 300);
    assert_string_equal(spec.pods[3]->scheduler_name, "default-scheduler");
    simfile_free(&spec);
}

static void same_name_in_two_namespaces_is_fine(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("pods:\n"
            "- {name: p, namespace: a}\n"
            "workload:\n"
            "- {name: p, namespace: b}\n",
            "kcycle", &spec);
    assert_int_equal(spec.pod_count, 1);
    assert_int_equal(spec.arrival_count, 1);
    simfile_free(&spec);
}

static void config_section_names_the_scheduler(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("config: {schedulerName: from-config}\n"
            "workload: [{name: w, requests: {cpu: 1}}]\n",
            "from-argument", &spec);
    assert_true(spec.has_config);
    assert_string_equal(spec.config.scheduler_name, "from-config");
    assert_string_equal(spec.arrivals[0].pod->scheduler_name, "from-config");
    simfile_free(&spec);

    load_ok("config: {percentageOfNodesToScore: 50}\n"
            "workload: [{name: w}]\n",
            "from-argument", &spec);
    assert_true(spec.has_config);
    assert_int_equal(spec.config.percentage_of_nodes_to_score, 50);
    assert_string_equal(spec.arrivals[0].pod->scheduler_name, "from-argument");
    simfile_free(&spec);

    load_ok("workload: [{name: w}]\n", NULL, &spec);
    assert_false(spec.has_config);
    assert_string_equal(spec.arrivals[0].pod->scheduler_name, spec.config.scheduler_name);
    simfile_free(&spec);
}

static void kube_template_gets_indexed_names_and_uids(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("workload:\n"
            "- count: 2\n"
            "  at: 1.5s\n"
            "  apiVersion: v1\n"
            "  kind: Pod\n"
            "  metadata: {name: api, namespace: web, uid: u}\n"
            "  spec:\n"
            "    schedulerName: kcycle\n"
            "    initContainers:\n"
            "    - {name: proxy, restartPolicy: Always, resources: {requests: {cpu: 100m}}}\n"
            "    - {name: migrate, resources: {requests: {cpu: 1}}}\n"
            "    containers:\n"
            "    - {name: app, image: nginx, resources: {requests: {cpu: 500m}}}\n"
            "- metadata: {name: plain}\n",
            "other", &spec);
    assert_int_equal(spec.arrival_count, 3);
    assert_string_equal(spec.arrivals[0].pod->name, "plain");
    assert_int_equal(spec.arrivals[0].at_ms, 0);
    assert_string_equal(spec.arrivals[0].pod->scheduler_name, "other");
    for (uint32_t i = 1; i < 3; i++) {
        const struct pod *pod = spec.arrivals[i].pod;
        char name[16], uid[16];
        snprintf(name, sizeof(name), "api-%u", i - 1);
        snprintf(uid, sizeof(uid), "u-%u", i - 1);
        assert_string_equal(pod->name, name);
        assert_string_equal(pod->uid, uid);
        assert_string_equal(pod->scheduler_name, "kcycle");
        assert_int_equal(spec.arrivals[i].at_ms, 1500);
        /* the init container runs next to the sidecar: 1100m beats 600m */
        assert_int_equal(res_list_get(&pod->request, KC_RESOURCE_CPU), 1100);
    }
    simfile_free(&spec);
}

static void objects_are_kept_as_json(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("objects:\n"
            "- apiVersion: scheduling.x-k8s.io/v1alpha1\n"
            "  kind: PodGroup\n"
            "  metadata: {name: gang, namespace: team}\n"
            "  spec: {minMember: 3}\n"
            "- kind: CapacityQueue\n"
            "  metadata: {name: root}\n",
            "kcycle", &spec);
    assert_int_equal(spec.object_count, 2);
    assert_string_equal(spec.objects[0].kind, "PodGroup");
    assert_string_equal(spec.objects[0].namespace, "team");
    assert_string_equal(spec.objects[0].name, "gang");
    assert_contains(spec.objects[0].json, "\"minMember\":3");
    assert_contains(spec.objects[0].json, "\"kind\":\"PodGroup\"");
    assert_null(spec.objects[1].namespace);
    assert_string_equal(spec.objects[1].name, "root");
    simfile_free(&spec);
}

static const struct sim_object *object_named(const struct sim_spec *spec, const char *name)
{
    for (uint32_t i = 0; i < spec->object_count; i++)
        if (strcmp(spec->objects[i].name, name) == 0)
            return &spec->objects[i];
    fail_msg("no object %s", name);
    return NULL;
}

static void capacity_queues_become_capacityqueue_objects(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("capacityQueues:\n"
            "- {name: org, guaranteed: {cpu: 8}}\n"
            "- {name: team, parent: org, limit: {cpu: 4, nvidia.com/gpu: 2}, weight: 2}\n"
            "- apiVersion: scheduling.kcycle.io/v1alpha1\n"
            "  kind: CapacityQueue\n"
            "  metadata: {name: whole}\n"
            "  spec: {reclaimable: false}\n",
            "kcycle", &spec);
    assert_int_equal(spec.object_count, 3);
    const struct sim_object *o = object_named(&spec, "team");
    assert_string_equal(o->kind, "CapacityQueue");
    assert_null(o->namespace);
    assert_string_equal(o->json, "{\"apiVersion\":\"scheduling.kcycle.io/v1alpha1\",\"kind\":"
                                 "\"CapacityQueue\",\"metadata\":{\"name\":\"team\"},\"spec\":"
                                 "{\"parent\":\"org\",\"limit\":{\"cpu\":4,\"nvidia.com/gpu\":2},"
                                 "\"weight\":2}}");
    assert_contains(object_named(&spec, "whole")->json, "\"reclaimable\":false");
    simfile_free(&spec);
}

static void pod_groups_and_gang_workloads_become_podgroups(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("podGroups:\n"
            "- name: train\n"
            "  namespace: ml\n"
            "  minMember: 4\n"
            "  minResources: {cpu: 8, nvidia.com/gpu: 4}\n"
            "  scheduleTimeoutSeconds: 30\n"
            "  annotations: {kcycle.io/group-cycle: \"false\"}\n"
            "- apiVersion: scheduling.x-k8s.io/v1alpha1\n"
            "  kind: PodGroup\n"
            "  metadata: {name: nginx, namespace: default}\n"
            "  spec: {minMember: 3}\n"
            "workload:\n"
            "- name: job\n"
            "  namespace: ml\n"
            "  count: 3\n"
            "  gang: true\n"
            "  requests: {cpu: 1}\n"
            "- name: big\n"
            "  count: 5\n"
            "  gang: {minMember: 4, scheduleTimeoutSeconds: 10}\n"
            "- name: plain\n"
            "  count: 2\n"
            "  gang: false\n",
            "kcycle", &spec);
    assert_int_equal(spec.object_count, 4);
    const struct sim_object *o = object_named(&spec, "train");
    assert_string_equal(o->kind, "PodGroup");
    assert_string_equal(o->namespace, "ml");
    assert_string_equal(o->json,
                        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
                        "\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\",\"annotations\":"
                        "{\"kcycle.io/group-cycle\":\"false\"}},\"spec\":{"
                        "\"scheduleTimeoutSeconds\":30,\"minMember\":4,\"minResources\":"
                        "{\"cpu\":\"8\",\"nvidia.com/gpu\":\"4\"}}}");
    assert_contains(object_named(&spec, "nginx")->json, "\"minMember\":3");
    /* gang: true is a PodGroup of all count pods, named after the entry */
    o = object_named(&spec, "job");
    assert_string_equal(o->namespace, "ml");
    assert_contains(o->json, "\"minMember\":3");
    assert_contains(object_named(&spec, "big")->json, "\"scheduleTimeoutSeconds\":10");
    assert_contains(object_named(&spec, "big")->json, "\"minMember\":4");
    assert_int_equal(spec.arrival_count, 10);
    for (uint32_t i = 0; i < spec.arrival_count; i++) {
        const struct pod *pod = spec.arrivals[i].pod;
        if (strncmp(pod->name, "plain", 5) == 0)
            assert_null(pod->pod_group);
        else
            assert_string_equal(pod->pod_group, strncmp(pod->name, "job", 3) == 0 ? "job" : "big");
    }
    simfile_free(&spec);
}

static void json_file_loads(void **state)
{
    (void)state;
    struct sim_spec spec;
    struct kc_error err;
    int rc = load_text("sim.json",
                       "{\"nodes\": [{\"name\": \"n\", \"count\": 2, \"allocatable\": "
                       "{\"cpu\": \"4\", \"memory\": \"8Gi\"}}],\n"
                       " \"workload\": [{\"name\": \"w\", \"count\": 2, \"interval\": \"1s\", "
                       "\"requests\": {\"cpu\": 0.5}}]}\n",
                       "kcycle", &spec, &err);
    if (rc != 0)
        fail_msg("%s", err.message);
    assert_int_equal(spec.node_count, 2);
    assert_int_equal(res_list_get(&spec.nodes[1]->allocatable, KC_RESOURCE_MEMORY), 8 * GI);
    assert_int_equal(spec.arrival_count, 2);
    assert_int_equal(spec.arrivals[1].at_ms, 1000);
    assert_int_equal(res_list_get(&spec.arrivals[1].pod->request, KC_RESOURCE_CPU), 500);
    simfile_free(&spec);
}

static void taken_arrivals_are_left_to_the_taker(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("workload: [{name: w, count: 3}]\n", "kcycle", &spec);
    struct pod *taken = spec.arrivals[1].pod;
    spec.arrivals[1].pod = NULL;
    simfile_free(&spec);
    assert_string_equal(taken->name, "w-1");
    pod_free(taken);
    assert_int_equal(spec.arrival_count, 0);
    assert_null(spec.arrivals);
}

/* numa/numaXml keep each node's topology for the simulator, xml paths resolved against the
 * file's folder; nodes without one have none. */
static void nodes_keep_their_numa_topology(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("nodes:\n"
            "- name: two\n  count: 2\n  numa: 'pack:2 numa:1 core:8 pu:2'\n"
            "  topologyManagerPolicy: restricted\n  topologyManagerScope: pod\n"
            "  reservedCpus: '0-1'\n"
            "- name: plain\n  allocatable: {cpu: 4}\n"
            "- name: box\n  numaXml: machines/box.xml\n",
            "kcycle", &spec);
    assert_int_equal(spec.node_count, 4);
    assert_int_equal(spec.topology_count, 3);
    assert_string_equal(spec.topologies[0].node, "two-0");
    assert_string_equal(spec.topologies[1].node, "two-1");
    assert_string_equal(spec.topologies[1].synthetic, "pack:2 numa:1 core:8 pu:2");
    assert_string_equal(spec.topologies[1].policy, "restricted");
    assert_string_equal(spec.topologies[1].scope, "pod");
    assert_string_equal(spec.topologies[1].reserved_cpus, "0-1");
    assert_string_equal(spec.topologies[2].node, "box");
    assert_null(spec.topologies[2].synthetic);
    assert_null(spec.topologies[2].policy);
    char want[256];
    snprintf(want, sizeof(want), "%s/machines/box.xml", dir);
    assert_string_equal(spec.topologies[2].xml, want);
    simfile_free(&spec);
}

static void shipped_examples_load(void **state)
{
    (void)state;
    const char *files[] = {"examples/sim/small.yaml", "examples/sim/small.json"};
    for (size_t f = 0; f < 2; f++) {
        struct sim_spec spec;
        struct kc_error err = {{0}};
        int rc = simfile_load(files[f], "kcycle", &spec, &err);
        if (rc != 0)
            fail_msg("%s", err.message);
        assert_true(spec.node_count >= 2);
        assert_true(spec.arrival_count >= 4);
        uint32_t too_big = 0;
        for (uint32_t i = 0; i < spec.arrival_count; i++) {
            if (i > 0)
                assert_true(spec.arrivals[i - 1].at_ms <= spec.arrivals[i].at_ms);
            if (res_list_get(&spec.arrivals[i].pod->request, KC_RESOURCE_CPU) >= 64000)
                too_big++;
        }
        assert_true(too_big >= 1);
        if (f == 0) {
            assert_int_equal(spec.node_count, 6);
            assert_int_equal(spec.arrival_count, 40);
            assert_int_equal(too_big, 2);
        }
        simfile_free(&spec);
    }
}

/* ---- errors ------------------------------------------------------------------------------- */

struct error_case {
    const char *text;
    const char *where; /* ":line:col" after the path, or NULL */
    const char *says;
    const char *also; /* a second part of the message, or NULL */
};

static const struct error_case error_cases[] = {
    {"nodes: []\nnodez: []\n", ":2:1", "nodez", NULL},
    {"workload:\n- name: w\n  cpus: 4\n", ":3:3", "cpus", NULL},
    {"pods:\n- name: p\n  count: 2\n", ":3:3", "count", NULL},
    {"nodes:\n- name: n\n  gpus: 8\n", ":3:3", "gpus", NULL},
    {"nodes:\n- name: n\n  allocatable: {cpu: lots}\n", ":3:22", "lots", NULL},
    {"nodes:\n- allocatable: {cpu: 1}\n", ":2:3", "name", NULL},
    {"nodes: {a: 1}\n", ":1:8", "list", NULL},
    {"nodes:\n- name: a\n- name: b\n  count: 2\n- name: b-1\n", ":5:3", "\"b-1\"", ":3:3"},
    {"pods:\n- name: p-1\n  namespace: x\nworkload:\n- name: p\n  namespace: x\n  count: 2\n",
     ":5:3", "\"x/p-1\"", ":2:3"},
    {"workload:\n- name: w\n- metadata: {name: w}\n", ":3:3", "\"default/w\"", ":2:3"},
    {"workload:\n- name: w\n  at: soon\n", ":3:7", "soon", NULL},
    {"workload:\n- name: w\n  interval: -1s\n", ":3:13", "interval", NULL},
    {"workload:\n- name: w\n  count: -1\n", ":3:10", "count", NULL},
    {"nodes:\n- name: n\npods:\n- name: p\n  nodeName: m\n", ":4:3", "\"m\"", NULL},
    {"workload:\n- name: w\n  requests: {cpu: 1}\n  containers: [{name: a}]\n", ":4:15",
     "containers", NULL},
    {"objects:\n- metadata: {name: g}\n", ":2:3", "kind", NULL},
    {"objects:\n- kind: PodGroup\n", ":2:3", "metadata", NULL},
    {"pods:\n- metadata: {name: p}\n  spec:\n    containers:\n    - name: a\n"
     "      resources: {requests: {memory: 1Q}}\n",
     ":6:38", "1Q", NULL},
    {"nodes:\n- name: n\n  taints: [{key: a, effect: Sometimes}]\n", ":3:", "Sometimes", NULL},
    {"workload:\n- name: w\n  tolerations: [{key: a, operator: Maybe}]\n", ":3:", "Maybe", NULL},
    {"config: {bogus: 1}\n", ":1:", "bogus", NULL},
    {"podGroups:\n- minMember: 2\n", ":2:3", "name", NULL},
    {"capacityQueues:\n- {parent: a}\n", ":2:3", "name is required", NULL},
    {"capacityQueues:\n- {name: a, wieght: 2}\n", ":2:13", "wieght", NULL},
    {"capacityQueues:\n- {kind: PodGroup, metadata: {name: q}}\n", ":2:10", "CapacityQueues",
     NULL},
    {"podGroups:\n- name: g\n  minMember: 0\n", ":3:14", "minMember", NULL},
    {"podGroups:\n- name: g\n  minMembers: 2\n", ":3:3", "minMembers", NULL},
    {"podGroups:\n- name: g\n  minResources: {cpu: lots}\n", ":3:23", "lots", NULL},
    {"podGroups:\n- name: g\n  scheduleTimeoutSeconds: -1\n", ":3:27", "negative", NULL},
    {"podGroups:\n- kind: Queue\n  metadata: {name: q}\n", ":2:9", "PodGroup", NULL},
    {"podGroups:\n- name: g\nworkload:\n- name: g\n  gang: true\n", ":4:3", "\"default/g\"",
     ":2:3"},
    {"workload:\n- name: w\n  gang: {minMember: 2, size: 3}\n", ":3:24", "size", NULL},
    {"workload:\n- name: w\n  gang: maybe\n", ":3:9", "maybe", NULL},
    {"- just\n- a list\n", ":1:", "map", NULL},
    {"nodes:\n- name: n\n  numa: 'numa:2'\n  numaXml: a.xml\n", ":2:3", "exclude", NULL},
    {"nodes:\n- name: n\n  numa: 'numa:2'\n  topologyManagerPolicy: strict\n", ":4:26",
     "strict", "single-numa-node"},
    {"nodes:\n- name: n\n  numa: 'numa:2'\n  topologyManagerScope: node\n", ":4:25", "node",
     NULL},
    {"nodes:\n- name: n\nnodeRemovals:\n- {at: 1s, node: m}\n", ":4:", "\"m\"", NULL},
    {"nodes:\n- name: n\nnodeRemovals:\n- {at: 1s}\n", ":4:3", "node or nodes", NULL},
    {"nodes:\n- name: n\nnodeRemovals:\n- {at: 1s, node: n, when: 2s}\n", ":4:", "when", NULL},
    {"nodes:\n- name: n\nnodeRemovals:\n- {at: soon, node: n}\n", ":4:", "soon", NULL},
};

/* nodeRemovals: one node or a list per entry, sorted by time, file order kept on ties. */
static void node_removals_are_sorted_by_time(void **state)
{
    (void)state;
    struct sim_spec spec;
    load_ok("nodes:\n- {name: n, count: 4}\nnodeRemovals:\n- {at: 2s, node: n-3}\n"
            "- {at: 1s, nodes: [n-1, n-0]}\n- {at: 2s, node: n-2}\n",
            NULL, &spec);
    assert_int_equal(spec.node_removal_count, 4);
    const char *order[] = {"n-1", "n-0", "n-3", "n-2"};
    const int64_t at[] = {1000, 1000, 2000, 2000};
    for (uint32_t i = 0; i < 4; i++) {
        assert_string_equal(spec.node_removals[i].node, order[i]);
        assert_int_equal(spec.node_removals[i].at_ms, at[i]);
    }
    simfile_free(&spec);
}

static void errors_name_file_line_and_column(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
        const struct error_case *c = &error_cases[i];
        struct sim_spec spec;
        struct kc_error err;
        int rc = load_text("bad.yaml", c->text, "kcycle", &spec, &err);
        if (rc == 0)
            fail_msg("case %zu loaded but should fail:\n%s", i, c->text);
        assert_null(spec.nodes);
        assert_null(spec.arrivals);
        char where[256];
        snprintf(where, sizeof(where), "%s%s", path, c->where);
        if (strstr(err.message, where) == NULL || strstr(err.message, c->says) == NULL ||
            (c->also != NULL && strstr(err.message, c->also) == NULL))
            fail_msg("case %zu: \"%s\" should name %s, %s%s%s", i, err.message, where, c->says,
                     c->also != NULL ? " and " : "", c->also != NULL ? c->also : "");
    }
}

static void missing_file_is_an_error(void **state)
{
    (void)state;
    struct sim_spec spec;
    struct kc_error err = {{0}};
    assert_true(simfile_load("/nonexistent/sim.yaml", "kcycle", &spec, &err) < 0);
    assert_contains(err.message, "/nonexistent/sim.yaml");
    simfile_free(&spec); /* harmless after a failed load */
}

/* A short file whose counts ask for tens of millions of objects is refused before anything is
 * built, naming the count that crosses the limit; a file within the limit loads whole. */
static void an_amplifying_file_is_refused_before_anything_is_built(void **state)
{
    (void)state;
    char text[4096];
    int at = snprintf(text, sizeof(text), "nodes:\n  - name: n\n    count: 1000000\n"
                                          "workload:\n");
    for (int i = 0; i < 40; i++)
        at += snprintf(text + at, sizeof(text) - (size_t)at,
                       "  - name: w%d\n    count: 1000000\n    requests: {cpu: 100m}\n", i);
    struct sim_spec spec;
    struct kc_error err;
    assert_int_equal(load_text("sim.yaml", text, "kcycle", &spec, &err), -E2BIG);
    /* the second template's count (line 9) is the one past 2,000,000 */
    assert_non_null(strstr(err.message, "sim.yaml:9:12"));
    assert_non_null(strstr(err.message, "2000000"));
    assert_non_null(strstr(err.message, "--max-objects"));
    assert_int_equal(spec.node_count, 0);
    assert_null(spec.nodes);

    const char *small = "nodes:\n  - name: n\n    count: 3\n"
                        "workload:\n  - name: w\n    count: 4\n    gang: true\n";
    memset(&err, 0, sizeof(err));
    assert_int_equal(simfile_load_limited(path, "kcycle", 8, &spec, &err), -E2BIG);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(small, f);
    fclose(f);
    memset(&err, 0, sizeof(err));
    assert_int_equal(simfile_load_limited(path, "kcycle", 7, &spec, &err), -E2BIG);
    assert_non_null(strstr(err.message, "sim.yaml:6:12"));
    memset(&err, 0, sizeof(err));
    assert_int_equal(simfile_load_limited(path, "kcycle", 8, &spec, &err), 0);
    assert_int_equal(spec.node_count, 3);
    assert_int_equal(spec.arrival_count, 4);
    simfile_free(&spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nodes_expand_counts_and_default_pod_capacity),
        cmocka_unit_test(nodes_keep_their_numa_topology),
        cmocka_unit_test(workload_expands_and_sorts_arrivals_stably),
        cmocka_unit_test(pods_take_scheduler_name_unless_they_name_one),
        cmocka_unit_test(same_name_in_two_namespaces_is_fine),
        cmocka_unit_test(config_section_names_the_scheduler),
        cmocka_unit_test(kube_template_gets_indexed_names_and_uids),
        cmocka_unit_test(objects_are_kept_as_json),
        cmocka_unit_test(pod_groups_and_gang_workloads_become_podgroups),
        cmocka_unit_test(capacity_queues_become_capacityqueue_objects),
        cmocka_unit_test(json_file_loads),
        cmocka_unit_test(taken_arrivals_are_left_to_the_taker),
        cmocka_unit_test(shipped_examples_load),
        cmocka_unit_test(node_removals_are_sorted_by_time),
        cmocka_unit_test(errors_name_file_line_and_column),
        cmocka_unit_test(missing_file_is_an_error),
        cmocka_unit_test(an_amplifying_file_is_refused_before_anything_is_built),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
