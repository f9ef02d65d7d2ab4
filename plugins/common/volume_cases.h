/* What the volume plugins' tables are written in: pods placed on nodes with their volumes, and
 * the storage objects ('-quoted JSON). Read by the fake-host tests (volume_test_support.h) and
 * by the harness tests, which turn them into a cluster. Nodes: node-a (zone a), node-b (zone b),
 * node-c (zone a, disk ssd), each with its hostname label. */
#ifndef KC_PLUGINS_VOLUME_CASES_H
#define KC_PLUGINS_VOLUME_CASES_H

#include <kcycle/kcycle.h>

#define VT_NODES 3
#define VT_MAX_OBJECTS 12

/* A pod already placed on a node. */
struct vt_placed {
    const char *name;
    const char *node;
    const char *namespace_name; /* NULL: default */
    kc_volume volumes[3];       /* source 0 ends the list */
};

/* Common objects. */
#define VT_CLASS_LOCAL                                                                         \
    "{'kind':'StorageClass','metadata':{'name':'local'},"                                      \
    "'provisioner':'kubernetes.io/no-provisioner','volumeBindingMode':'WaitForFirstConsumer'}"
#define VT_CLASS_FAST                                                                          \
    "{'kind':'StorageClass','metadata':{'name':'fast'},'provisioner':'csi.example.com',"       \
    "'volumeBindingMode':'WaitForFirstConsumer'}"
#define VT_CLASS_STANDARD                                                                      \
    "{'kind':'StorageClass','metadata':{'name':'standard'},'provisioner':'csi.example.com',"   \
    "'volumeBindingMode':'Immediate'}"

/* An unbound claim of class, asking for size with mode. */
#define VT_CLAIM(name, klass, size, mode)                                                      \
    "{'kind':'PersistentVolumeClaim','metadata':{'name':'" name "','namespace':'default',"     \
    "'uid':'uid-" name "','resourceVersion':'7'},'spec':{'storageClassName':'" klass "',"      \
    "'accessModes':['" mode "'],'resources':{'requests':{'storage':'" size "'}}},"            \
    "'status':{'phase':'Pending'}}"
/* A claim bound to volume (the PV controller finished: bind-completed). */
#define VT_BOUND_CLAIM(name, volume, mode)                                                     \
    "{'kind':'PersistentVolumeClaim','metadata':{'name':'" name "','namespace':'default',"     \
    "'uid':'uid-" name "','annotations':{'pv.kubernetes.io/bind-completed':'yes'}},"          \
    "'spec':{'storageClassName':'local','volumeName':'" volume "','accessModes':['" mode       \
    "'],'resources':{'requests':{'storage':'1Gi'}}},'status':{'phase':'Bound'}}"
/* An Available volume of class and size, with the node affinity terms given (may be ""). */
#define VT_VOLUME(name, klass, size, mode, affinity)                                           \
    "{'kind':'PersistentVolume','metadata':{'name':'" name "','resourceVersion':'3'},"         \
    "'spec':{'storageClassName':'" klass "','capacity':{'storage':'" size "'},"                \
    "'accessModes':['" mode "']" affinity "},'status':{'phase':'Available'}}"
#define VT_ON_HOST(host)                                                                       \
    ",'nodeAffinity':{'required':{'nodeSelectorTerms':[{'matchExpressions':[{'key':"          \
    "'kubernetes.io/hostname','operator':'In','values':['" host "']}]}]}}"
#define VT_IN_ZONE(zone)                                                                       \
    ",'nodeAffinity':{'required':{'nodeSelectorTerms':[{'matchExpressions':[{'key':"          \
    "'topology.kubernetes.io/zone','operator':'In','values':['" zone "']}]}]}}"

#endif
