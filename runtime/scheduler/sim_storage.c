/* The simulated cluster's side of object writes (kc_cycle_write_object): a merge patch applied
 * to the file's objects with the API server's resourceVersion precondition, then what the
 * cluster's controllers would do next: the PV controller binds a claim to the volume whose
 * claimRef names it, and a provisioner makes a volume for a claim marked with
 * volume.kubernetes.io/selected-node (pinned to that node). The resulting object events are
 * delivered between scheduling steps, never inside the binding that caused them
 * (docs/simulation.md, "Volumes"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "array.h"
#include "log.h"
#include "simulator.h"

#define SELECTED_NODE "volume.kubernetes.io/selected-node"
#define NO_PROVISIONER "kubernetes.io/no-provisioner"

static bool same(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static struct sim_object *find_object(struct simulator *sim, const char *kind,
                                      const char *namespace_name, const char *name)
{
    for (uint32_t i = 0; i < sim->spec.object_count; i++) {
        struct sim_object *o = &sim->spec.objects[i];
        if (same(o->kind, kind) && same(o->name, name) &&
            (namespace_name == NULL || same(o->namespace, namespace_name)))
            return o;
    }
    return NULL;
}

/* RFC 7386: objects merge key by key, null deletes, anything else replaces. */
static json_t *merge_patch(json_t *target, const json_t *patch)
{
    if (!json_is_object(patch))
        return json_deep_copy(patch);
    json_t *out = json_is_object(target) ? json_incref(target) : json_object();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)patch, key, value)
    {
        if (json_is_null(value)) {
            json_object_del(out, key);
            continue;
        }
        json_t *merged = merge_patch(json_object_get(out, key), value);
        json_object_set_new(out, key, merged);
    }
    return out;
}

static int queue_event(struct simulator *sim, kc_event_type type, const struct sim_object *o)
{
    struct sim_storage *st = &sim->storage;
    struct sim_storage_event *grown =
        array_grow(st->pending, &st->pending_capacity, st->pending_count + 1, sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    st->pending = grown;
    struct sim_storage_event *e = &grown[st->pending_count];
    e->type = type;
    e->kind = strdup(o->kind);
    e->namespace = o->namespace != NULL ? strdup(o->namespace) : NULL;
    e->name = strdup(o->name);
    e->json = strdup(o->json);
    if (e->kind == NULL || e->name == NULL || e->json == NULL) {
        free(e->kind);
        free(e->namespace);
        free(e->name);
        free(e->json);
        return -ENOMEM;
    }
    st->pending_count++;
    return 0;
}

/* Store the new version of o (taking value), stamped with the next resourceVersion. */
static int store(struct simulator *sim, struct sim_object *o, json_t *value, kc_event_type type)
{
    char rv[32];
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)++sim->storage.resource_version);
    json_t *meta = json_object_get(value, "metadata");
    if (json_is_object(meta))
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    char *text = json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(value);
    if (text == NULL)
        return -ENOMEM;
    free(o->json);
    o->json = text;
    return queue_event(sim, type, o);
}

static struct sim_object *add_object(struct simulator *sim, const char *kind,
                                     const char *namespace_name, const char *name)
{
    struct sim_object *grown =
        realloc(sim->spec.objects, (sim->spec.object_count + 1) * sizeof(*grown));
    if (grown == NULL)
        return NULL;
    sim->spec.objects = grown;
    struct sim_object *o = &grown[sim->spec.object_count];
    o->kind = strdup(kind);
    o->namespace = namespace_name != NULL ? strdup(namespace_name) : NULL;
    o->name = strdup(name);
    o->json = strdup("{}");
    if (o->kind == NULL || o->name == NULL || o->json == NULL ||
        (namespace_name != NULL && o->namespace == NULL)) {
        free(o->kind);
        free(o->namespace);
        free(o->name);
        free(o->json);
        return NULL;
    }
    sim->spec.object_count++;
    return o;
}

static json_t *object_value(const struct sim_object *o)
{
    return json_loads(o->json, 0, NULL);
}

/* The PV controller's side of a binding: claim and volume both say Bound. */
static int bind_claim(struct simulator *sim, struct sim_object *claim_object,
                      const char *volume_name)
{
    json_t *claim = object_value(claim_object);
    json_t *patch = json_pack("{s:{s:{s:s, s:s}}, s:{s:s}, s:{s:s}}", "metadata", "annotations",
                              "pv.kubernetes.io/bind-completed", "yes",
                              "pv.kubernetes.io/bound-by-controller", "yes", "spec", "volumeName",
                              volume_name, "status", "phase", "Bound");
    json_t *merged = claim != NULL && patch != NULL ? merge_patch(claim, patch) : NULL;
    json_decref(claim);
    json_decref(patch);
    return merged != NULL ? store(sim, claim_object, merged, KC_EVENT_OBJECT_UPDATE) : -ENOMEM;
}

/* A volume's claimRef was written: the PV controller binds the two. */
static int after_volume_write(struct simulator *sim, struct sim_object *volume_object)
{
    json_t *volume = object_value(volume_object);
    json_t *ref = json_object_get(json_object_get(volume, "spec"), "claimRef");
    const char *ns = json_string_value(json_object_get(ref, "namespace"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    struct sim_object *claim =
        name != NULL ? find_object(sim, "PersistentVolumeClaim", ns != NULL ? ns : "default",
                                   name)
                     : NULL;
    int rc = 0;
    if (claim != NULL) {
        json_t *status = json_pack("{s:s}", "phase", "Bound");
        json_object_set_new(volume, "status", status);
        rc = store(sim, volume_object, json_incref(volume), KC_EVENT_OBJECT_UPDATE);
        if (rc == 0)
            rc = bind_claim(sim, claim, volume_object->name);
    }
    json_decref(volume);
    return rc;
}

/* A claim was marked for provisioning on a node: its class's provisioner makes a volume there. */
static int after_claim_write(struct simulator *sim, struct sim_object *claim_object)
{
    json_t *claim = object_value(claim_object);
    json_t *meta = json_object_get(claim, "metadata");
    json_t *spec = json_object_get(claim, "spec");
    const char *node = json_string_value(json_object_get(json_object_get(meta, "annotations"),
                                                         SELECTED_NODE));
    const char *class_name = json_string_value(json_object_get(spec, "storageClassName"));
    const char *volume_name = json_string_value(json_object_get(spec, "volumeName"));
    struct sim_object *klass =
        class_name != NULL ? find_object(sim, "StorageClass", NULL, class_name) : NULL;
    json_t *class_value = klass != NULL ? object_value(klass) : NULL;
    const char *provisioner = json_string_value(json_object_get(class_value, "provisioner"));
    int rc = 0;
    if (node != NULL && (volume_name == NULL || volume_name[0] == '\0') && provisioner != NULL &&
        provisioner[0] != '\0' && strcmp(provisioner, NO_PROVISIONER) != 0) {
        const char *uid = json_string_value(json_object_get(meta, "uid"));
        char name[512];
        snprintf(name, sizeof(name), "pvc-%s", uid != NULL ? uid : claim_object->name);
        for (char *c = name; *c != '\0'; c++)
            if (*c == '/')
                *c = '-';
        json_t *request =
            json_object_get(json_object_get(json_object_get(spec, "resources"), "requests"),
                            "storage");
        json_t *modes = json_object_get(spec, "accessModes");
        char claim_ns[256], claim_name[256];
        snprintf(claim_ns, sizeof(claim_ns), "%s",
                 claim_object->namespace != NULL ? claim_object->namespace : "default");
        snprintf(claim_name, sizeof(claim_name), "%s", claim_object->name);
        json_t *volume = json_pack(
            "{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:o, s:{s:o}, s:{s:s, s:s, s:s, s:s}, "
            "s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}, s:{s:s}}",
            "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", name,
            "annotations", "pv.kubernetes.io/provisioned-by", provisioner, "spec",
            "storageClassName", class_name, "accessModes",
            modes != NULL ? json_deep_copy(modes) : json_array(), "capacity", "storage",
            request != NULL ? json_deep_copy(request) : json_string("0"), "claimRef", "kind",
            "PersistentVolumeClaim", "namespace", claim_ns, "name", claim_name, "uid",
            uid != NULL ? uid : "", "nodeAffinity", "required", "nodeSelectorTerms",
            "matchExpressions", "key", "kubernetes.io/hostname", "operator", "In", "values", node,
            "status",
            "phase", "Bound");
        /* adding the volume may move the objects: claim_object is not used after this */
        struct sim_object *o = volume != NULL ? add_object(sim, "PersistentVolume", NULL, name)
                                              : NULL;
        rc = o != NULL ? store(sim, o, volume, KC_EVENT_OBJECT_ADD) : -ENOMEM;
        if (o == NULL)
            json_decref(volume);
        struct sim_object *bound =
            rc == 0 ? find_object(sim, "PersistentVolumeClaim", claim_ns, claim_name) : NULL;
        if (bound != NULL) {
            sim->storage.provisioned++;
            rc = bind_claim(sim, bound, name);
        }
    }
    json_decref(class_value);
    json_decref(claim);
    return rc;
}

int sim_storage_write(struct simulator *sim, const struct pod *pod,
                      const struct object_write *write)
{
    struct sim_object *o = find_object(sim, write->kind, write->namespace, write->name);
    if (o == NULL) {
        log_info("simulation: pod %s/%s: %s %s%s%s not found", pod->namespace, pod->name,
                 write->kind, write->namespace != NULL ? write->namespace : "",
                 write->namespace != NULL ? "/" : "", write->name);
        return -ENOENT;
    }
    json_error_t jerr;
    json_t *patch = json_loads(write->patch, 0, &jerr);
    json_t *current = object_value(o);
    if (patch == NULL || current == NULL) {
        json_decref(patch);
        json_decref(current);
        return -EINVAL;
    }
    /* the API server's optimistic concurrency: a stale resourceVersion is a conflict */
    const char *want = json_string_value(
        json_object_get(json_object_get(patch, "metadata"), "resourceVersion"));
    const char *have = json_string_value(
        json_object_get(json_object_get(current, "metadata"), "resourceVersion"));
    int rc = 0;
    if (want != NULL && have != NULL && strcmp(want, have) != 0) {
        rc = -EAGAIN;
    } else {
        json_t *merged = merge_patch(current, patch);
        rc = merged != NULL ? store(sim, o, merged, KC_EVENT_OBJECT_UPDATE) : -ENOMEM;
    }
    json_decref(patch);
    json_decref(current);
    if (rc < 0)
        return rc;
    sim->storage.writes++;
    if (strcmp(write->kind, "PersistentVolume") == 0)
        return after_volume_write(sim, find_object(sim, write->kind, NULL, write->name));
    if (strcmp(write->kind, "PersistentVolumeClaim") == 0)
        return after_claim_write(sim, find_object(sim, write->kind, write->namespace, write->name));
    return 0;
}

void sim_storage_flush(struct simulator *sim)
{
    struct sim_storage *st = &sim->storage;
    /* delivering may queue more (a plugin reacting); take the batch first */
    while (st->pending_count > 0) {
        uint32_t count = st->pending_count;
        struct sim_storage_event *batch = st->pending;
        st->pending = NULL;
        st->pending_count = 0;
        st->pending_capacity = 0;
        for (uint32_t i = 0; i < count; i++) {
            struct sim_storage_event *e = &batch[i];
            scheduler_object_event(&sim->sched, e->type, e->kind, e->namespace, e->name, e->json);
            free(e->kind);
            free(e->namespace);
            free(e->name);
            free(e->json);
        }
        free(batch);
    }
}

void sim_storage_free(struct sim_storage *st)
{
    for (uint32_t i = 0; i < st->pending_count; i++) {
        free(st->pending[i].kind);
        free(st->pending[i].namespace);
        free(st->pending[i].name);
        free(st->pending[i].json);
    }
    free(st->pending);
    memset(st, 0, sizeof(*st));
}
