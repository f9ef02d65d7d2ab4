/* Test helpers shared by the volume plugins' cmocka tests: storage objects written with single
 * quotes (JSON with ' for ") delivered as object events, and a three-node cluster with zone and
 * hostname labels. Test-only; included by test_<plugin>.c after fake_host.h. */
#ifndef KC_PLUGINS_VOLUME_TEST_SUPPORT_H
#define KC_PLUGINS_VOLUME_TEST_SUPPORT_H

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fake_host.h"
#include "volume_cases.h"

/* node-a: zone a; node-b: zone b; node-c: zone a, disk ssd. Each has its hostname label. */
static kc_node vt_nodes[VT_NODES];

static inline void vt_nodes_init(void)
{
    static const char *const names[VT_NODES] = {"node-a", "node-b", "node-c"};
    static const char *const zones[VT_NODES] = {"a", "b", "a"};
    for (int i = 0; i < VT_NODES; i++) {
        fake_node_init(&vt_nodes[i], names[i]);
        vt_nodes[i].labels[0] = (struct fake_kv){"kubernetes.io/hostname", names[i]};
        vt_nodes[i].labels[1] = (struct fake_kv){"topology.kubernetes.io/zone", zones[i]};
        vt_nodes[i].label_count = 2;
        fake_host_add_node(&vt_nodes[i]);
    }
    vt_nodes[2].labels[2] = (struct fake_kv){"disk", "ssd"};
    vt_nodes[2].label_count = 3;
}

/* Deliver one object ('-quoted JSON) to the plugin as an event of type. */
static inline void vt_object_event(const kc_plugin_ops *ops, void *self, kc_event_type type,
                            const char *quoted)
{
    char *json = strdup(quoted);
    for (char *c = json; *c != '\0'; c++)
        if (*c == '\'')
            *c = '"';
    json_t *object = json_loads(json, 0, NULL);
    if (object == NULL)
        fail_msg("test object does not parse: %s", json);
    json_t *meta = json_object_get(object, "metadata");
    kc_event ev = {
        .struct_size = sizeof(ev),
        .type = type,
        .object_kind = json_string_value(json_object_get(object, "kind")),
        .object_namespace = json_string_value(json_object_get(meta, "namespace")),
        .object_name = json_string_value(json_object_get(meta, "name")),
        .object_json = json,
    };
    ops->on_event(self, &ev);
    json_decref(object);
    free(json);
}

static inline void vt_objects(const kc_plugin_ops *ops, void *self, const char *const *objects)
{
    for (int i = 0; i < VT_MAX_OBJECTS && objects[i] != NULL; i++)
        vt_object_event(ops, self, KC_EVENT_OBJECT_ADD, objects[i]);
}

/* A pod already placed on a node (struct vt_placed of volume_cases.h), delivered as a pod
 * event (POD_ADD with spec.nodeName) and listed on that node. */
static kc_pod vt_placed_pods[4];

static inline void vt_place(const kc_plugin_ops *ops, void *self, const struct vt_placed *placed)
{
    for (int i = 0; i < 4 && placed[i].name != NULL; i++) {
        kc_pod *pod = &vt_placed_pods[i];
        fake_pod_init(pod, placed[i].namespace_name != NULL ? placed[i].namespace_name : "default",
                      placed[i].name);
        pod->node_name = placed[i].node;
        for (int k = 0; k < 3 && placed[i].volumes[k].source != KC_VOLUME_OTHER; k++) {
            pod->volumes[k] = placed[i].volumes[k];
            pod->volumes[k].struct_size = sizeof(kc_volume);
            pod->volume_count = k + 1;
        }
        kc_event ev = {.struct_size = sizeof(ev), .type = KC_EVENT_POD_ADD, .pod = pod};
        ops->on_event(self, &ev);
        /* and on its node's pod list (kc_node_pod_at), where Filter reads a node's pods */
        for (int n = 0; n < VT_NODES; n++)
            if (placed[i].node != NULL && strcmp(vt_nodes[n].name, placed[i].node) == 0)
                fake_node_add_pod(&vt_nodes[n], pod);
    }
}

#endif
