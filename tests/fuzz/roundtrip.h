/* The protobuf round trip of a pod or a node, as the bridge sends them to the scheduler and
 * the scheduler to its plugin hosts: what decodes must encode, decode again to the same object
 * and encode to the same bytes. Shared by the proto and kube targets. */
#ifndef KC_TESTS_FUZZ_ROUNDTRIP_H
#define KC_TESTS_FUZZ_ROUNDTRIP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "model.h"
#include "proto_convert.h"

/* A pod decoded from the wire encodes (must_encode; one read from the API server may hold what
 * the wire cannot carry, which the bridge skips), and decodes again to a pod that encodes to
 * the same bytes. */
static inline void pod_round_trip(const struct pod *pod, bool must_encode)
{
    uint8_t *first = NULL, *second = NULL;
    size_t first_len = 0, second_len = 0;
    int rc = pod_to_proto_bytes(pod, &first, &first_len);
    fuzz_check(rc == 0 || rc == -ENOMEM || (!must_encode && rc == -EINVAL), "pod_to_proto_bytes",
               "a decoded pod does not encode");
    if (rc != 0)
        return;
    struct pod *again = NULL;
    struct kc_error err = {{0}};
    rc = pod_from_proto_bytes(first, first_len, &again, &err);
    fuzz_check(rc == 0 || rc == -ENOMEM, "pod_from_proto_bytes", err.message);
    if (rc == 0) {
        fuzz_check(pod_to_proto_bytes(again, &second, &second_len) == 0, "pod_to_proto_bytes",
                   "a pod decoded from its own encoding does not encode");
        fuzz_check(second_len == first_len && memcmp(first, second, first_len) == 0,
                   "pod round trip", "the second encoding differs from the first");
        fuzz_check(strcmp(again->uid, pod->uid) == 0 && strcmp(again->name, pod->name) == 0 &&
                       again->request.count == pod->request.count,
                   "pod round trip", "uid, name or requests changed");
        pod_free(again);
    }
    free(first);
    free(second);
}

static inline void node_round_trip(const struct node *node, bool must_encode)
{
    uint8_t *first = NULL, *second = NULL;
    size_t first_len = 0, second_len = 0;
    int rc = node_to_proto_bytes(node, &first, &first_len);
    fuzz_check(rc == 0 || rc == -ENOMEM || (!must_encode && rc == -EINVAL), "node_to_proto_bytes",
               "a decoded node does not encode");
    if (rc != 0)
        return;
    struct node *again = NULL;
    struct kc_error err = {{0}};
    rc = node_from_proto_bytes(first, first_len, &again, &err);
    fuzz_check(rc == 0 || rc == -ENOMEM, "node_from_proto_bytes", err.message);
    if (rc == 0) {
        fuzz_check(node_to_proto_bytes(again, &second, &second_len) == 0, "node_to_proto_bytes",
                   "a node decoded from its own encoding does not encode");
        fuzz_check(second_len == first_len && memcmp(first, second, first_len) == 0,
                   "node round trip", "the second encoding differs from the first");
        fuzz_check(strcmp(again->name, node->name) == 0 &&
                       again->allocatable.count == node->allocatable.count &&
                       again->taint_count == node->taint_count,
                   "node round trip", "name, allocatable or taints changed");
        node_free(again);
    }
    free(first);
    free(second);
}

#endif
