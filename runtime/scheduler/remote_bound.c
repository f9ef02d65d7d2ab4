/* The short delta for a pod bound as it was assumed (remote_bound.h). Every host receives each
 * scheduled pod twice in whole: in its Assume, then in the pod_put of the assigned object. When
 * that object is the assumed one plus spec.nodeName, the second is a PodBound. Equality is
 * decided on the wire, against the very bytes the Assume carried, so a field added to the pod
 * later can never be missed by a hand-written comparison. */
#include "remote_bound.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.pb-c.h"

struct kept {
    char *uid;  /* the map's key */
    char *node; /* where the Assume put it */
    uint8_t *data;
    size_t len;
};

/* ---- reading the packed Assume ---- */

static bool read_varint(const uint8_t **at, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && *at < end; shift += 7) {
        uint8_t byte = *(*at)++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* The bytes of the length-delimited field `number` in the message data..end (the last one,
 * as protobuf reads a repeated singular field), or false when it is absent or the bytes do not
 * parse. */
static bool find_field(const uint8_t *data, const uint8_t *end, uint32_t number,
                       const uint8_t **field, size_t *field_len)
{
    bool found = false;
    for (const uint8_t *at = data; at < end;) {
        uint64_t key, n;
        if (!read_varint(&at, end, &key))
            return false;
        switch (key & 7) {
        case 0:
            if (!read_varint(&at, end, &n))
                return false;
            break;
        case 1:
            if (end - at < 8)
                return false;
            at += 8;
            break;
        case 5:
            if (end - at < 4)
                return false;
            at += 4;
            break;
        case 2:
            if (!read_varint(&at, end, &n) || n > (uint64_t)(end - at))
                return false;
            if ((key >> 3) == number) {
                *field = at;
                *field_len = (size_t)n;
                found = true;
            }
            at += n;
            break;
        default: return false; /* groups: never in these messages */
        }
    }
    return found;
}

static uint32_t field_number(const ProtobufCMessageDescriptor *d, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
    return f != NULL ? f->id : 0;
}

/* The Pod inside a packed Delta whose change is an Assume. The field numbers come from the
 * generated descriptors, so the proto file stays their only source. */
static bool assume_pod_bytes(const uint8_t *delta, size_t len, const uint8_t **pod,
                             size_t *pod_len)
{
    const uint8_t *assume;
    size_t assume_len;
    return find_field(delta, delta + len,
                      field_number(&kcycle__v1__delta__descriptor, "assume"), &assume,
                      &assume_len) &&
           find_field(assume, assume + assume_len,
                      field_number(&kcycle__v1__assume__descriptor, "pod"), pod, pod_len);
}

/* ---- the kept assumptions ---- */

void remote_bound_note_assume(struct remote_bound *b, const char *uid, const char *node,
                              const uint8_t *delta, size_t len)
{
    remote_bound_drop(b, uid);
    const uint8_t *pod;
    size_t pod_len;
    if (uid == NULL || node == NULL || !assume_pod_bytes(delta, len, &pod, &pod_len))
        return;
    size_t uid_size = strlen(uid) + 1, node_size = strlen(node) + 1;
    struct kept *k = malloc(sizeof(*k) + uid_size + node_size + pod_len);
    if (k == NULL)
        return;
    k->uid = (char *)(k + 1);
    k->node = k->uid + uid_size;
    k->data = (uint8_t *)k->node + node_size;
    k->len = pod_len;
    memcpy(k->uid, uid, uid_size);
    memcpy(k->node, node, node_size);
    memcpy(k->data, pod, pod_len);
    if (strmap_put(&b->assumed, k->uid, k) < 0)
        free(k);
}

void remote_bound_drop(struct remote_bound *b, const char *uid)
{
    if (b->assumed.count > 0 && uid != NULL)
        free(strmap_remove(&b->assumed, uid));
}

void remote_bound_clear(struct remote_bound *b)
{
    for (uint32_t i = 0; b->assumed.count > 0 && i < b->assumed.capacity; i++)
        free(b->assumed.entries[i].value); /* NULL in free and tombstone slots */
    strmap_free(&b->assumed);
}

static bool encodes_as(struct remote_bound *b, const Kcycle__V1__Pod *msg, const struct kept *k)
{
    size_t len = kcycle__v1__pod__get_packed_size(msg);
    if (len != k->len)
        return false;
    if (len > b->scratch_capacity) {
        uint8_t *grown = realloc(b->scratch, len);
        if (grown == NULL)
            return false; /* the pod_put then: never a wrong PodBound */
        b->scratch = grown;
        b->scratch_capacity = len;
    }
    return kcycle__v1__pod__pack(msg, b->scratch) == len && memcmp(b->scratch, k->data, len) == 0;
}

bool remote_bound_take(struct remote_bound *b, Kcycle__V1__Pod *msg)
{
    if (b->assumed.count == 0 || msg->uid == NULL)
        return false;
    struct kept *k = strmap_remove(&b->assumed, msg->uid);
    if (k == NULL)
        return false;
    bool same = msg->node_name != NULL && strcmp(msg->node_name, k->node) == 0;
    if (same) {
        char *node = msg->node_name;
        msg->node_name = (char *)protobuf_c_empty_string; /* as the pending pod encoded it */
        same = encodes_as(b, msg, k);
        msg->node_name = node;
    }
    free(k);
    b->sent += same;
    return same;
}

void remote_bound_free(struct remote_bound *b)
{
    remote_bound_clear(b);
    free(b->scratch);
    memset(b, 0, sizeof(*b));
}
