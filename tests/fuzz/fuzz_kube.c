/* Fuzz target for the decoding of what the API server sends: list responses and watch streams
 * (runtime/kube/reflector.c) and the objects in them, turned into what the bridge sends the
 * scheduler (pods and nodes through pod_from_tree / node_from_tree and the protobuf encoding;
 * PersistentVolumes, claims, StorageClasses, PodDisruptionBudgets and custom objects as JSON
 * text). The first byte picks the resource; then each frame (fuzz.h) is a body, the first one a
 * list and the others watches, as the reflector reads them in turn.
 *
 * Beyond no crash and no leak: the events keep the promise of kube.h (ADDED only for an
 * object not known, MODIFIED and DELETED only for a known one), and whatever the bridge would
 * send decodes back to the same object. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "kube.h"
#include "log.h"
#include "model.h"
#include "proto_convert.h"
#include "roundtrip.h"
#include "strmap.h"
#include "tree.h"

/* The resources kcycle-kube-bridge watches, by kind: 'p' pods, 'n' nodes, 'o' JSON objects. */
static const struct {
    struct kube_resource resource;
    char kind;
} resources[] = {
    {{"Pod", "/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed", 0}, 'p'},
    {{"Node", "/api/v1/nodes", NULL, 0}, 'n'},
    {{"PersistentVolume", "/api/v1/persistentvolumes", NULL, 0}, 'o'},
    {{"PersistentVolumeClaim", "/api/v1/persistentvolumeclaims", NULL, 0}, 'o'},
    {{"StorageClass", "/apis/storage.k8s.io/v1/storageclasses", NULL, 0}, 'o'},
    {{"PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", NULL, 0}, 'o'},
    {{"PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", NULL, 0}, 'o'},
    {{"CSINode", "/apis/storage.k8s.io/v1/csinodes", NULL, 0}, 'o'},
};
#define RESOURCE_COUNT (sizeof(resources) / sizeof(resources[0]))

struct consumer {
    char kind;
    struct strmap known; /* key -> its own copy: the objects the events say exist */
};

static void as_pod(const struct tree *object)
{
    struct pod *pod = NULL;
    struct kc_error err = {{0}};
    if (pod_from_tree(object, &pod, &err) != 0) {
        fuzz_check(pod == NULL && err.message[0] != '\0', "pod_from_tree", "a bad refusal");
        return;
    }
    pod_round_trip(pod, false);
    pod_free(pod);
}

static void as_node(const struct tree *object)
{
    struct node *node = NULL;
    struct kc_error err = {{0}};
    if (node_from_tree(object, &node, &err) != 0) {
        fuzz_check(node == NULL && err.message[0] != '\0', "node_from_tree", "a bad refusal");
        return;
    }
    node_round_trip(node, false);
    node_free(node);
}

/* Custom objects travel as the JSON text tree_to_json writes; the plugins read it with
 * jansson, so it must be an object jansson accepts. */
static void as_json(const struct tree *object)
{
    char *json = tree_to_json(object);
    if (json == NULL)
        return;
    json_error_t error;
    json_t *back = json_loads(json, 0, &error);
    fuzz_check(json_is_object(back), "tree_to_json", "an object that jansson does not read back");
    json_decref(back);
    free(json);
}

static void on_event(void *ctx, enum kube_event_type type, const char *namespace, const char *name,
                     const char *uid, const struct tree *object)
{
    struct consumer *c = ctx;
    fuzz_check(namespace != NULL && name != NULL && name[0] != '\0', "reflector",
               "an event without a name");
    char key[1100];
    snprintf(key, sizeof(key), "%s/%s", namespace, name);
    bool known = strmap_get(&c->known, key) != NULL;
    if (type == KUBE_ADDED)
        fuzz_check(!known, "reflector", "ADDED for an object it said exists");
    else
        fuzz_check(known, "reflector", "MODIFIED or DELETED for an object it never added");
    if (type == KUBE_DELETED) {
        free(strmap_remove(&c->known, key));
        if (c->kind == 'p')
            fuzz_check(uid != NULL, "reflector", "a pod deleted without its uid");
        return;
    }
    if (!known) {
        char *copy = strdup(key);
        fuzz_check(copy != NULL && strmap_put(&c->known, copy, copy) == 0, "strmap_put", NULL);
    }
    fuzz_check(object != NULL && object->type == TREE_MAP, "reflector",
               "an object that is not a map");
    if (c->kind == 'p')
        as_pod(object);
    else if (c->kind == 'n')
        as_node(object);
    else
        as_json(object);
}

static void on_synced(void *ctx)
{
    (void)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        log_set_level(KC_LOG_ERROR);
        quiet = 1;
    }
    if (size == 0)
        return 0;
    unsigned pick = data[0] % RESOURCE_COUNT;
    data++;
    size--;
    struct consumer c = {.kind = resources[pick].kind};
    struct kube_reflector_ops ops = {.ctx = &c, .event = on_event, .synced = on_synced};
    struct kube_reflector r;
    static atomic_bool stop;
    /* the client is never used by the feed functions; the reflector insists on one */
    fuzz_check(kube_reflector_init(&r, &resources[pick].resource, &ops,
                                   (struct kube_client *)&c, &stop) == 0,
               "kube_reflector_init", NULL);
    const uint8_t *frame;
    size_t len;
    for (unsigned n = 0; fuzz_next_frame(&data, &size, &frame, &len); n++) {
        int rc = n == 0 ? kube_reflector_feed_list(&r, (const char *)frame, len)
                        : kube_reflector_feed_watch(&r, (const char *)frame, len);
        fuzz_check(rc == 0 || rc == -EPROTO || rc == -ENOMEM, "reflector",
                   "an undocumented error");
    }
    if (getenv("KCYCLE_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "kube: %s: %llu events, %llu bad objects, %u known\n",
                resources[pick].resource.kind, (unsigned long long)r.events,
                (unsigned long long)r.bad_objects, c.known.count);
    /* the store and the events agree on what exists */
    fuzz_check(r.store.count == c.known.count, "reflector",
               "the store holds other objects than the events announced");
    kube_reflector_free(&r);
    for (uint32_t i = 0; i < c.known.capacity; i++)
        free(c.known.entries[i].value);
    strmap_free(&c.known);
    return 0;
}
