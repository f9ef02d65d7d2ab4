/* Fuzz target for the protobuf conversion (runtime/core/proto_convert.c) and every message kind
 * of proto/kcycle/v1: the first byte picks a kind, the rest are its bytes as they would arrive
 * from a plugin host, a scheduler or the bridge. Every pod and node a message carries goes
 * through pod_from_proto / node_from_proto, and what decodes must survive the trip back: the
 * object encoded again and decoded again encodes to the same bytes. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bridge.pb-c.h"
#include "fuzz.h"
#include "roundtrip.h"
#include "model.h"
#include "objects.pb-c.h"
#include "plugin.pb-c.h"
#include "proto_convert.h"
#include "simfile.h"

static void check_refusal(int rc, const void *out, const struct kc_error *err, const char *what)
{
    fuzz_check(out == NULL, what, "failed but returned an object");
    fuzz_check(rc == -EINVAL || rc == -EBADMSG || rc == -ENOMEM, what,
               "failed with an undocumented code");
    fuzz_check(err->message[0] != '\0', what, "failed without a message");
}

static void try_pod(const Kcycle__V1__Pod *msg)
{
    if (msg == NULL)
        return;
    struct pod *pod = NULL;
    struct kc_error err = {{0}};
    int rc = pod_from_proto(msg, &pod, &err);
    if (rc != 0) {
        check_refusal(rc, pod, &err, "pod_from_proto");
        return;
    }
    fuzz_check(pod->uid != NULL && pod->name != NULL && pod->namespace != NULL, "pod_from_proto",
               "a pod without uid, name or namespace");
    for (uint32_t i = 1; i < pod->labels.count; i++)
        fuzz_check(strcmp(pod->labels.items[i - 1].key, pod->labels.items[i].key) < 0,
                   "pod_from_proto", "labels not sorted and unique");
    pod_round_trip(pod, true);
    pod_free(pod);
}

static void try_node(const Kcycle__V1__Node *msg)
{
    if (msg == NULL)
        return;
    struct node *node = NULL;
    struct kc_error err = {{0}};
    int rc = node_from_proto(msg, &node, &err);
    if (rc != 0) {
        check_refusal(rc, node, &err, "node_from_proto");
        return;
    }
    fuzz_check(node->name != NULL, "node_from_proto", "a node without a name");
    for (uint32_t i = 1; i < node->allocatable.count; i++)
        fuzz_check(node->allocatable.items[i - 1].id < node->allocatable.items[i].id,
                   "node_from_proto", "allocatable not sorted and unique");
    node_round_trip(node, true);
    node_free(node);
}

static void try_object(const Kcycle__V1__CustomObject *msg)
{
    if (msg == NULL)
        return;
    struct sim_object obj;
    struct kc_error err = {{0}};
    int rc = custom_object_from_proto(msg, &obj, &err);
    if (rc != 0) {
        fuzz_check(err.message[0] != '\0', "custom_object_from_proto", "failed without a message");
        return;
    }
    fuzz_check(obj.kind != NULL && obj.name != NULL && obj.json != NULL,
               "custom_object_from_proto", "a field missing");
    fuzz_check(obj.namespace == NULL || obj.namespace[0] != '\0', "custom_object_from_proto",
               "an empty namespace not made NULL");
    Kcycle__V1__CustomObject *back = custom_object_to_proto(&obj);
    if (back != NULL) {
        fuzz_check(strcmp(back->kind, msg->kind) == 0 && strcmp(back->name, msg->name) == 0 &&
                       strcmp(back->json, msg->json) == 0 &&
                       strcmp(back->namespace_, msg->namespace_) == 0,
                   "custom object round trip", "a field changed");
        custom_object_proto_free(back);
    }
    custom_object_clear(&obj);
}

/* ---- the envelopes ---- */

static void try_cluster_change(const Kcycle__V1__ClusterChange *c)
{
    try_pod(c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT ? c->pod_put : NULL);
    try_node(c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT ? c->node_put : NULL);
    if (c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_PUT)
        try_object(c->object_put);
    if (c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_DELETE)
        try_object(c->object_delete);
}

static void try_delta(const Kcycle__V1__Delta *d)
{
    switch (d->change_case) {
    case KCYCLE__V1__DELTA__CHANGE_NODE_PUT:
        try_node(d->node_put);
        break;
    case KCYCLE__V1__DELTA__CHANGE_POD_PUT:
        try_pod(d->pod_put);
        break;
    case KCYCLE__V1__DELTA__CHANGE_ASSUME:
        try_pod(d->assume != NULL ? d->assume->pod : NULL);
        break;
    case KCYCLE__V1__DELTA__CHANGE_OBJECT_PUT:
        try_object(d->object_put);
        break;
    case KCYCLE__V1__DELTA__CHANGE_OBJECT_DELETE:
        try_object(d->object_delete);
        break;
    default:
        break;
    }
}

static void try_request(const Kcycle__V1__Request *r)
{
    for (size_t i = 0; i < r->n_deltas; i++)
        try_delta(r->deltas[i]);
    if (r->call_case == KCYCLE__V1__REQUEST__CALL_EVALUATE && r->evaluate != NULL)
        try_pod(r->evaluate->pod);
}

static void try_to_scheduler(const Kcycle__V1__ToScheduler *m)
{
    for (size_t i = 0; i < m->n_changes; i++)
        try_cluster_change(m->changes[i]);
}

/* Whether m or a message inside it kept an unknown field numbered 0. */
static bool has_unknown_tag_zero(const ProtobufCMessage *m)
{
    if (m == NULL)
        return false;
    for (size_t i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0)
            return true;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *base = (const char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *items = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++)
                if (has_unknown_tag_zero(items[k]))
                    return true;
            continue;
        }
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0 &&
            *(const uint32_t *)(base + f->quantifier_offset) != f->id)
            continue;
        if (has_unknown_tag_zero(*(ProtobufCMessage *const *)(base + f->offset)))
            return true;
    }
    return false;
}

/* Unpack, pack, unpack, pack: protobuf-c must give the same bytes twice, and the decoded
 * message is then handed to the converters. One macro per message kind would be clearer as a
 * table, but protobuf-c's descriptors give only the generic functions, which is what this uses. */
static void try_message(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t size)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, size, data);
    if (m == NULL)
        return;
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *first = malloc(len + 1);
    fuzz_check(first != NULL, "malloc", NULL);
    fuzz_check(protobuf_c_message_pack(m, first) == len, "protobuf_c_message_pack",
               "packed a size other than promised");
    ProtobufCMessage *again = protobuf_c_message_unpack(d, NULL, len, first);
    if (again == NULL) {
        /* protobuf-c keeps an unknown field numbered 0 (a non-canonical tag) that it then
         * refuses in its own encoding (corpus/proto/crash-proto-unknown-field-zero): its
         * quirk, and kcycle never re-encodes a message it received. Any other refusal of its
         * own encoding is a finding. */
        fuzz_check(has_unknown_tag_zero(m), d->name,
                   "its encoding does not decode, without an unknown field numbered 0");
        free(first);
        goto convert;
    }
    uint8_t *second = malloc(len + 1);
    fuzz_check(second != NULL, "malloc", NULL);
    fuzz_check(protobuf_c_message_get_packed_size(again) == len &&
                   protobuf_c_message_pack(again, second) == len &&
                   memcmp(first, second, len) == 0,
               d->name, "the second encoding differs from the first");
    free(first);
    free(second);
    protobuf_c_message_free_unpacked(again, NULL);

convert:
    if (d == &kcycle__v1__pod__descriptor)
        try_pod((const Kcycle__V1__Pod *)m);
    else if (d == &kcycle__v1__node__descriptor)
        try_node((const Kcycle__V1__Node *)m);
    else if (d == &kcycle__v1__custom_object__descriptor)
        try_object((const Kcycle__V1__CustomObject *)m);
    else if (d == &kcycle__v1__cluster_change__descriptor)
        try_cluster_change((const Kcycle__V1__ClusterChange *)m);
    else if (d == &kcycle__v1__delta__descriptor)
        try_delta((const Kcycle__V1__Delta *)m);
    else if (d == &kcycle__v1__request__descriptor)
        try_request((const Kcycle__V1__Request *)m);
    else if (d == &kcycle__v1__to_scheduler__descriptor)
        try_to_scheduler((const Kcycle__V1__ToScheduler *)m);
    protobuf_c_message_free_unpacked(m, NULL);
}

/* Every message that crosses a process boundary, and the objects inside them. The order is
 * the seed files' first byte (corpus/proto/<index>-*): append, never reorder. */
static const ProtobufCMessageDescriptor *const kinds[] = {
    &kcycle__v1__pod__descriptor,           &kcycle__v1__node__descriptor,
    &kcycle__v1__custom_object__descriptor, &kcycle__v1__object_write__descriptor,
    &kcycle__v1__cluster_change__descriptor, &kcycle__v1__to_scheduler__descriptor,
    &kcycle__v1__to_bridge__descriptor,     &kcycle__v1__delta__descriptor,
    &kcycle__v1__request__descriptor,       &kcycle__v1__reply__descriptor,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const ProtobufCMessageDescriptor *d = kinds[data[0] % (sizeof(kinds) / sizeof(kinds[0]))];
    /* pod_from_proto_bytes and node_from_proto_bytes are the entry points from raw bytes */
    if (d == &kcycle__v1__pod__descriptor) {
        struct pod *pod = NULL;
        struct kc_error err = {{0}};
        int rc = pod_from_proto_bytes(data + 1, size - 1, &pod, &err);
        if (rc != 0)
            check_refusal(rc, pod, &err, "pod_from_proto_bytes");
        pod_free(pod);
    } else if (d == &kcycle__v1__node__descriptor) {
        struct node *node = NULL;
        struct kc_error err = {{0}};
        int rc = node_from_proto_bytes(data + 1, size - 1, &node, &err);
        if (rc != 0)
            check_refusal(rc, node, &err, "node_from_proto_bytes");
        node_free(node);
    }
    try_message(d, data + 1, size - 1);
    return 0;
}
