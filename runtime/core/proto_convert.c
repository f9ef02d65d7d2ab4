/* Conversion between the object model and the objects.proto messages: encoding builds messages
 * from borrowed strings in one arena per message, decoding validates everything the wire can
 * get wrong and rebuilds the model's invariants (sorted unique lists, interned resources). */
#include "proto_convert.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod_fields.h"
#include "resource_table.h"

/* ---- encoding: arena --------------------------------------------------------------------- */

/* A snapshot encodes thousands of small messages; one arena per top-level message keeps that
 * to a few mallocs each and makes the free exact without mirroring the build. */
struct arena_chunk {
    struct arena_chunk *next;
    size_t used;
    size_t size;
    max_align_t data[];
};

enum { ARENA_CHUNK_BYTES = 4096 };

/* The message handed out is msg; *_proto_free finds the holder from it. */
struct proto_holder {
    struct arena_chunk *chunks;
    union {
        Kcycle__V1__Pod pod;
        Kcycle__V1__Node node;
        Kcycle__V1__CustomObject object;
    } msg;
};

static struct proto_holder *holder_of(void *msg)
{
    return (struct proto_holder *)((char *)msg - offsetof(struct proto_holder, msg));
}

static void holder_free(struct proto_holder *h)
{
    struct arena_chunk *c = h->chunks;
    while (c != NULL) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(h);
}

/* Not zeroed: arena_alloc zeroes what it hands out. A pod uses a few hundred bytes of its
 * 4 KiB chunk, and calloc clearing the whole chunk was most of the arena's cost per pod. */
static struct arena_chunk *chunk_new(size_t size)
{
    struct arena_chunk *c = malloc(sizeof(*c) + size);
    if (c != NULL) {
        c->next = NULL;
        c->used = 0;
        c->size = size;
    }
    return c;
}

/* Zeroed room for count items of size bytes; NULL when out of memory (count must be > 0). */
static void *arena_alloc(struct proto_holder *h, size_t count, size_t size)
{
    const size_t align = alignof(max_align_t);
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || bytes > SIZE_MAX - align)
        return NULL;
    bytes = (bytes + align - 1) & ~(align - 1);
    struct arena_chunk *head = h->chunks;
    if (head != NULL && head->size - head->used >= bytes) {
        void *p = (char *)head->data + head->used;
        head->used += bytes;
        return memset(p, 0, bytes);
    }
    /* A large block gets a chunk of its own behind the head so the head's room stays usable. */
    bool own = bytes > ARENA_CHUNK_BYTES / 4;
    struct arena_chunk *c = chunk_new(own ? bytes : ARENA_CHUNK_BYTES);
    if (c == NULL)
        return NULL;
    c->used = bytes;
    if (own && head != NULL) {
        c->next = head->next;
        head->next = c;
    } else {
        c->next = head;
        h->chunks = c;
    }
    return memset(c->data, 0, bytes);
}

/* protobuf-c fields are char * but packing only reads them; the message never outlives the
 * object it borrows from (see proto_convert.h). */
static char *borrow(const char *s)
{
    return (char *)(s != NULL ? s : protobuf_c_empty_string);
}

/* ---- encoding: fields -------------------------------------------------------------------- */

static int encode_effect(kc_taint_effect effect, bool allow_unspecified,
                         Kcycle__V1__TaintEffect *out)
{
    switch ((int)effect) {
    case 0:
        *out = KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED;
        return allow_unspecified ? 0 : -EINVAL;
    case KC_TAINT_NO_SCHEDULE: *out = KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE; return 0;
    case KC_TAINT_PREFER_NO_SCHEDULE:
        *out = KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE;
        return 0;
    case KC_TAINT_NO_EXECUTE: *out = KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE; return 0;
    default: return -EINVAL;
    }
}

static int encode_selector_op(enum selector_op op, Kcycle__V1__SelectorOperator *out)
{
    switch (op) {
    case SELECTOR_IN: *out = KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN; return 0;
    case SELECTOR_NOT_IN: *out = KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN; return 0;
    case SELECTOR_EXISTS: *out = KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS; return 0;
    case SELECTOR_DOES_NOT_EXIST:
        *out = KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST;
        return 0;
    case SELECTOR_GT: *out = KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT; return 0;
    case SELECTOR_LT: *out = KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT; return 0;
    }
    return -EINVAL;
}

static int encode_phase(enum pod_phase phase, Kcycle__V1__PodPhase *out)
{
    switch (phase) {
    case POD_PENDING: *out = KCYCLE__V1__POD_PHASE__POD_PHASE_PENDING; return 0;
    case POD_RUNNING: *out = KCYCLE__V1__POD_PHASE__POD_PHASE_RUNNING; return 0;
    case POD_SUCCEEDED: *out = KCYCLE__V1__POD_PHASE__POD_PHASE_SUCCEEDED; return 0;
    case POD_FAILED: *out = KCYCLE__V1__POD_PHASE__POD_PHASE_FAILED; return 0;
    case POD_UNKNOWN: *out = KCYCLE__V1__POD_PHASE__POD_PHASE_UNKNOWN; return 0;
    }
    return -EINVAL;
}

static int encode_labels(struct proto_holder *h, const struct kv_list *list, size_t *n,
                         Kcycle__V1__Label ***out)
{
    if (list->count == 0)
        return 0;
    Kcycle__V1__Label **ptrs = arena_alloc(h, list->count, sizeof(*ptrs));
    Kcycle__V1__Label *items = arena_alloc(h, list->count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < list->count; i++) {
        kcycle__v1__label__init(&items[i]);
        items[i].key = borrow(list->items[i].key);
        items[i].value = borrow(list->items[i].value);
        ptrs[i] = &items[i];
    }
    *out = ptrs;
    *n = list->count;
    return 0;
}

static int encode_resources(struct proto_holder *h, const struct res_list *list, size_t *n,
                            Kcycle__V1__ResourceAmount ***out)
{
    if (list->count == 0)
        return 0;
    Kcycle__V1__ResourceAmount **ptrs = arena_alloc(h, list->count, sizeof(*ptrs));
    Kcycle__V1__ResourceAmount *items = arena_alloc(h, list->count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < list->count; i++) {
        /* resource_name() is static storage, so borrowing it is safe for any lifetime. */
        const char *name = resource_name(list->items[i].id);
        if (name == NULL)
            return -EINVAL;
        kcycle__v1__resource_amount__init(&items[i]);
        items[i].name = borrow(name);
        items[i].value = list->items[i].value;
        ptrs[i] = &items[i];
    }
    *out = ptrs;
    *n = list->count;
    return 0;
}

static int encode_strings(struct proto_holder *h, char *const *strings, uint32_t count, size_t *n,
                          char ***out)
{
    if (count == 0)
        return 0;
    char **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    if (ptrs == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++)
        ptrs[i] = borrow(strings[i]);
    *out = ptrs;
    *n = count;
    return 0;
}

static int encode_requirements(struct proto_holder *h, const struct selector_requirement *reqs,
                               uint32_t count, size_t *n, Kcycle__V1__SelectorRequirement ***out)
{
    if (count == 0)
        return 0;
    Kcycle__V1__SelectorRequirement **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__SelectorRequirement *items = arena_alloc(h, count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        kcycle__v1__selector_requirement__init(&items[i]);
        items[i].key = borrow(reqs[i].key);
        int rc = encode_selector_op(reqs[i].op, &items[i].operator_);
        if (rc == 0)
            rc = encode_strings(h, reqs[i].values, reqs[i].value_count, &items[i].n_values,
                                &items[i].values);
        if (rc < 0)
            return rc;
        ptrs[i] = &items[i];
    }
    *out = ptrs;
    *n = count;
    return 0;
}

static int encode_term(struct proto_holder *h, const struct node_selector_term *term,
                       Kcycle__V1__NodeSelectorTerm *out)
{
    kcycle__v1__node_selector_term__init(out);
    int rc = encode_requirements(h, term->expressions, term->expression_count, &out->n_expressions,
                                 &out->expressions);
    if (rc == 0)
        rc = encode_requirements(h, term->fields, term->field_count, &out->n_fields, &out->fields);
    return rc;
}

static int encode_required(struct proto_holder *h, const struct node_affinity *affinity,
                           Kcycle__V1__NodeAffinity *out)
{
    uint32_t count = affinity->required_count;
    if (count == 0)
        return 0;
    Kcycle__V1__NodeSelectorTerm **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__NodeSelectorTerm *items = arena_alloc(h, count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        int rc = encode_term(h, &affinity->required[i], &items[i]);
        if (rc < 0)
            return rc;
        ptrs[i] = &items[i];
    }
    out->required = ptrs;
    out->n_required = count;
    return 0;
}

static int encode_preferred(struct proto_holder *h, const struct node_affinity *affinity,
                            Kcycle__V1__NodeAffinity *out)
{
    uint32_t count = affinity->preferred_count;
    if (count == 0)
        return 0;
    Kcycle__V1__PreferredTerm **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__PreferredTerm *items = arena_alloc(h, count, sizeof(*items));
    Kcycle__V1__NodeSelectorTerm *terms = arena_alloc(h, count, sizeof(*terms));
    if (ptrs == NULL || items == NULL || terms == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        kcycle__v1__preferred_term__init(&items[i]);
        items[i].weight = affinity->preferred[i].weight;
        int rc = encode_term(h, &affinity->preferred[i].term, &terms[i]);
        if (rc < 0)
            return rc;
        items[i].term = &terms[i];
        ptrs[i] = &items[i];
    }
    out->preferred = ptrs;
    out->n_preferred = count;
    return 0;
}

/* Absent on the wire when the pod has no node affinity at all, as in the Kubernetes object. */
static int encode_affinity(struct proto_holder *h, const struct node_affinity *affinity,
                           Kcycle__V1__NodeAffinity **out)
{
    if (!affinity->has_required && affinity->required_count == 0 && affinity->preferred_count == 0)
        return 0;
    Kcycle__V1__NodeAffinity *msg = arena_alloc(h, 1, sizeof(*msg));
    if (msg == NULL)
        return -ENOMEM;
    kcycle__v1__node_affinity__init(msg);
    msg->has_required = affinity->has_required;
    int rc = encode_required(h, affinity, msg);
    if (rc == 0)
        rc = encode_preferred(h, affinity, msg);
    if (rc == 0)
        *out = msg;
    return rc;
}

static int encode_tolerations(struct proto_holder *h, const struct pod *pod, Kcycle__V1__Pod *out)
{
    uint32_t count = pod->toleration_count;
    if (count == 0)
        return 0;
    Kcycle__V1__Toleration **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__Toleration *items = arena_alloc(h, count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        const struct toleration *tol = &pod->tolerations[i];
        if (tol->op != TOLERATION_EQUAL && tol->op != TOLERATION_EXISTS)
            return -EINVAL;
        kcycle__v1__toleration__init(&items[i]);
        items[i].key = borrow(tol->key);
        items[i].value = borrow(tol->value);
        items[i].exists = tol->op == TOLERATION_EXISTS;
        items[i].has_seconds = tol->has_seconds;
        items[i].seconds = tol->has_seconds ? tol->seconds : 0;
        int rc = encode_effect(tol->effect, true, &items[i].effect);
        if (rc < 0)
            return rc;
        ptrs[i] = &items[i];
    }
    out->tolerations = ptrs;
    out->n_tolerations = count;
    return 0;
}

static int encode_containers(struct proto_holder *h, const struct container *containers,
                             uint32_t count, size_t *n, Kcycle__V1__Container ***out)
{
    if (count == 0)
        return 0;
    Kcycle__V1__Container **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__Container *items = arena_alloc(h, count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        const struct container *c = &containers[i];
        kcycle__v1__container__init(&items[i]);
        items[i].name = borrow(c->name);
        items[i].restartable = c->restartable;
        int rc = encode_resources(h, &c->requests, &items[i].n_requests, &items[i].requests);
        if (rc == 0)
            rc = encode_resources(h, &c->limits, &items[i].n_limits, &items[i].limits);
        if (rc < 0)
            return rc;
        ptrs[i] = &items[i];
    }
    *out = ptrs;
    *n = count;
    return 0;
}

static int encode_host_ports(struct proto_holder *h, const struct pod *pod, Kcycle__V1__Pod *msg)
{
    uint32_t count = pod->host_port_count;
    if (count == 0)
        return 0;
    Kcycle__V1__HostPort **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__HostPort *items = arena_alloc(h, count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        const struct host_port *hp = &pod->host_ports[i];
        kcycle__v1__host_port__init(&items[i]);
        items[i].host_port = hp->port;
        items[i].container_port = hp->container_port;
        items[i].protocol = borrow(hp->protocol);
        items[i].host_ip = borrow(hp->host_ip);
        ptrs[i] = &items[i];
    }
    msg->host_ports = ptrs;
    msg->n_host_ports = count;
    return 0;
}

/* Only the fields the pod's model cannot show again (pod_finish derives the others). */
static int encode_used_fields(struct proto_holder *h, const struct pod *pod, Kcycle__V1__Pod *msg)
{
    uint32_t derived = POD_FIELD_HOST_PORTS | POD_FIELD_NODE_SELECTOR | POD_FIELD_NODE_AFFINITY |
                       POD_FIELD_PVC_VOLUMES | POD_FIELD_EPHEMERAL_VOLUMES | POD_FIELD_CSI_VOLUMES |
                       POD_FIELD_GCE_PD_VOLUMES | POD_FIELD_AWS_EBS_VOLUMES |
                       POD_FIELD_RBD_VOLUMES | POD_FIELD_ISCSI_VOLUMES;
    uint32_t fields = pod->fields & ~derived, count = 0;
    for (uint32_t bit = 1; bit != 0; bit <<= 1)
        count += (fields & bit) != 0 && pod_field_name(bit) != NULL;
    if (count == 0)
        return 0;
    char **names = arena_alloc(h, count, sizeof(*names));
    if (names == NULL)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t bit = 1; bit != 0; bit <<= 1)
        if ((fields & bit) != 0 && pod_field_name(bit) != NULL)
            names[n++] = (char *)pod_field_name(bit);
    msg->fields = names;
    msg->n_fields = n;
    return 0;
}

static int encode_volumes(struct proto_holder *h, const struct pod *pod, Kcycle__V1__Pod *out)
{
    uint32_t count = pod->volume_count;
    if (count == 0)
        return 0;
    Kcycle__V1__Volume **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__Volume *items = arena_alloc(h, count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        const struct volume *v = &pod->volumes[i];
        kcycle__v1__volume__init(&items[i]);
        items[i].name = borrow(v->name);
        items[i].source = (Kcycle__V1__VolumeSource)v->source;
        /* an ephemeral volume's claim is derived from the pod's name on the other side */
        items[i].claim_name = borrow(v->source == KC_VOLUME_PVC ? v->claim_name : NULL);
        items[i].read_only = v->read_only;
        items[i].disk = borrow(v->disk);
        items[i].pool = borrow(v->pool);
        items[i].monitors = borrow(v->monitors);
        ptrs[i] = &items[i];
    }
    out->volumes = ptrs;
    out->n_volumes = count;
    return 0;
}

static int encode_pod_fields(struct proto_holder *h, const struct pod *pod, Kcycle__V1__Pod *msg)
{
    msg->namespace_ = borrow(pod->namespace);
    msg->name = borrow(pod->name);
    msg->uid = borrow(pod->uid);
    msg->node_name = borrow(pod->node_name);
    msg->scheduler_name = borrow(pod->scheduler_name);
    msg->priority = pod->priority;
    msg->creation_ms = pod->creation_ms;
    msg->deleting = pod->deleting;
    msg->preempt_never = pod->preempt_never;
    msg->nominated_node_name = borrow(pod->nominated_node_name);
    msg->start_ms = pod->start_ms;
    int rc = encode_phase(pod->phase, &msg->phase);
    if (rc == 0)
        rc = encode_labels(h, &pod->labels, &msg->n_labels, &msg->labels);
    if (rc == 0)
        rc = encode_labels(h, &pod->annotations, &msg->n_annotations, &msg->annotations);
    if (rc == 0)
        rc = encode_labels(h, &pod->node_selector, &msg->n_node_selector, &msg->node_selector);
    if (rc == 0)
        rc = encode_affinity(h, &pod->affinity, &msg->affinity);
    if (rc == 0)
        rc = encode_tolerations(h, pod, msg);
    if (rc == 0)
        rc = encode_strings(h, pod->scheduling_gates, pod->scheduling_gate_count,
                            &msg->n_scheduling_gates, &msg->scheduling_gates);
    if (rc == 0)
        rc = encode_containers(h, pod->containers, pod->container_count, &msg->n_containers,
                               &msg->containers);
    if (rc == 0)
        rc = encode_containers(h, pod->init_containers, pod->init_container_count,
                               &msg->n_init_containers, &msg->init_containers);
    if (rc == 0)
        rc = encode_resources(h, &pod->overhead, &msg->n_overhead, &msg->overhead);
    if (rc == 0)
        rc = encode_host_ports(h, pod, msg);
    if (rc == 0)
        rc = encode_used_fields(h, pod, msg);
    if (rc == 0)
        rc = encode_volumes(h, pod, msg);
    msg->constraints_json = borrow(pod->constraints_json);
    msg->controller_api_version = borrow(pod->controller_api_version);
    msg->controller_kind = borrow(pod->controller_kind);
    msg->controller_name = borrow(pod->controller_name);
    return rc;
}

static int encode_taints(struct proto_holder *h, const struct node *node, Kcycle__V1__Node *out)
{
    uint32_t count = node->taint_count;
    if (count == 0)
        return 0;
    Kcycle__V1__Taint **ptrs = arena_alloc(h, count, sizeof(*ptrs));
    Kcycle__V1__Taint *items = arena_alloc(h, count, sizeof(*items));
    if (ptrs == NULL || items == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        kcycle__v1__taint__init(&items[i]);
        items[i].key = borrow(node->taints[i].key);
        items[i].value = borrow(node->taints[i].value);
        int rc = encode_effect(node->taints[i].effect, false, &items[i].effect);
        if (rc < 0)
            return rc;
        ptrs[i] = &items[i];
    }
    out->taints = ptrs;
    out->n_taints = count;
    return 0;
}

static int encode_node_fields(struct proto_holder *h, const struct node *node,
                              Kcycle__V1__Node *msg)
{
    msg->name = borrow(node->name);
    msg->uid = borrow(node->uid);
    msg->unschedulable = node->unschedulable;
    int rc = encode_labels(h, &node->labels, &msg->n_labels, &msg->labels);
    if (rc == 0)
        rc = encode_labels(h, &node->annotations, &msg->n_annotations, &msg->annotations);
    if (rc == 0)
        rc = encode_taints(h, node, msg);
    if (rc == 0)
        rc = encode_resources(h, &node->allocatable, &msg->n_allocatable, &msg->allocatable);
    return rc;
}

/* ---- encoding: entry points -------------------------------------------------------------- */

static int pod_encode(const struct pod *pod, Kcycle__V1__Pod **out)
{
    *out = NULL;
    if (pod == NULL)
        return -EINVAL;
    struct proto_holder *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    kcycle__v1__pod__init(&h->msg.pod);
    int rc = encode_pod_fields(h, pod, &h->msg.pod);
    if (rc < 0) {
        holder_free(h);
        return rc;
    }
    *out = &h->msg.pod;
    return 0;
}

static int node_encode(const struct node *node, Kcycle__V1__Node **out)
{
    *out = NULL;
    if (node == NULL)
        return -EINVAL;
    struct proto_holder *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    kcycle__v1__node__init(&h->msg.node);
    int rc = encode_node_fields(h, node, &h->msg.node);
    if (rc < 0) {
        holder_free(h);
        return rc;
    }
    *out = &h->msg.node;
    return 0;
}

Kcycle__V1__Pod *pod_to_proto(const struct pod *pod)
{
    Kcycle__V1__Pod *msg;
    int rc = pod_encode(pod, &msg);
    if (rc < 0)
        errno = -rc;
    return msg;
}

void pod_proto_free(Kcycle__V1__Pod *msg)
{
    if (msg != NULL)
        holder_free(holder_of(msg));
}

Kcycle__V1__Node *node_to_proto(const struct node *node)
{
    Kcycle__V1__Node *msg;
    int rc = node_encode(node, &msg);
    if (rc < 0)
        errno = -rc;
    return msg;
}

void node_proto_free(Kcycle__V1__Node *msg)
{
    if (msg != NULL)
        holder_free(holder_of(msg));
}

Kcycle__V1__CustomObject *custom_object_to_proto(const struct sim_object *object)
{
    if (object == NULL) {
        errno = EINVAL;
        return NULL;
    }
    struct proto_holder *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    Kcycle__V1__CustomObject *msg = &h->msg.object;
    kcycle__v1__custom_object__init(msg);
    msg->kind = borrow(object->kind);
    msg->namespace_ = borrow(object->namespace);
    msg->name = borrow(object->name);
    msg->json = borrow(object->json);
    return msg;
}

void custom_object_proto_free(Kcycle__V1__CustomObject *msg)
{
    if (msg != NULL)
        holder_free(holder_of(msg));
}

static int pack_message(const ProtobufCMessage *msg, uint8_t **out, size_t *len)
{
    size_t size = protobuf_c_message_get_packed_size(msg);
    /* An all-default message packs to nothing; malloc(0) may return NULL. */
    uint8_t *buf = malloc(size > 0 ? size : 1);
    if (buf == NULL)
        return -ENOMEM;
    *len = protobuf_c_message_pack(msg, buf);
    *out = buf;
    return 0;
}

int pod_to_proto_bytes(const struct pod *pod, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    Kcycle__V1__Pod *msg;
    int rc = pod_encode(pod, &msg);
    if (rc == 0)
        rc = pack_message(&msg->base, out, len);
    pod_proto_free(msg);
    return rc;
}

int node_to_proto_bytes(const struct node *node, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    Kcycle__V1__Node *msg;
    int rc = node_encode(node, &msg);
    if (rc == 0)
        rc = pack_message(&msg->base, out, len);
    node_proto_free(msg);
    return rc;
}

/* ---- decoding: errors and paths ---------------------------------------------------------- */

/* Which object is being decoded, for messages like "pod team-a/web-0: containers[1].name: ...".
 * Wire strings are bounded in messages so a hostile name cannot push the field out. */
struct decoder {
    const char *kind;
    /* the object's name for a message, written from msg only when an error needs it: two
     * pods decoded per pod scheduled in a plugin host made an eager snprintf a cost per pod */
    void (*describe)(const void *msg, char *buf, size_t size);
    const void *msg;
    struct kc_error *err;
};

enum { OBJECT_NAME_SIZE = 300 };

enum { PATH_SIZE = 160 };

static int decode_error(const struct decoder *d, int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int decode_error(const struct decoder *d, int code, const char *path, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    char object[OBJECT_NAME_SIZE];
    d->describe(d->msg, object, sizeof(object));
    return kc_error_set(d->err, code, "%s %s: %s: %s", d->kind, object, path, detail);
}

static int no_memory(const struct decoder *d, const char *path)
{
    return decode_error(d, -ENOMEM, path, "out of memory");
}

/* Append text at *used, keeping room for the NUL; false once buf is full. */
static bool path_append(char *buf, size_t *used, const char *text, size_t len)
{
    size_t room = PATH_SIZE - 1 - *used;
    size_t n = len < room ? len : room;
    memcpy(buf + *used, text, n);
    *used += n;
    return len <= room;
}

/* base.field[index] (index < 0: no index); base or field may be "". Cut with "..." past
 * PATH_SIZE. Built for every container of every pod a sync carries, so without stdio:
 * snprintf here was a tenth of the time a scheduler took to apply a large sync. */
static const char *path_join(char *buf, const char *base, const char *field, int64_t index)
{
    size_t used = 0;
    bool fits = path_append(buf, &used, base, strlen(base));
    if (fits && base[0] != '\0' && field[0] != '\0')
        fits = path_append(buf, &used, ".", 1);
    if (fits)
        fits = path_append(buf, &used, field, strlen(field));
    if (fits && index >= 0) {
        char digits[24];
        size_t n = sizeof(digits);
        uint64_t v = (uint64_t)index;
        digits[--n] = ']';
        do
            digits[--n] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        digits[--n] = '[';
        fits = path_append(buf, &used, digits + n, sizeof(digits) - n);
    }
    buf[used] = '\0';
    if (!fits)
        memcpy(buf + PATH_SIZE - 4, "...", 4);
    return buf;
}

/* A path in parts, made text only when an error names it: a pod's containers and their
 * resources are decoded twice per pod in a plugin host, and building base.field[index] and
 * .requests[i] on success was most of the cost of their decoders (docs/benchmarks.md).
 * The text is path_join(path_join(base, field, index), sub, -1), or without sub when "". */
struct path_parts {
    const char *base;
    const char *field;
    int64_t index;
    const char *sub;
};

static const char *path_text(char *buf, const struct path_parts *p)
{
    if (p->sub[0] == '\0')
        return path_join(buf, p->base, p->field, p->index);
    char inner[PATH_SIZE];
    return path_join(buf, path_join(inner, p->base, p->field, p->index), p->sub, -1);
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* A repeated field's length as the model's uint32 count; a hand-built message may also claim
 * entries it does not have. */
static int decode_count(const struct decoder *d, const char *path, size_t n, const void *items,
                        uint32_t *count)
{
    if (n > UINT32_MAX)
        return decode_error(d, -EINVAL, path, "%zu entries is more than the model holds", n);
    if (n > 0 && items == NULL)
        return decode_error(d, -EINVAL, path, "%zu entries claimed, none present", n);
    *count = (uint32_t)n;
    return 0;
}

static int missing_entry(const struct decoder *d, const char *base, const char *field, uint32_t i)
{
    char path[PATH_SIZE];
    return decode_error(d, -EINVAL, path_join(path, base, field, i), "entry is missing");
}

static int copy_string(const struct decoder *d, const char *path, const char *s, char **slot)
{
    char *copy = strdup(or_empty(s));
    if (copy == NULL)
        return no_memory(d, path);
    free(*slot);
    *slot = copy;
    return 0;
}

/* proto3 cannot tell "" from absent; the model keeps NULL for absent optional strings. */
static int copy_optional_string(const struct decoder *d, const char *path, const char *s,
                                char **slot)
{
    if (s == NULL || s[0] == '\0')
        return 0;
    return copy_string(d, path, s, slot);
}

/* ---- decoding: enums --------------------------------------------------------------------- */

/* protobuf-c stores any int32 it reads into an enum field, so every enum is checked here. */
static int decode_effect(const struct decoder *d, const char *path, Kcycle__V1__TaintEffect in,
                         bool allow_unspecified, kc_taint_effect *out)
{
    switch ((int)in) {
    case KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_UNSPECIFIED:
        if (!allow_unspecified)
            return decode_error(
                d, -EINVAL, path,
                "is required (TAINT_EFFECT_NO_SCHEDULE, _PREFER_NO_SCHEDULE or _NO_EXECUTE)");
        *out = (kc_taint_effect)0;
        return 0;
    case KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE: *out = KC_TAINT_NO_SCHEDULE; return 0;
    case KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE:
        *out = KC_TAINT_PREFER_NO_SCHEDULE;
        return 0;
    case KCYCLE__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE: *out = KC_TAINT_NO_EXECUTE; return 0;
    default: break;
    }
    return decode_error(d, -EINVAL, path, "%d is not a kcycle.v1.TaintEffect (0..3)", (int)in);
}

static int decode_selector_op(const struct decoder *d, const char *path,
                              Kcycle__V1__SelectorOperator in, enum selector_op *out)
{
    switch ((int)in) {
    case KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN: *out = SELECTOR_IN; return 0;
    case KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN: *out = SELECTOR_NOT_IN; return 0;
    case KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS: *out = SELECTOR_EXISTS; return 0;
    case KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST:
        *out = SELECTOR_DOES_NOT_EXIST;
        return 0;
    case KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT: *out = SELECTOR_GT; return 0;
    case KCYCLE__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT: *out = SELECTOR_LT; return 0;
    default: break;
    }
    return decode_error(d, -EINVAL, path, "%d is not a kcycle.v1.SelectorOperator (1..6)", (int)in);
}

static int decode_phase(const struct decoder *d, Kcycle__V1__PodPhase in, enum pod_phase *out)
{
    switch ((int)in) {
    case KCYCLE__V1__POD_PHASE__POD_PHASE_UNSPECIFIED: /* an unset phase is a new pod */
    case KCYCLE__V1__POD_PHASE__POD_PHASE_PENDING: *out = POD_PENDING; return 0;
    case KCYCLE__V1__POD_PHASE__POD_PHASE_RUNNING: *out = POD_RUNNING; return 0;
    case KCYCLE__V1__POD_PHASE__POD_PHASE_SUCCEEDED: *out = POD_SUCCEEDED; return 0;
    case KCYCLE__V1__POD_PHASE__POD_PHASE_FAILED: *out = POD_FAILED; return 0;
    case KCYCLE__V1__POD_PHASE__POD_PHASE_UNKNOWN: *out = POD_UNKNOWN; return 0;
    default: break;
    }
    return decode_error(d, -EINVAL, "phase", "%d is not a kcycle.v1.PodPhase (0..5)", (int)in);
}

/* ---- decoding: lists --------------------------------------------------------------------- */

static int compare_kv(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

/* Labels arrive in any order (a sender in another language iterates a hash map); sorting once
 * is cheaper than kv_list_set per entry, and a repeated key is a sender bug worth reporting. */
static int decode_labels(const struct decoder *d, const char *field, Kcycle__V1__Label *const *in,
                         size_t n, struct kv_list *out)
{
    uint32_t count;
    int rc = decode_count(d, field, n, in, &count);
    if (rc < 0 || count == 0)
        return rc;
    out->items = calloc(count, sizeof(*out->items));
    if (out->items == NULL)
        return no_memory(d, field);
    for (uint32_t i = 0; i < count; i++) {
        if (in[i] == NULL)
            return missing_entry(d, "", field, i);
        struct kv *item = &out->items[i];
        item->key = strdup(or_empty(in[i]->key));
        item->value = strdup(or_empty(in[i]->value));
        out->count = i + 1;
        if (item->key == NULL || item->value == NULL)
            return no_memory(d, field);
    }
    qsort(out->items, count, sizeof(*out->items), compare_kv);
    for (uint32_t i = 1; i < count; i++)
        if (strcmp(out->items[i - 1].key, out->items[i].key) == 0)
            return decode_error(d, -EINVAL, field, "key \"%.100s\" appears more than once",
                                out->items[i].key);
    return 0;
}

static int compare_res(const void *a, const void *b)
{
    kc_resource x = ((const struct res_amount *)a)->id, y = ((const struct res_amount *)b)->id;
    return (x > y) - (x < y);
}

/* where[i] of a list decode_resources reads, for its errors */
static const char *resource_path(char *buf, const struct path_parts *where, uint32_t i)
{
    char path[PATH_SIZE];
    return path_join(buf, path_text(path, where), "", i);
}

static int decode_resources(const struct decoder *d, const struct path_parts *where,
                            Kcycle__V1__ResourceAmount *const *in, size_t n, struct res_list *out)
{
    char path[PATH_SIZE], at[PATH_SIZE];
    uint32_t count;
    if (n > UINT32_MAX || (n > 0 && in == NULL)) /* decode_count's errors */
        return decode_count(d, path_text(path, where), n, in, &count);
    count = (uint32_t)n;
    if (count == 0)
        return 0;
    out->items = calloc(count, sizeof(*out->items));
    if (out->items == NULL)
        return no_memory(d, path_text(path, where));
    for (uint32_t i = 0; i < count; i++) {
        if (in[i] == NULL)
            return decode_error(d, -EINVAL, resource_path(at, where, i), "entry is missing");
        const char *name = or_empty(in[i]->name);
        kc_resource id = resource_intern(name);
        if (id < 0)
            return decode_error(d, -EINVAL, resource_path(at, where, i),
                                "resource name \"%.100s\" is empty or one too many "
                                "(at most %d distinct names)",
                                name, KC_RESOURCE_MAX);
        if (in[i]->value < 0)
            return decode_error(d, -EINVAL, resource_path(at, where, i),
                                "%.100s must not be negative", name);
        /* The model keeps no zero amounts; a zero on the wire means the same as none. */
        if (in[i]->value == 0)
            continue;
        out->items[out->count].id = id;
        out->items[out->count].value = in[i]->value;
        out->count++;
    }
    qsort(out->items, out->count, sizeof(*out->items), compare_res);
    for (uint32_t i = 1; i < out->count; i++)
        if (out->items[i - 1].id == out->items[i].id)
            return decode_error(d, -EINVAL, path_text(path, where),
                                "resource \"%.100s\" appears more than once",
                                resource_name(out->items[i].id));
    return 0;
}

static int decode_strings(const struct decoder *d, const char *path, char *const *in, size_t n,
                          char ***out, uint32_t *out_count)
{
    uint32_t count;
    int rc = decode_count(d, path, n, in, &count);
    if (rc < 0 || count == 0)
        return rc;
    *out = calloc(count, sizeof(**out));
    if (*out == NULL)
        return no_memory(d, path);
    *out_count = count;
    for (uint32_t i = 0; i < count; i++)
        if (((*out)[i] = strdup(or_empty(in[i]))) == NULL)
            return no_memory(d, path);
    return 0;
}

/* ---- decoding: node affinity ------------------------------------------------------------- */

static int decode_requirement(const struct decoder *d, const char *path,
                              const Kcycle__V1__SelectorRequirement *in,
                              struct selector_requirement *out)
{
    char at[PATH_SIZE];
    if (in->key == NULL || in->key[0] == '\0')
        return decode_error(d, -EINVAL, path_join(at, path, "key", -1), "is required");
    int rc = copy_string(d, path, in->key, &out->key);
    if (rc == 0)
        rc = decode_selector_op(d, path_join(at, path, "operator", -1), in->operator_, &out->op);
    if (rc == 0)
        rc = decode_strings(d, path_join(at, path, "values", -1), in->values, in->n_values,
                            &out->values, &out->value_count);
    return rc;
}

static int decode_requirements(const struct decoder *d, const char *base, const char *field,
                               Kcycle__V1__SelectorRequirement *const *in, size_t n,
                               struct selector_requirement **out, uint32_t *out_count)
{
    char path[PATH_SIZE];
    uint32_t count;
    int rc = decode_count(d, path_join(path, base, field, -1), n, in, &count);
    if (rc < 0 || count == 0)
        return rc;
    *out = calloc(count, sizeof(**out));
    if (*out == NULL)
        return no_memory(d, path);
    *out_count = count;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        if (in[i] == NULL)
            return missing_entry(d, base, field, i);
        rc = decode_requirement(d, path_join(path, base, field, i), in[i], &(*out)[i]);
    }
    return rc;
}

/* An absent term decodes as an empty one, which matches nothing (as the model's reader). */
static int decode_term(const struct decoder *d, const char *path,
                       const Kcycle__V1__NodeSelectorTerm *in, struct node_selector_term *out)
{
    if (in == NULL)
        return 0;
    int rc = decode_requirements(d, path, "expressions", in->expressions, in->n_expressions,
                                 &out->expressions, &out->expression_count);
    if (rc == 0)
        rc = decode_requirements(d, path, "fields", in->fields, in->n_fields, &out->fields,
                                 &out->field_count);
    return rc;
}

static int decode_required(const struct decoder *d, const Kcycle__V1__NodeAffinity *in,
                           struct node_affinity *out)
{
    char path[PATH_SIZE];
    uint32_t count;
    int rc = decode_count(d, "affinity.required", in->n_required, in->required, &count);
    if (rc < 0 || count == 0)
        return rc;
    out->required = calloc(count, sizeof(*out->required));
    if (out->required == NULL)
        return no_memory(d, "affinity.required");
    out->required_count = count;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        if (in->required[i] == NULL)
            return missing_entry(d, "affinity", "required", i);
        rc = decode_term(d, path_join(path, "affinity", "required", i), in->required[i],
                         &out->required[i]);
    }
    return rc;
}

static int decode_preferred(const struct decoder *d, const Kcycle__V1__NodeAffinity *in,
                            struct node_affinity *out)
{
    char path[PATH_SIZE], at[PATH_SIZE];
    uint32_t count;
    int rc = decode_count(d, "affinity.preferred", in->n_preferred, in->preferred, &count);
    if (rc < 0 || count == 0)
        return rc;
    out->preferred = calloc(count, sizeof(*out->preferred));
    if (out->preferred == NULL)
        return no_memory(d, "affinity.preferred");
    out->preferred_count = count;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        const Kcycle__V1__PreferredTerm *p = in->preferred[i];
        if (p == NULL)
            return missing_entry(d, "affinity", "preferred", i);
        path_join(path, "affinity", "preferred", i);
        /* kube-scheduler's range; the model's scorer relies on it. */
        if (p->weight < 1 || p->weight > 100)
            return decode_error(d, -EINVAL, path_join(at, path, "weight", -1),
                                "%d is out of range 1..100", (int)p->weight);
        out->preferred[i].weight = p->weight;
        rc = decode_term(d, path_join(at, path, "term", -1), p->term, &out->preferred[i].term);
    }
    return rc;
}

static int decode_affinity(const struct decoder *d, const Kcycle__V1__NodeAffinity *in,
                           struct node_affinity *out)
{
    if (in == NULL)
        return 0;
    out->has_required = in->has_required != 0;
    int rc = decode_required(d, in, out);
    if (rc == 0)
        rc = decode_preferred(d, in, out);
    return rc;
}

/* ---- decoding: pods ---------------------------------------------------------------------- */

static int decode_toleration(const struct decoder *d, const char *path,
                             const Kcycle__V1__Toleration *in, struct toleration *out)
{
    char at[PATH_SIZE];
    int rc = copy_string(d, path, in->key, &out->key);
    if (rc == 0)
        rc = copy_string(d, path, in->value, &out->value);
    if (rc == 0)
        rc = decode_effect(d, path_join(at, path, "effect", -1), in->effect, true, &out->effect);
    out->op = in->exists ? TOLERATION_EXISTS : TOLERATION_EQUAL;
    out->has_seconds = in->has_seconds != 0;
    out->seconds = out->has_seconds ? in->seconds : 0;
    return rc;
}

static int decode_tolerations(const struct decoder *d, const Kcycle__V1__Pod *in, struct pod *pod)
{
    uint32_t count;
    int rc = decode_count(d, "tolerations", in->n_tolerations, in->tolerations, &count);
    if (rc < 0 || count == 0)
        return rc;
    pod->tolerations = calloc(count, sizeof(*pod->tolerations));
    if (pod->tolerations == NULL)
        return no_memory(d, "tolerations");
    pod->toleration_count = count;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        char path[PATH_SIZE];
        if (in->tolerations[i] == NULL)
            return missing_entry(d, "", "tolerations", i);
        rc = decode_toleration(d, path_join(path, "", "tolerations", i), in->tolerations[i],
                               &pod->tolerations[i]);
    }
    return rc;
}

static int decode_gates(const struct decoder *d, const Kcycle__V1__Pod *in, struct pod *pod)
{
    int rc = decode_strings(d, "scheduling_gates", in->scheduling_gates, in->n_scheduling_gates,
                            &pod->scheduling_gates, &pod->scheduling_gate_count);
    for (uint32_t i = 0; rc == 0 && i < pod->scheduling_gate_count; i++) {
        char path[PATH_SIZE];
        /* A gate is lifted by removing its name; an unnamed gate could never be lifted. */
        if (pod->scheduling_gates[i][0] == '\0')
            rc = decode_error(d, -EINVAL, path_join(path, "", "scheduling_gates", i),
                              "name must not be empty");
    }
    return rc;
}

/* field[index] of the pod */
static int decode_container(const struct decoder *d, const char *field, uint32_t index,
                            const Kcycle__V1__Container *in, struct container *out)
{
    int rc = 0;
    if (in->name != NULL && in->name[0] != '\0') { /* copy_optional_string, path made if needed */
        char path[PATH_SIZE];
        char *copy = strdup(in->name);
        if (copy == NULL)
            return no_memory(d, path_join(path, "", field, index));
        free(out->name);
        out->name = copy;
    }
    struct path_parts where = {"", field, index, "requests"};
    rc = decode_resources(d, &where, in->requests, in->n_requests, &out->requests);
    if (rc == 0) {
        where.sub = "limits";
        rc = decode_resources(d, &where, in->limits, in->n_limits, &out->limits);
    }
    out->restartable = in->restartable != 0;
    return rc;
}

static int decode_containers(const struct decoder *d, const char *field,
                             Kcycle__V1__Container *const *in, size_t n, struct container **out,
                             uint32_t *out_count)
{
    uint32_t count;
    int rc = decode_count(d, field, n, in, &count);
    if (rc < 0 || count == 0)
        return rc;
    *out = calloc(count, sizeof(**out));
    if (*out == NULL)
        return no_memory(d, field);
    *out_count = count;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        if (in[i] == NULL)
            return missing_entry(d, "", field, i);
        rc = decode_container(d, field, i, in[i], &(*out)[i]);
    }
    return rc;
}

static int decode_host_ports(const struct decoder *d, const Kcycle__V1__Pod *in, struct pod *pod)
{
    uint32_t count;
    int rc = decode_count(d, "host_ports", in->n_host_ports, in->host_ports, &count);
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        const Kcycle__V1__HostPort *hp = in->host_ports[i];
        char path[PATH_SIZE];
        if (hp == NULL)
            return missing_entry(d, "", "host_ports", i);
        if (hp->host_port < 1 || hp->host_port > 65535)
            return decode_error(d, -EINVAL, path_join(path, "", "host_ports", i),
                                "host_port %d is out of range 1..65535", hp->host_port);
        if (host_port_append(&pod->host_ports, &pod->host_port_count, hp->host_ip,
                             hp->protocol, hp->host_port, hp->container_port) < 0)
            return no_memory(d, "host_ports");
    }
    return rc;
}

static int decode_volume(const struct decoder *d, const char *path, const Kcycle__V1__Volume *in,
                         struct volume *out)
{
    if ((int)in->source < KC_VOLUME_OTHER || (int)in->source > KC_VOLUME_CSI)
        return decode_error(d, -EINVAL, path, "unknown volume source %d", (int)in->source);
    out->source = (kc_volume_source)in->source;
    out->read_only = in->read_only != 0;
    int rc = copy_optional_string(d, path, in->name, &out->name);
    if (rc == 0 && out->source == KC_VOLUME_PVC)
        rc = copy_optional_string(d, path, in->claim_name, &out->claim_name);
    if (rc == 0)
        rc = copy_optional_string(d, path, in->disk, &out->disk);
    if (rc == 0)
        rc = copy_optional_string(d, path, in->pool, &out->pool);
    if (rc == 0)
        rc = copy_optional_string(d, path, in->monitors, &out->monitors);
    return rc;
}

static int decode_volumes(const struct decoder *d, const Kcycle__V1__Pod *in, struct pod *pod)
{
    uint32_t count;
    int rc = decode_count(d, "volumes", in->n_volumes, in->volumes, &count);
    if (rc < 0 || count == 0)
        return rc;
    pod->volumes = calloc(count, sizeof(*pod->volumes));
    if (pod->volumes == NULL)
        return no_memory(d, "volumes");
    pod->volume_count = count;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        char path[PATH_SIZE];
        if (in->volumes[i] == NULL)
            return missing_entry(d, "", "volumes", i);
        rc = decode_volume(d, path_join(path, "", "volumes", i), in->volumes[i], &pod->volumes[i]);
    }
    return rc;
}

static void decode_used_fields(const Kcycle__V1__Pod *in, struct pod *pod)
{
    for (size_t i = 0; i < in->n_fields; i++)
        pod->fields |= pod_field_by_name(in->fields[i]);
}

static int decode_pod_fields(const struct decoder *d, const Kcycle__V1__Pod *in, struct pod *pod)
{
    /* Empty namespace, uid and scheduler name are left NULL for pod_finish to default. */
    int rc = copy_string(d, "name", in->name, &pod->name);
    if (rc == 0)
        rc = copy_optional_string(d, "namespace", in->namespace_, &pod->namespace);
    if (rc == 0)
        rc = copy_optional_string(d, "uid", in->uid, &pod->uid);
    if (rc == 0)
        rc = copy_optional_string(d, "node_name", in->node_name, &pod->node_name);
    if (rc == 0)
        rc = copy_optional_string(d, "scheduler_name", in->scheduler_name, &pod->scheduler_name);
    pod->priority = in->priority;
    pod->creation_ms = in->creation_ms;
    pod->deleting = in->deleting != 0;
    pod->preempt_never = in->preempt_never != 0;
    pod->start_ms = in->start_ms;
    if (rc == 0)
        rc = copy_optional_string(d, "nominated_node_name", in->nominated_node_name,
                                  &pod->nominated_node_name);
    if (rc == 0)
        rc = decode_phase(d, in->phase, &pod->phase);
    if (rc == 0)
        rc = decode_labels(d, "labels", in->labels, in->n_labels, &pod->labels);
    if (rc == 0)
        rc = decode_labels(d, "annotations", in->annotations, in->n_annotations, &pod->annotations);
    if (rc == 0)
        rc = decode_labels(d, "node_selector", in->node_selector, in->n_node_selector,
                           &pod->node_selector);
    if (rc == 0)
        rc = decode_affinity(d, in->affinity, &pod->affinity);
    if (rc == 0)
        rc = decode_tolerations(d, in, pod);
    if (rc == 0)
        rc = decode_gates(d, in, pod);
    if (rc == 0)
        rc = decode_containers(d, "containers", in->containers, in->n_containers, &pod->containers,
                               &pod->container_count);
    if (rc == 0)
        rc = decode_containers(d, "init_containers", in->init_containers, in->n_init_containers,
                               &pod->init_containers, &pod->init_container_count);
    if (rc == 0)
        rc = decode_resources(d, &(struct path_parts){"", "overhead", -1, ""}, in->overhead,
                              in->n_overhead, &pod->overhead);
    if (rc == 0)
        rc = decode_host_ports(d, in, pod);
    if (rc == 0)
        decode_used_fields(in, pod);
    if (rc == 0)
        rc = decode_volumes(d, in, pod);
    if (rc == 0)
        rc = copy_optional_string(d, "constraints_json", in->constraints_json,
                                  &pod->constraints_json);
    if (rc == 0)
        rc = copy_optional_string(d, "controller_api_version", in->controller_api_version,
                                  &pod->controller_api_version);
    if (rc == 0)
        rc = copy_optional_string(d, "controller_kind", in->controller_kind,
                                  &pod->controller_kind);
    if (rc == 0)
        rc = copy_optional_string(d, "controller_name", in->controller_name,
                                  &pod->controller_name);
    return rc;
}

static void describe_pod(const void *msg, char *buf, size_t size)
{
    const Kcycle__V1__Pod *pod = msg;
    const char *ns = or_empty(pod->namespace_), *name = or_empty(pod->name);
    snprintf(buf, size, "%.100s/%.150s", ns[0] != '\0' ? ns : "default",
             name[0] != '\0' ? name : "(unnamed)");
}

int pod_from_proto(const Kcycle__V1__Pod *msg, struct pod **out, struct kc_error *err)
{
    *out = NULL;
    if (msg == NULL)
        return kc_error_set(err, -EINVAL, "pod: no message to decode");
    struct decoder d = {.kind = "pod", .describe = describe_pod, .msg = msg, .err = err};
    const char *name = or_empty(msg->name);
    if (name[0] == '\0')
        return decode_error(&d, -EINVAL, "name", "is required");
    struct pod *pod = pod_new();
    if (pod == NULL)
        return no_memory(&d, "pod");
    int rc = decode_pod_fields(&d, msg, pod);
    /* The name is set, so pod_finish can only run out of memory. */
    if (rc == 0 && pod_finish(pod) < 0)
        rc = no_memory(&d, "request");
    if (rc < 0) {
        pod_free(pod);
        return rc;
    }
    *out = pod;
    return 0;
}

/* protobuf-c cannot say why unpacking failed; out of memory is the unlikely reading. */
static int undecodable(struct kc_error *err, const char *kind, const char *type, size_t len)
{
    return kc_error_set(err, -EBADMSG,
                        "%s: %zu bytes do not decode as a %s message "
                        "(truncated or corrupt)",
                        kind, len, type);
}

/* protobuf-c reads nothing from an empty buffer, but do not hand it NULL. */
static const uint8_t *nonnull_data(const uint8_t *data)
{
    static const uint8_t empty[1];
    return data != NULL ? data : empty;
}

int pod_from_proto_bytes(const uint8_t *data, size_t len, struct pod **out, struct kc_error *err)
{
    *out = NULL;
    if (data == NULL && len > 0)
        return kc_error_set(err, -EINVAL, "pod: no data");
    Kcycle__V1__Pod *msg = kcycle__v1__pod__unpack(NULL, len, nonnull_data(data));
    if (msg == NULL)
        return undecodable(err, "pod", "kcycle.v1.Pod", len);
    int rc = pod_from_proto(msg, out, err);
    kcycle__v1__pod__free_unpacked(msg, NULL);
    return rc;
}

/* ---- decoding: nodes --------------------------------------------------------------------- */

static int decode_taints(const struct decoder *d, const Kcycle__V1__Node *in, struct node *node)
{
    uint32_t count;
    int rc = decode_count(d, "taints", in->n_taints, in->taints, &count);
    if (rc < 0 || count == 0)
        return rc;
    node->taints = calloc(count, sizeof(*node->taints));
    if (node->taints == NULL)
        return no_memory(d, "taints");
    node->taint_count = count;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        char path[PATH_SIZE], at[PATH_SIZE];
        const Kcycle__V1__Taint *t = in->taints[i];
        if (t == NULL)
            return missing_entry(d, "", "taints", i);
        path_join(path, "", "taints", i);
        rc = copy_string(d, path, t->key, &node->taints[i].key);
        if (rc == 0)
            rc = copy_string(d, path, t->value, &node->taints[i].value);
        if (rc == 0)
            rc = decode_effect(d, path_join(at, path, "effect", -1), t->effect, false,
                               &node->taints[i].effect);
    }
    return rc;
}

static int decode_node_fields(const struct decoder *d, const Kcycle__V1__Node *in,
                              struct node *node)
{
    int rc = copy_string(d, "name", in->name, &node->name);
    /* As node_from_tree: a node without a uid is known by its name. */
    if (rc == 0)
        rc = copy_string(d, "uid", or_empty(in->uid)[0] != '\0' ? in->uid : in->name, &node->uid);
    node->unschedulable = in->unschedulable != 0;
    if (rc == 0)
        rc = decode_labels(d, "labels", in->labels, in->n_labels, &node->labels);
    if (rc == 0)
        rc =
            decode_labels(d, "annotations", in->annotations, in->n_annotations, &node->annotations);
    if (rc == 0)
        rc = decode_taints(d, in, node);
    if (rc == 0)
        rc = decode_resources(d, &(struct path_parts){"", "allocatable", -1, ""},
                              in->allocatable, in->n_allocatable, &node->allocatable);
    return rc;
}

static void describe_node(const void *msg, char *buf, size_t size)
{
    const char *name = or_empty(((const Kcycle__V1__Node *)msg)->name);
    snprintf(buf, size, "%.200s", name[0] != '\0' ? name : "(unnamed)");
}

int node_from_proto(const Kcycle__V1__Node *msg, struct node **out, struct kc_error *err)
{
    *out = NULL;
    if (msg == NULL)
        return kc_error_set(err, -EINVAL, "node: no message to decode");
    struct decoder d = {.kind = "node", .describe = describe_node, .msg = msg, .err = err};
    const char *name = or_empty(msg->name);
    if (name[0] == '\0')
        return decode_error(&d, -EINVAL, "name", "is required");
    struct node *node = node_new();
    if (node == NULL)
        return no_memory(&d, "node");
    int rc = decode_node_fields(&d, msg, node);
    if (rc < 0) {
        node_free(node);
        return rc;
    }
    *out = node;
    return 0;
}

int node_from_proto_bytes(const uint8_t *data, size_t len, struct node **out, struct kc_error *err)
{
    *out = NULL;
    if (data == NULL && len > 0)
        return kc_error_set(err, -EINVAL, "node: no data");
    Kcycle__V1__Node *msg = kcycle__v1__node__unpack(NULL, len, nonnull_data(data));
    if (msg == NULL)
        return undecodable(err, "node", "kcycle.v1.Node", len);
    int rc = node_from_proto(msg, out, err);
    kcycle__v1__node__free_unpacked(msg, NULL);
    return rc;
}

/* ---- decoding: custom objects ------------------------------------------------------------ */

void custom_object_clear(struct sim_object *object)
{
    if (object == NULL)
        return;
    free(object->kind);
    free(object->namespace);
    free(object->name);
    free(object->json);
    memset(object, 0, sizeof(*object));
}

static void describe_custom_object(const void *msg, char *buf, size_t size)
{
    const Kcycle__V1__CustomObject *object = msg;
    const char *kind = or_empty(object->kind), *ns = or_empty(object->namespace_);
    const char *name = or_empty(object->name);
    snprintf(buf, size, "%.60s %.100s%s%.100s", kind[0] != '\0' ? kind : "(no kind)", ns,
             ns[0] != '\0' ? "/" : "", name[0] != '\0' ? name : "(unnamed)");
}

int custom_object_from_proto(const Kcycle__V1__CustomObject *msg, struct sim_object *out,
                             struct kc_error *err)
{
    memset(out, 0, sizeof(*out));
    if (msg == NULL)
        return kc_error_set(err, -EINVAL, "custom object: no message to decode");
    const char *kind = or_empty(msg->kind), *ns = or_empty(msg->namespace_);
    const char *name = or_empty(msg->name);
    struct decoder d = {
        .kind = "custom object", .describe = describe_custom_object, .msg = msg, .err = err};
    if (kind[0] == '\0')
        return decode_error(&d, -EINVAL, "kind", "is required");
    if (name[0] == '\0')
        return decode_error(&d, -EINVAL, "name", "is required");
    int rc = copy_string(&d, "kind", kind, &out->kind);
    if (rc == 0)
        rc = copy_optional_string(&d, "namespace", ns, &out->namespace);
    if (rc == 0)
        rc = copy_string(&d, "name", name, &out->name);
    if (rc == 0)
        rc = copy_string(&d, "json", msg->json, &out->json);
    if (rc < 0)
        custom_object_clear(out);
    return rc;
}
