/* Cluster cache: flat node array, pod accounting by uid. */
#include "cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "array.h"

void cache_init(struct cache *cache)
{
    memset(cache, 0, sizeof(*cache));
}

static void cache_pod_free(struct cache_pod *cp)
{
    free(cp->uid);
    free(cp->node_name);
    res_list_free(&cp->request);
    free(cp);
}

void cache_fini(struct cache *cache)
{
    for (uint32_t i = 0; i < cache->node_count; i++) {
        node_free(cache->nodes[i].node);
        free(cache->nodes[i].pods);
    }
    free(cache->nodes);
    for (uint32_t i = 0; i < cache->pods.capacity; i++) {
        struct strmap_entry *e = &cache->pods.entries[i];
        if (e->value != NULL)
            cache_pod_free(e->value);
    }
    strmap_free(&cache->pods);
    strmap_free(&cache->node_index);
    memset(cache, 0, sizeof(*cache));
}

struct cache_node *cache_node(const struct cache *cache, const char *name)
{
    uintptr_t slot = (uintptr_t)strmap_get(&cache->node_index, name);
    return slot == 0 ? NULL : &cache->nodes[slot - 1];
}

/* kube-scheduler's defaults for a pod without a cpu or memory request
 * (schedutil.DefaultMilliCPURequest, DefaultMemoryRequest). */
#define NONZERO_MILLI_CPU 100
#define NONZERO_MEMORY (200LL * 1024 * 1024)

void cache_node_count_request(struct cache_node *cn, const struct res_list *request, int sign)
{
    int64_t cpu = 0, memory = 0;
    for (uint32_t i = 0; i < request->count; i++) {
        kc_resource id = request->items[i].id;
        int64_t value = request->items[i].value;
        cn->amount[id].requested += sign * value;
        if (id == KC_RESOURCE_CPU)
            cpu = value;
        else if (id == KC_RESOURCE_MEMORY)
            memory = value;
    }
    cn->nonzero_cpu += sign * (cpu != 0 ? cpu : NONZERO_MILLI_CPU);
    cn->nonzero_memory += sign * (memory != 0 ? memory : NONZERO_MEMORY);
}

/* Count cp on cn (sign 1) or take it off (-1): requests and the node's pod list. */
static int account(struct cache_node *cn, struct cache_pod *cp, int sign)
{
    if (sign > 0) {
        struct cache_pod **pods =
            array_grow(cn->pods, &cn->pods_capacity, cn->pod_count + 1, sizeof(*pods));
        if (pods == NULL)
            return -ENOMEM;
        cn->pods = pods;
        cp->slot = cn->pod_count;
        cn->pods[cn->pod_count] = cp;
    } else {
        struct cache_pod *last = cn->pods[cn->pod_count - 1];
        cn->pods[cp->slot] = last;
        last->slot = cp->slot;
    }
    cache_node_count_request(cn, &cp->request, sign);
    cn->pod_count += sign;
    cp->counted = sign > 0;
    return 0;
}

/* Count every known pod assigned to cn's name (a node that arrives after its pods). */
static void count_pods_of(struct cache *cache, struct cache_node *cn)
{
    for (uint32_t i = 0; i < cache->pods.capacity; i++) {
        struct cache_pod *cp = cache->pods.entries[i].value;
        if (cp != NULL && !cp->counted && strcmp(cp->node_name, cn->node->name) == 0)
            account(cn, cp, 1); /* out of memory: the pod is counted when it comes again */
    }
}

static void set_node_copies(struct cache_node *cn)
{
    cn->unschedulable = cn->node->unschedulable;
    cn->taint_count = cn->node->taint_count;
    for (uint32_t id = 0; id < KC_RESOURCE_MAX; id++)
        cn->amount[id].allocatable = 0;
    const struct res_list *alloc = &cn->node->allocatable;
    for (uint32_t i = 0; i < alloc->count; i++)
        cn->amount[alloc->items[i].id].allocatable = alloc->items[i].value;
}

/* Transparent huge pages for a large node array: an attempt visits hundreds of nodes a kilobyte
 * apart, one 4 KiB page every three or four nodes, and the page walks of those TLB misses cost
 * more than the cache misses (a 5,000-node cluster spans some 1,400 small pages, 3 huge ones). */
#define HUGE_PAGE (2u << 20)

static struct cache_node *nodes_alloc(uint32_t capacity)
{
    size_t bytes = (size_t)capacity * sizeof(struct cache_node);
    if (bytes < HUGE_PAGE)
        return aligned_alloc(_Alignof(struct cache_node), bytes);
    bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    struct cache_node *nodes = aligned_alloc(HUGE_PAGE, bytes);
    if (nodes != NULL)
        madvise(nodes, bytes, MADV_HUGEPAGE); /* a hint: without it the array works as well */
    return nodes;
}

/* Room for one more node. The array is allocated on struct cache_node's alignment (the
 * hot lines of each node, cache.h), which realloc does not promise. */
static int grow_nodes(struct cache *cache)
{
    if (cache->node_count < cache->node_capacity)
        return 0;
    uint32_t capacity = cache->node_capacity < 16 ? 16 : cache->node_capacity * 2;
    struct cache_node *nodes = nodes_alloc(capacity);
    if (nodes == NULL)
        return -ENOMEM;
    if (cache->node_count > 0)
        memcpy(nodes, cache->nodes, cache->node_count * sizeof(*nodes));
    free(cache->nodes);
    cache->nodes = nodes;
    cache->node_capacity = capacity;
    return 0;
}

int cache_put_node(struct cache *cache, struct node *node)
{
    struct cache_node *cn = cache_node(cache, node->name);
    cache->generation++;
    if (cn != NULL) {
        struct node *old = cn->node;
        cn->node = node;
        /* the map's key borrows the node's name: re-point it before freeing the old node */
        strmap_put(&cache->node_index, node->name, (void *)(uintptr_t)(cn->index + 1));
        node_free(old);
        set_node_copies(cn);
        return 0;
    }
    if (grow_nodes(cache) < 0)
        return -ENOMEM;
    cn = &cache->nodes[cache->node_count];
    memset(cn, 0, sizeof(*cn));
    cn->node = node;
    cn->index = cache->node_count;
    cn->id = ++cache->last_node_id;
    if (strmap_put(&cache->node_index, node->name, (void *)(uintptr_t)(cn->index + 1)) < 0)
        return -ENOMEM;
    cache->node_count++;
    set_node_copies(cn);
    count_pods_of(cache, cn);
    return 0;
}

int cache_remove_node(struct cache *cache, const char *name)
{
    struct cache_node *cn = cache_node(cache, name);
    if (cn == NULL)
        return -ENOENT;
    cache->generation++;
    for (uint32_t i = 0; i < cache->pods.capacity; i++) {
        struct cache_pod *cp = cache->pods.entries[i].value;
        if (cp != NULL && cp->counted && strcmp(cp->node_name, name) == 0)
            cp->counted = false;
    }
    strmap_remove(&cache->node_index, name);
    node_free(cn->node);
    free(cn->pods);
    uint32_t last = cache->node_count - 1;
    if (cn->index != last) {
        *cn = cache->nodes[last];
        cn->index = (uint32_t)(cn - cache->nodes);
        strmap_put(&cache->node_index, cn->node->name, (void *)(uintptr_t)(cn->index + 1));
    }
    cache->node_count--;
    return 0;
}

static struct cache_pod *cache_pod_new(const struct pod *pod, const char *node_name)
{
    struct cache_pod *cp = calloc(1, sizeof(*cp));
    if (cp == NULL)
        return NULL;
    cp->uid = strdup(pod->uid);
    cp->node_name = strdup(node_name);
    cp->request.items = malloc((pod->request.count + 1) * sizeof(*cp->request.items));
    if (cp->uid == NULL || cp->node_name == NULL || cp->request.items == NULL) {
        cache_pod_free(cp);
        return NULL;
    }
    if (pod->request.count > 0)
        memcpy(cp->request.items, pod->request.items,
               pod->request.count * sizeof(*cp->request.items));
    cp->request.count = pod->request.count;
    return cp;
}

static int insert_pod(struct cache *cache, const struct pod *pod, const char *node_name,
                      bool assumed)
{
    struct cache_pod *cp = cache_pod_new(pod, node_name);
    if (cp == NULL || strmap_put(&cache->pods, cp->uid, cp) < 0) {
        if (cp != NULL)
            cache_pod_free(cp);
        return -ENOMEM;
    }
    cp->assumed = assumed;
    cp->pod = pod;
    struct cache_node *cn = cache_node(cache, node_name);
    if (cn != NULL && account(cn, cp, 1) < 0) {
        strmap_remove(&cache->pods, cp->uid);
        cache_pod_free(cp);
        return -ENOMEM;
    }
    cache->generation++;
    return 0;
}

int cache_remove_pod(struct cache *cache, const char *uid)
{
    struct cache_pod *cp = strmap_remove(&cache->pods, uid);
    if (cp == NULL)
        return -ENOENT;
    if (cp->counted) {
        struct cache_node *cn = cache_node(cache, cp->node_name);
        if (cn != NULL)
            account(cn, cp, -1);
    }
    cache->generation++;
    cache_pod_free(cp);
    return 0;
}

int cache_add_pod(struct cache *cache, const struct pod *pod)
{
    if (pod->node_name == NULL)
        return 0;
    struct cache_pod *cp = strmap_get(&cache->pods, pod->uid);
    if (cp != NULL) {
        /* the real object wins over our assumption or an older version */
        cache_remove_pod(cache, pod->uid);
    }
    return insert_pod(cache, pod, pod->node_name, false);
}

int cache_assume(struct cache *cache, const struct pod *pod, const char *node_name)
{
    if (strmap_get(&cache->pods, pod->uid) != NULL)
        return -EEXIST;
    return insert_pod(cache, pod, node_name, true);
}

int cache_forget(struct cache *cache, const char *uid)
{
    struct cache_pod *cp = strmap_get(&cache->pods, uid);
    if (cp == NULL || !cp->assumed)
        return -ENOENT;
    return cache_remove_pod(cache, uid);
}

const struct cache_pod *cache_pod(const struct cache *cache, const char *uid)
{
    return strmap_get(&cache->pods, uid);
}
