/* Nominated pods, by pod and by node: the filter looks them up by node for every node while
 * any exist, the scheduler by pod when a pod's state changes. */
#include "nominate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

/* by_uid's keys borrow the uid copies kept in the node lists: find the copy. */
static char *uid_copy(const struct nominated_node *nn, const char *uid, uint32_t *at)
{
    for (uint32_t i = 0; i < nn->count; i++) {
        if (strcmp(nn->uids[i], uid) == 0) {
            *at = i;
            return nn->uids[i];
        }
    }
    return NULL;
}

void nominations_remove(struct nominations *n, const char *uid)
{
    char *node = strmap_get(&n->by_uid, uid);
    if (node == NULL)
        return;
    struct nominated_node *nn = strmap_get(&n->by_node, node);
    uint32_t at = 0;
    char *copy = nn != NULL ? uid_copy(nn, uid, &at) : NULL;
    strmap_remove(&n->by_uid, uid);
    if (copy != NULL) {
        nn->count--;
        nn->uids[at] = nn->uids[nn->count];
        nn->refs[at] = nn->refs[nn->count];
        free(copy);
    }
    if (nn != NULL && nn->count == 0) {
        strmap_remove(&n->by_node, nn->node);
        free(nn->node);
        free(nn->uids);
        free(nn->refs);
        free(nn);
    }
    free(node);
    n->count--;
}

static void nominated_node_free(struct nominated_node *nn)
{
    free(nn->node);
    free(nn->uids);
    free(nn->refs);
    free(nn);
}

int nominations_set(struct nominations *n, const char *uid, const char *node, void *ref)
{
    const char *now = strmap_get(&n->by_uid, uid);
    if (now != NULL && node != NULL && strcmp(now, node) == 0) {
        struct nominated_node *nn = strmap_get(&n->by_node, node);
        uint32_t at = 0;
        if (nn != NULL && uid_copy(nn, uid, &at) != NULL)
            nn->refs[at] = ref; /* the same nomination, maybe a new record */
        return 0;
    }
    nominations_remove(n, uid);
    if (node == NULL || node[0] == '\0')
        return 0;
    struct nominated_node *nn = strmap_get(&n->by_node, node);
    if (nn == NULL) {
        nn = calloc(1, sizeof(*nn));
        if (nn == NULL || (nn->node = strdup(node)) == NULL ||
            strmap_put(&n->by_node, nn->node, nn) < 0) {
            if (nn != NULL)
                nominated_node_free(nn);
            return -ENOMEM;
        }
    }
    if (nn->count == nn->capacity) {
        /* uids and refs grow together, to the same capacity */
        uint32_t uid_capacity = nn->capacity, ref_capacity = nn->capacity;
        char **uids = array_grow(nn->uids, &uid_capacity, nn->count + 1, sizeof(*uids));
        if (uids != NULL)
            nn->uids = uids;
        void **refs = array_grow(nn->refs, &ref_capacity, nn->count + 1, sizeof(*refs));
        if (refs != NULL)
            nn->refs = refs;
        if (uids != NULL && refs != NULL)
            nn->capacity = uid_capacity < ref_capacity ? uid_capacity : ref_capacity;
    }
    bool room = nn->count < nn->capacity;
    char *copy = strdup(uid);
    char *node_copy = strdup(node);
    if (!room || copy == NULL || node_copy == NULL ||
        strmap_put(&n->by_uid, copy, node_copy) < 0) {
        free(copy);
        free(node_copy);
        if (nn->count == 0) {
            strmap_remove(&n->by_node, nn->node);
            nominated_node_free(nn);
        }
        return -ENOMEM;
    }
    nn->uids[nn->count] = copy;
    nn->refs[nn->count++] = ref;
    n->count++;
    return 0;
}

const char *nominations_node(const struct nominations *n, const char *uid)
{
    return n->count == 0 ? NULL : strmap_get(&n->by_uid, uid);
}

const struct nominated_node *nominations_on(const struct nominations *n, const char *node)
{
    return n->count == 0 ? NULL : strmap_get(&n->by_node, node);
}

void nominations_free(struct nominations *n)
{
    for (uint32_t i = 0; i < n->by_node.capacity; i++) {
        struct nominated_node *nn = n->by_node.entries[i].value;
        if (nn == NULL)
            continue;
        for (uint32_t k = 0; k < nn->count; k++)
            free(nn->uids[k]);
        nominated_node_free(nn);
    }
    for (uint32_t i = 0; i < n->by_uid.capacity; i++)
        free(n->by_uid.entries[i].value);
    strmap_free(&n->by_node);
    strmap_free(&n->by_uid);
    memset(n, 0, sizeof(*n));
}
