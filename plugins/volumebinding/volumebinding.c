/* volumebinding: kube-scheduler's VolumeBinding. A pod's PersistentVolumeClaims must exist; a
 * bound claim's volume must allow the node; an unbound claim of an Immediate class waits for the
 * PV controller; an unbound WaitForFirstConsumer claim gets the smallest available volume whose
 * node affinity fits the node, or is provisioned on the chosen node. Choices are assumed in
 * Reserve (so later pods see them), released in Unreserve, and written in PreBind, before the
 * Binding: the volume's claimRef, or the claim's selected-node annotation, as kube's binder does. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "candidates.h"
#include "volume_objects.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "volumebinding"
#define STATE_KEY "volumebinding/claims"
#define ENOMEM_CODE (-12)
#define TEXT_MAX 640

#define REASON_NODE_CONFLICT "node(s) didn't match PersistentVolume's node affinity"
#define REASON_BIND_CONFLICT "node(s) didn't find available persistent volumes to bind"
#define REASON_PV_NOT_EXIST "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
#define REASON_UNBOUND_IMMEDIATE "pod has unbound immediate PersistentVolumeClaims"

struct volumebinding {
    struct volume_objects vo;
    /* Reserve's assumptions until the API confirms them, as kube's assume caches:
     * volume name -> {"namespace", "name", "uid", "pod"}: the claim the volume is promised to;
     * "namespace/claim" -> {"node", "pod"}: the node a claim is to be provisioned on. */
    json_t *assumed_volumes;
    json_t *assumed_claims;
    struct candidate_cache candidates; /* the volumes of each class, compiled for matching */
};

/* One claim of the pod. The objects are referenced: an event may replace the index's copy
 * while the binding cycle still needs them. */
struct claim {
    json_t *claim;
    const char *namespace_name; /* points into claim */
    const char *name;
    const char *uid; /* NULL when absent */
    int64_t request;
    uint32_t modes;
    bool filesystem;
    bool has_selector;
    const struct class_candidates *candidates; /* delayed claims: the volumes of its class */
};

/* What PreFilter found for the pod, and what Reserve chose. */
struct pod_claims {
    struct claim *bound; /* fully bound claims */
    uint32_t bound_count;
    struct claim *delayed; /* unbound WaitForFirstConsumer claims, smallest request first */
    uint32_t delayed_count;
    /* after Reserve: per delayed claim, the volume chosen (NULL: provision on node) */
    char **chosen;
    char *node;
    bool reserved;
};

/* One node's answer for the delayed claims. */
struct node_result {
    bool node_conflict, bind_conflict, pv_missing;
    const char *error; /* an error, not a reason (a claim with no class to provision) */
    char error_text[TEXT_MAX];
};

static void claims_free(struct claim *claims, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        json_decref(claims[i].claim);
    free(claims);
}

static void pod_claims_free(void *data)
{
    struct pod_claims *pc = data;
    if (pc == NULL)
        return;
    for (uint32_t i = 0; pc->chosen != NULL && i < pc->delayed_count; i++)
        free(pc->chosen[i]);
    free(pc->chosen);
    claims_free(pc->bound, pc->bound_count);
    claims_free(pc->delayed, pc->delayed_count);
    free(pc->node);
    free(pc);
}

static void log_text(kc_log_level level, const char *text)
{
    kc_log(level, PLUGIN_NAME, text);
}

/* ---- init and events --------------------------------------------------------------------- */

static int vb_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json;
    if (kc_plugin_attach(host) < 0)
        return -22;
    if (!KC_HOST_HAS(host, cycle_write_object)) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "the host is older than SDK 1.2: it cannot show pod "
                                          "volumes or write claim updates");
        return -95;
    }
    struct volumebinding *vb = calloc(1, sizeof(*vb));
    if (vb == NULL || volume_objects_init(&vb->vo) < 0 ||
        (vb->assumed_volumes = json_object()) == NULL ||
        (vb->assumed_claims = json_object()) == NULL) {
        if (vb != NULL) {
            volume_objects_fini(&vb->vo);
            json_decref(vb->assumed_volumes);
        }
        free(vb);
        return ENOMEM_CODE;
    }
    *self = vb;
    return 0;
}

static void vb_fini(void *self)
{
    struct volumebinding *vb = self;
    volume_objects_fini(&vb->vo);
    json_decref(vb->assumed_volumes);
    json_decref(vb->assumed_claims);
    candidate_cache_free(&vb->candidates);
    free(vb);
}

static void claim_key(const char *namespace_name, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", namespace_name != NULL ? namespace_name : "default", name);
}

/* A newer version of an assumed object from the API ends the assumption (kube's assume cache
 * drops its copy when the informer's is newer). */
static void vb_on_event(void *self, const kc_event *ev)
{
    struct volumebinding *vb = self;
    if (!volume_objects_event(&vb->vo, ev))
        return;
    if (strcmp(ev->object_kind, VO_KIND_VOLUME) == 0)
        vb->candidates.generation++; /* compiled candidates are rebuilt when next needed */
    if (ev->type == KC_EVENT_OBJECT_ADD)
        return;
    if (strcmp(ev->object_kind, VO_KIND_VOLUME) == 0) {
        json_object_del(vb->assumed_volumes, ev->object_name);
    } else if (strcmp(ev->object_kind, VO_KIND_CLAIM) == 0) {
        char key[TEXT_MAX];
        claim_key(ev->object_namespace, ev->object_name, key, sizeof(key));
        json_object_del(vb->assumed_claims, key);
    }
}

static uint32_t vb_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET);
}

/* ---- PreFilter --------------------------------------------------------------------------- */

/* kube's podHasPVCs: every claim exists, is not lost, not being deleted, and an ephemeral one
 * belongs to the pod. 1 when the pod has claims, 0 when none, -1 with why in text. */
static int check_claims_exist(struct volumebinding *vb, const kc_pod *pod, char *text, size_t size)
{
    int has = 0;
    const char *ns = kc_pod_namespace(pod);
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) < 0 || v.claim_name == NULL ||
            (v.source != KC_VOLUME_PVC && v.source != KC_VOLUME_EPHEMERAL))
            continue;
        has = 1;
        const json_t *claim = vo_claim(&vb->vo, ns, v.claim_name);
        if (claim == NULL) {
            if (v.source == KC_VOLUME_EPHEMERAL)
                snprintf(text, size,
                         "waiting for ephemeral volume controller to create the "
                         "persistentvolumeclaim \"%s\"",
                         v.claim_name);
            else
                snprintf(text, size, "persistentvolumeclaim \"%s\" not found", v.claim_name);
            return -1;
        }
        const char *phase = vo_string(claim, "status.phase");
        if (phase != NULL && strcmp(phase, "Lost") == 0) {
            const char *volume = vo_string(claim, "spec.volumeName");
            snprintf(text, size, "persistentvolumeclaim \"%s\" bound to non-existent "
                                 "persistentvolume \"%s\"",
                     v.claim_name, volume != NULL ? volume : "");
            return -1;
        }
        if (vo_deleting(claim)) {
            snprintf(text, size, "persistentvolumeclaim \"%s\" is being deleted", v.claim_name);
            return -1;
        }
        if (v.source == KC_VOLUME_EPHEMERAL && !vo_claim_owned_by_pod(claim, pod)) {
            snprintf(text, size, "PVC %s/%s was not created for pod %s/%s (pod is not owner)", ns,
                     v.claim_name, ns, kc_pod_name(pod));
            return -1;
        }
    }
    return has;
}

static int claims_push(struct claim **list, uint32_t *count, json_t *claim)
{
    struct claim *grown = realloc(*list, (*count + 1) * sizeof(**list));
    if (grown == NULL)
        return ENOMEM_CODE;
    *list = grown;
    const char *mode = vo_string(claim, "spec.volumeMode");
    const json_t *selector = json_object_get(json_object_get(claim, "spec"), "selector");
    grown[*count] = (struct claim){
        .claim = json_incref(claim),
        .namespace_name = vo_string(claim, "metadata.namespace"),
        .name = vo_string(claim, "metadata.name"),
        .uid = vo_string(claim, "metadata.uid"),
        .request = vo_claim_request(claim),
        .modes = vo_access_modes(claim),
        .filesystem = mode == NULL || strcmp(mode, "Filesystem") == 0,
        .has_selector = selector != NULL && !json_is_null(selector),
    };
    if (grown[*count].namespace_name == NULL)
        grown[*count].namespace_name = "default";
    (*count)++;
    return 0;
}

/* Smallest request first, so the smallest volumes go to the smallest claims (kube's byPVCSize);
 * a stable insertion sort keeps the pod's order among equals. */
static void sort_by_request(struct claim *claims, uint32_t count)
{
    for (uint32_t i = 1; i < count; i++) {
        struct claim c = claims[i];
        uint32_t k = i;
        while (k > 0 && claims[k - 1].request > c.request) {
            claims[k] = claims[k - 1];
            k--;
        }
        claims[k] = c;
    }
}

/* Split the pod's claims: fully bound, unbound WaitForFirstConsumer, or unbound otherwise (an
 * Immediate class: only the PV controller binds those). Returns the immediate count. */
static int classify(struct volumebinding *vb, const kc_pod *pod, struct pod_claims *pc)
{
    int immediate = 0;
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) < 0 || v.claim_name == NULL ||
            (v.source != KC_VOLUME_PVC && v.source != KC_VOLUME_EPHEMERAL))
            continue;
        json_t *claim = vo_claim(&vb->vo, kc_pod_namespace(pod), v.claim_name);
        if (claim == NULL)
            continue; /* checked before */
        const char *volume = vo_string(claim, "spec.volumeName");
        int rc = 0;
        if (vo_claim_fully_bound(claim))
            rc = claims_push(&pc->bound, &pc->bound_count, claim);
        else if (vo_claim_delays_binding(&vb->vo, claim) && (volume == NULL || volume[0] == '\0'))
            rc = claims_push(&pc->delayed, &pc->delayed_count, claim);
        else
            immediate++;
        if (rc < 0)
            return rc;
    }
    sort_by_request(pc->delayed, pc->delayed_count);
    for (uint32_t i = 0; i < pc->delayed_count; i++) {
        pc->delayed[i].candidates =
            candidates_of(&vb->candidates, &vb->vo, vo_claim_class(pc->delayed[i].claim));
        if (pc->delayed[i].candidates == NULL)
            return ENOMEM_CODE;
    }
    return immediate;
}

static kc_status vb_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct volumebinding *vb = self;
    char text[TEXT_MAX];
    int has = check_claims_exist(vb, pod, text, sizeof(text));
    if (has < 0) {
        kc_cycle_reject(cycle, text);
        return KC_UNRESOLVABLE;
    }
    if (has == 0)
        return KC_SKIP;
    struct pod_claims *pc = calloc(1, sizeof(*pc));
    if (pc == NULL)
        return KC_ERROR;
    int immediate = classify(vb, pod, pc);
    if (immediate < 0 || kc_cycle_set(cycle, STATE_KEY, pc, pod_claims_free) < 0) {
        pod_claims_free(pc);
        return KC_ERROR;
    }
    if (immediate > 0) {
        kc_cycle_reject(cycle, REASON_UNBOUND_IMMEDIATE);
        return KC_UNRESOLVABLE;
    }
    return KC_SUCCESS;
}

/* ---- matching (Filter and Reserve) ------------------------------------------------------- */

/* Whether the claim a volume is promised to (Reserve's assumption, else its claimRef) is c:
 * 1 it is, 0 the volume is free, -1 it is another claim's. */
static int promised_to(struct volumebinding *vb, const struct candidate *v, const struct claim *c)
{
    const json_t *assumed = json_object_size(vb->assumed_volumes) > 0
                                ? json_object_get(vb->assumed_volumes, v->name)
                                : NULL;
    if (assumed != NULL) {
        const char *ns = json_string_value(json_object_get(assumed, "namespace"));
        const char *name = json_string_value(json_object_get(assumed, "name"));
        return ns != NULL && name != NULL && strcmp(name, c->name) == 0 &&
                       strcmp(ns, c->namespace_name) == 0
                   ? 1
                   : -1;
    }
    if (v->ref_name == NULL)
        return 0;
    /* kube's IsVolumeBoundToClaim: name and namespace, and the uid when the claimRef has one */
    bool same = strcmp(v->ref_name, c->name) == 0 &&
                strcmp(v->ref_namespace != NULL ? v->ref_namespace : "", c->namespace_name) == 0 &&
                (v->ref_uid == NULL || (c->uid != NULL && strcmp(v->ref_uid, c->uid) == 0));
    return same ? 1 : -1;
}

static bool chosen_contains(const char *const *chosen, uint32_t count, const char *name)
{
    for (uint32_t i = 0; i < count; i++)
        if (chosen[i] != NULL && strcmp(chosen[i], name) == 0)
            return true;
    return false;
}

/* kube's FindMatchingVolume on the scheduler's path, over the volumes of the claim's class: a
 * volume already promised to this claim wins when it fits the node (else nothing does);
 * otherwise the smallest Available volume, big enough, with the claim's access modes, volume
 * mode and selector, not being deleted, not chosen for another claim of the pod, whose node
 * affinity fits. Candidates come smallest first, so the first free one that fits is the
 * answer unless a promised one follows; the node affinity, the costly test, comes last. */
static const char *find_matching_volume(struct volumebinding *vb, const struct claim *c,
                                        const kc_node *node, const char *const *chosen,
                                        uint32_t chosen_count)
{
    const struct class_candidates *cc = c->candidates;
    const char *best = NULL;
    struct label_memo memo = {0};
    for (uint32_t i = 0; cc != NULL && i < cc->count; i++) {
        const struct candidate *v = &cc->items[i];
        if (v->capacity < c->request || v->filesystem != c->filesystem || v->deleting ||
            chosen_contains(chosen, chosen_count, v->name))
            continue;
        int promised = promised_to(vb, v, c);
        if (promised < 0)
            continue;
        if (promised > 0)
            return candidate_fits(v, node, &memo) ? v->name : NULL;
        if (best != NULL || !v->available || (v->modes & c->modes) != c->modes)
            continue; /* after the best one, only a volume promised to the claim can win */
        if (c->has_selector && !vo_selector_matches(c->claim, v->volume))
            continue;
        if (candidate_fits(v, node, &memo))
            best = v->name;
    }
    return best;
}

static const char *selected_node(struct volumebinding *vb, const struct claim *c)
{
    char key[TEXT_MAX];
    claim_key(c->namespace_name, c->name, key, sizeof(key));
    const json_t *assumed = json_object_get(vb->assumed_claims, key);
    if (assumed != NULL)
        return json_string_value(json_object_get(assumed, "node"));
    return vo_annotation(c->claim, VO_ANN_SELECTED_NODE);
}

/* kube's checkVolumeProvisions for one claim: its class has a provisioner and allows the node. */
static bool provisionable(struct volumebinding *vb, const struct claim *c, const kc_node *node,
                          struct node_result *r)
{
    const char *class_name = vo_claim_class(c->claim);
    if (class_name[0] == '\0') {
        snprintf(r->error_text, sizeof(r->error_text), "no class for claim \"%s/%s\"",
                 c->namespace_name, c->name);
        r->error = r->error_text;
        return false;
    }
    const json_t *klass = vo_class(&vb->vo, class_name);
    if (klass == NULL) {
        snprintf(r->error_text, sizeof(r->error_text), "failed to find storage class \"%s\"",
                 class_name);
        r->error = r->error_text;
        return false;
    }
    const char *provisioner = vo_string(klass, "provisioner");
    if (provisioner == NULL || provisioner[0] == '\0' || strcmp(provisioner, VO_NO_PROVISIONER) == 0)
        return false;
    return vo_class_allows_node(klass, node);
}

/* kube's FindPodVolumes for one node. chosen (delayed_count slots, may be NULL) receives the
 * volume picked for each delayed claim, NULL where the claim is to be provisioned. */
static void find_pod_volumes(struct volumebinding *vb, const struct pod_claims *pc,
                             const kc_node *node, const char **chosen, struct node_result *r)
{
    memset(r, 0, sizeof(*r));
    for (uint32_t i = 0; i < pc->bound_count; i++) {
        const json_t *volume = vo_volume(&vb->vo, vo_string(pc->bound[i].claim, "spec.volumeName"));
        if (volume == NULL) {
            r->pv_missing = true;
            break;
        }
        if (!vo_volume_fits_node(volume, node)) {
            r->node_conflict = true;
            break;
        }
    }
    if (pc->delayed_count == 0)
        return;
    const char *node_name = kc_node_name(node);
    const char *local[64];
    const char **picked = chosen != NULL ? chosen : local;
    if (chosen == NULL && pc->delayed_count > 64) {
        r->error = "a pod with more than 64 unbound claims";
        return;
    }
    for (uint32_t i = 0; i < pc->delayed_count; i++) {
        const char *selected = selected_node(vb, &pc->delayed[i]);
        picked[i] = NULL;
        if (selected != NULL && strcmp(selected, node_name) != 0) {
            r->bind_conflict = true; /* provisioning started on another node */
            return;
        }
    }
    for (uint32_t i = 0; i < pc->delayed_count; i++) {
        if (selected_node(vb, &pc->delayed[i]) != NULL)
            continue; /* provisioning on this node: nothing to match */
        picked[i] = find_matching_volume(vb, &pc->delayed[i], node, picked, i);
    }
    for (uint32_t i = 0; i < pc->delayed_count; i++) {
        if (picked[i] != NULL)
            continue;
        if (!provisionable(vb, &pc->delayed[i], node, r)) {
            r->bind_conflict = r->error == NULL;
            return;
        }
    }
}

static kc_status vb_filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    (void)pod;
    struct volumebinding *vb = self;
    const struct pod_claims *pc = kc_cycle_get(cycle, STATE_KEY);
    if (pc == NULL)
        return KC_SUCCESS;
    struct node_result r;
    find_pod_volumes(vb, pc, node, NULL, &r);
    if (r.error != NULL) {
        log_text(KC_LOG_WARN, r.error);
        return KC_ERROR;
    }
    if (r.node_conflict)
        kc_cycle_reject(cycle, REASON_NODE_CONFLICT);
    if (r.bind_conflict)
        kc_cycle_reject(cycle, REASON_BIND_CONFLICT);
    if (r.pv_missing)
        kc_cycle_reject(cycle, REASON_PV_NOT_EXIST);
    return r.node_conflict || r.bind_conflict || r.pv_missing ? KC_UNRESOLVABLE : KC_SUCCESS;
}

/* ---- Reserve, Unreserve, PreBind --------------------------------------------------------- */

static void release(struct volumebinding *vb, struct pod_claims *pc)
{
    if (!pc->reserved)
        return;
    for (uint32_t i = 0; i < pc->delayed_count; i++) {
        if (pc->chosen[i] != NULL) {
            json_object_del(vb->assumed_volumes, pc->chosen[i]);
        } else {
            char key[TEXT_MAX];
            claim_key(pc->delayed[i].namespace_name, pc->delayed[i].name, key, sizeof(key));
            json_object_del(vb->assumed_claims, key);
        }
        free(pc->chosen[i]);
        pc->chosen[i] = NULL;
    }
    pc->reserved = false;
}

static kc_status vb_reserve(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct volumebinding *vb = self;
    struct pod_claims *pc = kc_cycle_get(cycle, STATE_KEY);
    if (pc == NULL || pc->delayed_count == 0)
        return KC_SUCCESS; /* every claim bound already: nothing to assume */
    if (pc->chosen == NULL && (pc->chosen = calloc(pc->delayed_count, sizeof(char *))) == NULL)
        return KC_ERROR;
    const char **picked = calloc(pc->delayed_count, sizeof(char *));
    if (picked == NULL)
        return KC_ERROR;
    struct node_result r;
    find_pod_volumes(vb, pc, node, picked, &r);
    if (r.error != NULL || r.node_conflict || r.bind_conflict || r.pv_missing) {
        free(picked);
        kc_cycle_reject(cycle, r.error != NULL ? r.error : REASON_BIND_CONFLICT);
        return KC_ERROR;
    }
    free(pc->node);
    pc->node = strdup(kc_node_name(node));
    pc->reserved = true;
    bool ok = pc->node != NULL;
    for (uint32_t i = 0; ok && i < pc->delayed_count; i++) {
        const struct claim *c = &pc->delayed[i];
        json_t *assumption;
        if (picked[i] != NULL) {
            pc->chosen[i] = strdup(picked[i]);
            assumption = json_pack("{s:s, s:s, s:s}", "namespace", c->namespace_name, "name",
                                   c->name, "pod", kc_pod_uid(pod));
            ok = pc->chosen[i] != NULL && assumption != NULL &&
                 json_object_set_new(vb->assumed_volumes, picked[i], assumption) == 0;
        } else {
            char key[TEXT_MAX];
            claim_key(c->namespace_name, c->name, key, sizeof(key));
            assumption = json_pack("{s:s, s:s}", "node", pc->node, "pod", kc_pod_uid(pod));
            ok = assumption != NULL && json_object_set_new(vb->assumed_claims, key, assumption) == 0;
        }
    }
    free(picked);
    if (!ok) {
        release(vb, pc);
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

static void vb_unreserve(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    (void)pod;
    (void)node;
    struct pod_claims *pc = kc_cycle_get(cycle, STATE_KEY);
    if (pc != NULL)
        release(self, pc);
}

/* The claimRef kube's binder writes (GetBindVolumeToClaim), with the volume's resourceVersion
 * as a precondition so a volume changed meanwhile is not taken. */
static char *volume_patch(const json_t *volume, const json_t *claim)
{
    const char *rv = vo_string(volume, "metadata.resourceVersion");
    const char *ns = vo_string(claim, "metadata.namespace");
    const char *uid = vo_string(claim, "metadata.uid");
    const char *claim_rv = vo_string(claim, "metadata.resourceVersion");
    json_t *ref = json_pack("{s:s, s:s, s:s, s:s}", "kind", VO_KIND_CLAIM, "apiVersion", "v1",
                            "namespace", ns != NULL ? ns : "default", "name",
                            vo_string(claim, "metadata.name"));
    if (ref != NULL && uid != NULL)
        json_object_set_new(ref, "uid", json_string(uid));
    if (ref != NULL && claim_rv != NULL)
        json_object_set_new(ref, "resourceVersion", json_string(claim_rv));
    json_t *meta = json_pack("{s:{s:s}}", "annotations", VO_ANN_BOUND_BY_CONTROLLER, "yes");
    if (meta != NULL && rv != NULL)
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    json_t *patch = json_pack("{s:o, s:{s:o}}", "metadata", meta, "spec", "claimRef", ref);
    char *text = patch != NULL ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    return text;
}

/* The selected-node annotation that asks the claim's provisioner for a volume on node. */
static char *claim_patch(const json_t *claim, const char *node)
{
    const char *rv = vo_string(claim, "metadata.resourceVersion");
    json_t *meta = json_pack("{s:{s:s}}", "annotations", VO_ANN_SELECTED_NODE, node);
    if (meta != NULL && rv != NULL)
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    json_t *patch = json_pack("{s:o}", "metadata", meta);
    char *text = patch != NULL ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    return text;
}

static kc_status vb_pre_bind(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct volumebinding *vb = self;
    struct pod_claims *pc = kc_cycle_get(cycle, STATE_KEY);
    if (pc == NULL || !pc->reserved)
        return KC_SUCCESS; /* all bound */
    for (uint32_t i = 0; i < pc->delayed_count; i++) {
        const struct claim *c = &pc->delayed[i];
        char *patch;
        int rc;
        if (pc->chosen[i] != NULL) {
            const json_t *volume = vo_volume(&vb->vo, pc->chosen[i]);
            if (volume == NULL) {
                kc_cycle_reject(cycle, "a volume chosen in Reserve is gone");
                return KC_ERROR;
            }
            if ((patch = volume_patch(volume, c->claim)) == NULL)
                return KC_ERROR;
            rc = kc_cycle_write_object(cycle, VO_KIND_VOLUME, NULL, pc->chosen[i], patch);
        } else {
            if ((patch = claim_patch(c->claim, kc_node_name(node))) == NULL)
                return KC_ERROR;
            rc = kc_cycle_write_object(cycle, VO_KIND_CLAIM, c->namespace_name, c->name, patch);
        }
        free(patch);
        if (rc < 0) {
            char text[TEXT_MAX];
            snprintf(text, sizeof(text), "pod %s/%s: writing the claim update of %s failed (%d)",
                     kc_pod_namespace(pod), kc_pod_name(pod), c->name, rc);
            log_text(KC_LOG_WARN, text);
            kc_cycle_reject(cycle, text);
            return KC_ERROR;
        }
    }
    return KC_SUCCESS;
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = vb_init,
    .fini = vb_fini,
    .requeue_events = vb_requeue_events,
    .pre_filter = vb_pre_filter,
    .filter = vb_filter,
    .reserve = vb_reserve,
    .unreserve = vb_unreserve,
    .pre_bind = vb_pre_bind,
    .on_event = vb_on_event,
};

static const kc_plugin_descriptor descriptor = KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &descriptor;
}
