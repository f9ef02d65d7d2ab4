/* Prints the layout of every public SDK struct and the value of every ABI constant, one fact
 * per line. Built against each frozen copy (1.0, 1.1) and against the current headers;
 * check_abi.py compares the outputs. The member lists are those of the minor the headers
 * declare (1.1 members only when KC_ABI_MINOR >= 1): a member added later is not listed here
 * and is covered by the "only grew" check on the struct's size. */
#include <stddef.h>
#include <stdio.h>

#include <kcycle/kcycle.h>

#define MEMBER_SIZE(type, member) sizeof(((type *)0)->member)

#define HOST_API_MEMBERS(X)                                                                        \
    X(kc_host_api, struct_size)                                                                    \
    X(kc_host_api, abi_version)                                                                    \
    X(kc_host_api, log)                                                                            \
    X(kc_host_api, resource_id)                                                                    \
    X(kc_host_api, resource_name)                                                                  \
    X(kc_host_api, pod_namespace)                                                                  \
    X(kc_host_api, pod_name)                                                                       \
    X(kc_host_api, pod_uid)                                                                        \
    X(kc_host_api, pod_node_name)                                                                  \
    X(kc_host_api, pod_scheduler_name)                                                             \
    X(kc_host_api, pod_priority)                                                                   \
    X(kc_host_api, pod_creation_ms)                                                                \
    X(kc_host_api, pod_enqueue_ms)                                                                 \
    X(kc_host_api, pod_label)                                                                      \
    X(kc_host_api, pod_annotation)                                                                 \
    X(kc_host_api, pod_request)                                                                    \
    X(kc_host_api, pod_request_count)                                                              \
    X(kc_host_api, pod_request_at)                                                                 \
    X(kc_host_api, pod_container_count)                                                            \
    X(kc_host_api, pod_container_name)                                                             \
    X(kc_host_api, pod_container_request)                                                          \
    X(kc_host_api, pod_container_limit)                                                            \
    X(kc_host_api, pod_group)                                                                      \
    X(kc_host_api, pod_scheduling_gate_count)                                                      \
    X(kc_host_api, pod_matches_node_affinity)                                                      \
    X(kc_host_api, pod_preferred_affinity_score)                                                   \
    X(kc_host_api, pod_tolerates_taint)                                                            \
    X(kc_host_api, node_name)                                                                      \
    X(kc_host_api, node_label)                                                                     \
    X(kc_host_api, node_annotation)                                                                \
    X(kc_host_api, node_unschedulable)                                                             \
    X(kc_host_api, node_taint_count)                                                               \
    X(kc_host_api, node_taint_at)                                                                  \
    X(kc_host_api, node_allocatable)                                                               \
    X(kc_host_api, node_requested)                                                                 \
    X(kc_host_api, node_pod_count)                                                                 \
    X(kc_host_api, node_index)                                                                     \
    X(kc_host_api, node_count)                                                                     \
    X(kc_host_api, node_at)                                                                        \
    X(kc_host_api, node_by_name)                                                                   \
    X(kc_host_api, cycle_reject)                                                                   \
    X(kc_host_api, cycle_set)                                                                      \
    X(kc_host_api, cycle_get)                                                                      \
    X(kc_host_api, cycle_annotate)                                                                 \
    X(kc_host_api, waiting_pod_count)                                                              \
    X(kc_host_api, waiting_pod_at)                                                                 \
    X(kc_host_api, waiting_pod_get)                                                                \
    X(kc_host_api, waiting_pod_pod)                                                                \
    X(kc_host_api, waiting_pod_node)                                                               \
    X(kc_host_api, waiting_pod_allow)                                                              \
    X(kc_host_api, waiting_pod_reject)                                                             \
    X(kc_host_api, bind)                                                                           \
    X(kc_host_api, now_ms)

#define PLUGIN_OPS_MEMBERS(X)                                                                      \
    X(kc_plugin_ops, struct_size)                                                                  \
    X(kc_plugin_ops, init)                                                                         \
    X(kc_plugin_ops, fini)                                                                         \
    X(kc_plugin_ops, requeue_events)                                                               \
    X(kc_plugin_ops, pre_enqueue)                                                                  \
    X(kc_plugin_ops, queue_less)                                                                   \
    X(kc_plugin_ops, pre_filter)                                                                   \
    X(kc_plugin_ops, filter)                                                                       \
    X(kc_plugin_ops, post_filter)                                                                  \
    X(kc_plugin_ops, pre_score)                                                                    \
    X(kc_plugin_ops, score)                                                                        \
    X(kc_plugin_ops, normalize_score)                                                              \
    X(kc_plugin_ops, reserve)                                                                      \
    X(kc_plugin_ops, unreserve)                                                                    \
    X(kc_plugin_ops, permit)                                                                       \
    X(kc_plugin_ops, pre_bind)                                                                     \
    X(kc_plugin_ops, bind)                                                                         \
    X(kc_plugin_ops, post_bind)                                                                    \
    X(kc_plugin_ops, on_event)

#define DESCRIPTOR_MEMBERS(X)                                                                      \
    X(kc_plugin_descriptor, struct_size)                                                           \
    X(kc_plugin_descriptor, abi_major)                                                             \
    X(kc_plugin_descriptor, abi_minor)                                                             \
    X(kc_plugin_descriptor, name)                                                                  \
    X(kc_plugin_descriptor, version)                                                               \
    X(kc_plugin_descriptor, ops)

#define EVENT_MEMBERS(X)                                                                           \
    X(kc_event, struct_size)                                                                       \
    X(kc_event, type)                                                                              \
    X(kc_event, pod)                                                                               \
    X(kc_event, old_pod)                                                                           \
    X(kc_event, node)                                                                              \
    X(kc_event, old_node)                                                                          \
    X(kc_event, object_kind)                                                                       \
    X(kc_event, object_namespace)                                                                  \
    X(kc_event, object_name)                                                                       \
    X(kc_event, object_json)

#define TAINT_MEMBERS(X)                                                                           \
    X(kc_taint, struct_size)                                                                       \
    X(kc_taint, effect)                                                                            \
    X(kc_taint, key)                                                                               \
    X(kc_taint, value)
/* Enum values and macros whose numbers are part of the ABI (plugins compile them in). */
#define CONSTANTS(X)                                                                               \
    X(KC_ABI_MAJOR)                                                                                \
    X(KC_SUCCESS)                                                                                  \
    X(KC_UNSCHEDULABLE)                                                                            \
    X(KC_UNRESOLVABLE)                                                                             \
    X(KC_WAIT)                                                                                     \
    X(KC_SKIP)                                                                                     \
    X(KC_ERROR)                                                                                    \
    X(KC_EVENT_NODE_ADD)                                                                           \
    X(KC_EVENT_NODE_UPDATE)                                                                        \
    X(KC_EVENT_NODE_DELETE)                                                                        \
    X(KC_EVENT_POD_ADD)                                                                            \
    X(KC_EVENT_POD_UPDATE)                                                                         \
    X(KC_EVENT_POD_DELETE)                                                                         \
    X(KC_EVENT_POD_ASSUME)                                                                         \
    X(KC_EVENT_POD_FORGET)                                                                         \
    X(KC_EVENT_OBJECT_ADD)                                                                         \
    X(KC_EVENT_OBJECT_UPDATE)                                                                      \
    X(KC_EVENT_OBJECT_DELETE)                                                                      \
    X(KC_LOG_ERROR)                                                                                \
    X(KC_LOG_WARN)                                                                                 \
    X(KC_LOG_INFO)                                                                                 \
    X(KC_LOG_DEBUG)                                                                                \
    X(KC_TAINT_NO_SCHEDULE)                                                                        \
    X(KC_TAINT_PREFER_NO_SCHEDULE)                                                                 \
    X(KC_TAINT_NO_EXECUTE)                                                                         \
    X(KC_RESOURCE_CPU)                                                                             \
    X(KC_RESOURCE_MEMORY)                                                                          \
    X(KC_RESOURCE_PODS)                                                                            \
    X(KC_RESOURCE_EPHEMERAL_STORAGE)

/* Constants that may only grow: a newer header may raise them, never lower them. */
#define GROWING_CONSTANTS(X)                                                                       \
    X(KC_ABI_MINOR)                                                                                \
    X(KC_STATUS_MAX)                                                                               \
    X(KC_EVENT_MASK_ALL)                                                                           \
    X(KC_RESOURCE_MAX)

/* Types whose size a plugin compiles in. */
#define SCALAR_TYPES(X)                                                                            \
    X(kc_status)                                                                                   \
    X(kc_event_type)                                                                               \
    X(kc_log_level)                                                                                \
    X(kc_taint_effect)                                                                             \
    X(kc_resource)

#define PRINT_MEMBER(type, member)                                                                 \
    printf("member %s.%s %zu %zu\n", #type, #member, offsetof(type, member),                       \
           MEMBER_SIZE(type, member));
#define PRINT_CONSTANT(name) printf("constant %s %lld\n", #name, (long long)(name));
#define PRINT_GROWING(name) printf("growing %s %lld\n", #name, (long long)(name));
#define PRINT_TYPE(type) printf("type %s %zu\n", #type, sizeof(type));

/* Added in 1.1: pod groups. */
#if KC_ABI_MINOR >= 1
#define MEMBERS_1_1(X)                                                                             \
    X(kc_host_api, cycle_group)                                                                    \
    X(kc_plugin_ops, group_of)                                                                     \
    X(kc_group_info, struct_size)                                                                  \
    X(kc_group_info, flags)                                                                        \
    X(kc_group_info, namespace_name)                                                               \
    X(kc_group_info, name)                                                                         \
    X(kc_group_info, min_member)                                                                   \
    X(kc_group_info, schedule_timeout_ms)                                                          \
    X(kc_group_info, backoff_ms)                                                                   \
    X(kc_group_info, creation_ms)                                                                  \
    X(kc_group_cycle, struct_size)                                                                 \
    X(kc_group_cycle, index)                                                                       \
    X(kc_group_cycle, count)                                                                       \
    X(kc_group_cycle, needed)                                                                      \
    X(kc_group_cycle, namespace_name)                                                              \
    X(kc_group_cycle, name)
#endif

int main(void)
{
    printf("struct kc_host_api %zu\n", sizeof(kc_host_api));
    HOST_API_MEMBERS(PRINT_MEMBER)
    printf("struct kc_plugin_ops %zu\n", sizeof(kc_plugin_ops));
    PLUGIN_OPS_MEMBERS(PRINT_MEMBER)
    printf("struct kc_plugin_descriptor %zu\n", sizeof(kc_plugin_descriptor));
    DESCRIPTOR_MEMBERS(PRINT_MEMBER)
    printf("struct kc_event %zu\n", sizeof(kc_event));
    EVENT_MEMBERS(PRINT_MEMBER)
    printf("struct kc_taint %zu\n", sizeof(kc_taint));
    TAINT_MEMBERS(PRINT_MEMBER)
#if KC_ABI_MINOR >= 1
    printf("struct kc_group_info %zu\n", sizeof(kc_group_info));
    printf("struct kc_group_cycle %zu\n", sizeof(kc_group_cycle));
    MEMBERS_1_1(PRINT_MEMBER)
    printf("constant KC_GROUP_CYCLE %u\n", KC_GROUP_CYCLE);
#endif
    CONSTANTS(PRINT_CONSTANT)
    GROWING_CONSTANTS(PRINT_GROWING)
    SCALAR_TYPES(PRINT_TYPE)
    /* how versions and event masks are encoded is compiled into every plugin */
    printf("constant KC_ABI_MAKE(1,2) %u\n", KC_ABI_MAKE(1, 2));
    printf("constant KC_ABI_VERSION_MAJOR(0x30004) %u\n", KC_ABI_VERSION_MAJOR(0x30004u));
    printf("constant KC_ABI_VERSION_MINOR(0x30004) %u\n", KC_ABI_VERSION_MINOR(0x30004u));
    printf("constant KC_EVENT_MASK(KC_EVENT_POD_ASSUME) %u\n", KC_EVENT_MASK(KC_EVENT_POD_ASSUME));
    printf("string KC_PLUGIN_QUERY_SYMBOL %s\n", KC_PLUGIN_QUERY_SYMBOL);
    return 0;
}
