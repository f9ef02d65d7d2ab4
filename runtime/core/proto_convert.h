/* Conversion between the object model (model.h, simfile.h) and the protobuf-c messages of
 * proto/kcycle/v1/objects.proto, for shipping snapshots and deltas to plugin hosts. */
#ifndef KC_CORE_PROTO_CONVERT_H
#define KC_CORE_PROTO_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"
#include "objects.pb-c.h"
#include "simfile.h"

/*
 * Encoding. Resources travel by name (ids are per process); a pod's derived fields (request,
 * pod_group) and the scheduler-local enqueue_ms are not sent.
 *
 * The *_to_proto functions return a message whose strings are BORROWED from the object: it is
 * valid only while the object lives and must be released with the matching *_proto_free
 * (never with protobuf-c's free_unpacked, and *_proto_free never takes an unpacked message).
 * They return NULL with errno set: ENOMEM, or EINVAL when the object holds something the wire
 * cannot carry (a resource id with no name, an enum value out of range).
 *
 * The *_to_proto_bytes functions return 0 and a malloc'd buffer in *out (the caller frees it)
 * of *len bytes, or -ENOMEM / -EINVAL with *out NULL and *len 0.
 */
Kcycle__V1__Pod *pod_to_proto(const struct pod *pod);
void pod_proto_free(Kcycle__V1__Pod *msg);
int pod_to_proto_bytes(const struct pod *pod, uint8_t **out, size_t *len);

Kcycle__V1__Node *node_to_proto(const struct node *node);
void node_proto_free(Kcycle__V1__Node *msg);
int node_to_proto_bytes(const struct node *node, uint8_t **out, size_t *len);

Kcycle__V1__CustomObject *custom_object_to_proto(const struct sim_object *object);
void custom_object_proto_free(Kcycle__V1__CustomObject *msg);

/*
 * Decoding. The result owns copies of everything (the message may be freed right after);
 * resource names are interned in this process. A pod comes back finished (pod_finish called).
 * Labels, annotations and node selectors may arrive in any order and are sorted; a key sent
 * twice is an error, as is a resource sent twice.
 *
 * Return 0 with the new object in *out (free it with pod_free / node_free), or a negative code
 * with *out NULL and err naming the object and the field: -EBADMSG for bytes that do not decode
 * as the message, -EINVAL for a decoded message the model cannot hold, -ENOMEM.
 */
int pod_from_proto(const Kcycle__V1__Pod *msg, struct pod **out, struct kc_error *err);
int pod_from_proto_bytes(const uint8_t *data, size_t len, struct pod **out, struct kc_error *err);

int node_from_proto(const Kcycle__V1__Node *msg, struct node **out, struct kc_error *err);
int node_from_proto_bytes(const uint8_t *data, size_t len, struct node **out, struct kc_error *err);

/* Fills *out (zeroed first) with owned copies; release them with custom_object_clear. An empty
 * namespace decodes as NULL (cluster-scoped). The JSON text is passed through unparsed. */
int custom_object_from_proto(const Kcycle__V1__CustomObject *msg, struct sim_object *out,
                             struct kc_error *err);
void custom_object_clear(struct sim_object *object);

#endif
