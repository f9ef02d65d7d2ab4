/* nodeaffinity: kube-scheduler's NodeAffinity. Filter keeps the nodes that pass the pod's
 * nodeSelector and required node affinity (terms ORed, expressions ANDed) and the
 * scheduler-enforced `addedAffinity` of the args; PreFilter restricts the attempt to the node
 * names the required terms pin with matchFields metadata.name, as kube's PreFilterResult does;
 * Score sums the weights of the preferred terms a node matches (the pod's and the args'), and
 * NormalizeScore scales them so the best node scores 100. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "nodeaffinity"

#define REASON_POD "node(s) didn't match Pod's node affinity/selector"
#define REASON_ENFORCED "node(s) didn't match scheduler-enforced node affinity"
#define REASON_CONFLICT "pod affinity terms conflict"
/* kube's name for the plugin: the runtime names it in the reason for the nodes the PreFilter
 * restriction leaves out, "node(s) didn't satisfy plugin(s) [NodeAffinity]". */
#define KUBE_NAME "NodeAffinity"

enum op { OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST, OP_GT, OP_LT };

static const char *const op_names[] = {
    [OP_IN] = "In",         [OP_NOT_IN] = "NotIn", [OP_EXISTS] = "Exists",
    [OP_DOES_NOT_EXIST] = "DoesNotExist", [OP_GT] = "Gt", [OP_LT] = "Lt",
};

struct requirement {
    char *key;
    enum op op;
    bool field; /* matchFields: key is metadata.name, compared with the node's name */
    char **values;
    size_t value_count;
    long long number; /* Gt/Lt */
};

/* A nodeSelectorTerm: every requirement must hold; an empty term matches no node. */
struct term {
    struct requirement *requirements;
    size_t count;
};

struct preferred {
    int64_t weight;
    struct term term;
};

/* The args' addedAffinity, read-only after init (Filter and Score may run on several
 * threads). */
struct plugin {
    bool has_required;
    struct term *required; /* ORed */
    size_t required_count;
    struct preferred *preferred;
    size_t preferred_count;
};

/* Args ---------------------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
args_error(const char *format, ...)
{
    char message[512];
    int used = snprintf(message, sizeof(message), "args: ");
    va_list ap;
    va_start(ap, format);
    vsnprintf(message + used, sizeof(message) - (size_t)used, format, ap);
    va_end(ap);
    kc_log(KC_LOG_ERROR, PLUGIN_NAME, message);
    return -EINVAL;
}

static int check_keys(json_t *object, const char *where, const char *const *known)
{
    const char *key;
    json_t *value;
    json_object_foreach(object, key, value)
    {
        bool found = false;
        for (size_t i = 0; known[i] != NULL && !found; i++)
            found = strcmp(key, known[i]) == 0;
        if (!found)
            return args_error("unknown key \"%s\" in %s", key, where);
    }
    return 0;
}

static bool parse_number(const char *text, long long *out)
{
    char *end;
    errno = 0;
    *out = strtoll(text, &end, 10);
    return errno == 0 && end != text && *end == '\0';
}

static void term_free(struct term *term)
{
    for (size_t i = 0; i < term->count; i++) {
        struct requirement *r = &term->requirements[i];
        free(r->key);
        for (size_t v = 0; v < r->value_count; v++)
            free(r->values[v]);
        free(r->values);
    }
    free(term->requirements);
    memset(term, 0, sizeof(*term));
}

static void plugin_free(struct plugin *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->required_count; i++)
        term_free(&p->required[i]);
    free(p->required);
    for (size_t i = 0; i < p->preferred_count; i++)
        term_free(&p->preferred[i].term);
    free(p->preferred);
    free(p);
}

/* The API server's rules: the value count each operator takes, integers for Gt/Lt, and only
 * metadata.name with In/NotIn and one value in matchFields. */
static int check_values(const struct requirement *r, const char *where)
{
    const char *op = op_names[r->op];
    if (r->field && (r->op != OP_IN && r->op != OP_NOT_IN))
        return args_error("%s: operator %s is not supported in matchFields (use In or NotIn)",
                          where, op);
    if (r->field && r->value_count != 1)
        return args_error("%s: %s in matchFields needs exactly one value", where, op);
    switch (r->op) {
    case OP_IN:
    case OP_NOT_IN:
        return r->value_count == 0 ? args_error("%s: %s needs at least one value", where, op) : 0;
    case OP_EXISTS:
    case OP_DOES_NOT_EXIST:
        return r->value_count != 0 ? args_error("%s: %s takes no values", where, op) : 0;
    default: break;
    }
    long long ignored;
    if (r->value_count != 1 || !parse_number(r->values[0], &ignored))
        return args_error("%s: %s needs exactly one integer value", where, op);
    return 0;
}

static int read_requirement(json_t *j, bool field, const char *where, struct requirement *r)
{
    static const char *const known[] = {"key", "operator", "values", NULL};
    if (!json_is_object(j))
        return args_error("%s: each requirement must be an object", where);
    int rc = check_keys(j, where, known);
    if (rc < 0)
        return rc;
    json_t *key = json_object_get(j, "key"), *op = json_object_get(j, "operator");
    json_t *values = json_object_get(j, "values");
    if (!json_is_string(key) || json_string_length(key) == 0)
        return args_error("%s: key is required", where);
    if (field && strcmp(json_string_value(key), "metadata.name") != 0)
        return args_error("%s: field \"%s\" is not supported (only metadata.name)", where,
                          json_string_value(key));
    if ((r->key = strdup(json_string_value(key))) == NULL)
        return -ENOMEM;
    r->field = field;
    bool known_op = false;
    for (int o = OP_IN; o <= OP_LT && !known_op && json_is_string(op); o++)
        if (strcmp(json_string_value(op), op_names[o]) == 0) {
            r->op = (enum op)o;
            known_op = true;
        }
    if (!known_op)
        return args_error("%s: operator must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt",
                          where);
    if (values != NULL && !json_is_array(values))
        return args_error("%s: values must be a list of strings", where);
    size_t n = json_array_size(values);
    if (n > 0 && (r->values = calloc(n, sizeof(*r->values))) == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(values, i);
        if (!json_is_string(v))
            return args_error("%s: values must be a list of strings", where);
        if ((r->values[i] = strdup(json_string_value(v))) == NULL)
            return -ENOMEM;
        r->value_count = i + 1;
    }
    rc = check_values(r, where);
    if (rc == 0 && (r->op == OP_GT || r->op == OP_LT))
        parse_number(r->values[0], &r->number);
    return rc;
}

static int read_term(json_t *j, const char *where, struct term *term)
{
    static const char *const known[] = {"matchExpressions", "matchFields", NULL};
    if (!json_is_object(j))
        return args_error("%s: a node selector term must be an object", where);
    int rc = check_keys(j, where, known);
    json_t *expressions = json_object_get(j, "matchExpressions");
    json_t *fields = json_object_get(j, "matchFields");
    if (rc == 0 && ((expressions != NULL && !json_is_array(expressions)) ||
                    (fields != NULL && !json_is_array(fields))))
        rc = args_error("%s: matchExpressions and matchFields must be lists", where);
    size_t total = json_array_size(expressions) + json_array_size(fields);
    if (rc < 0 || total == 0)
        return rc;
    if ((term->requirements = calloc(total, sizeof(*term->requirements))) == NULL)
        return -ENOMEM;
    for (size_t i = 0; rc == 0 && i < total; i++) {
        bool field = i >= json_array_size(expressions);
        json_t *r = field ? json_array_get(fields, i - json_array_size(expressions))
                          : json_array_get(expressions, i);
        term->count = i + 1;
        rc = read_requirement(r, field, where, &term->requirements[i]);
    }
    return rc;
}

static int read_required(json_t *j, struct plugin *p)
{
    const char *where = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution";
    static const char *const known[] = {"nodeSelectorTerms", NULL};
    if (!json_is_object(j))
        return args_error("%s must be an object", where);
    int rc = check_keys(j, where, known);
    json_t *terms = json_object_get(j, "nodeSelectorTerms");
    if (rc == 0 && (!json_is_array(terms) || json_array_size(terms) == 0))
        rc = args_error("%s.nodeSelectorTerms: must have at least one node selector term", where);
    if (rc < 0)
        return rc;
    p->has_required = true;
    if ((p->required = calloc(json_array_size(terms), sizeof(*p->required))) == NULL)
        return -ENOMEM;
    for (size_t i = 0; rc == 0 && i < json_array_size(terms); i++) {
        p->required_count = i + 1;
        rc = read_term(json_array_get(terms, i), where, &p->required[i]);
    }
    return rc;
}

static int read_preferred(json_t *j, struct plugin *p)
{
    const char *where = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution";
    static const char *const known[] = {"weight", "preference", NULL};
    if (!json_is_array(j))
        return args_error("%s must be a list", where);
    if (json_array_size(j) > 0 &&
        (p->preferred = calloc(json_array_size(j), sizeof(*p->preferred))) == NULL)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < json_array_size(j); i++) {
        json_t *item = json_array_get(j, i);
        p->preferred_count = i + 1;
        if (!json_is_object(item))
            return args_error("%s: each term must be an object", where);
        rc = check_keys(item, where, known);
        json_t *weight = json_object_get(item, "weight");
        if (rc == 0 && (!json_is_integer(weight) || json_integer_value(weight) < 1 ||
                        json_integer_value(weight) > 100))
            rc = args_error("%s: weight must be an integer from 1 to 100", where);
        if (rc == 0) {
            p->preferred[i].weight = json_integer_value(weight);
            json_t *preference = json_object_get(item, "preference");
            rc = preference == NULL ? args_error("%s: preference is required", where)
                                    : read_term(preference, where, &p->preferred[i].term);
        }
    }
    return rc;
}

static int read_args(const char *args_json, struct plugin *p)
{
    static const char *const known[] = {"addedAffinity", NULL};
    static const char *const known_affinity[] = {
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution", NULL};
    json_error_t error;
    json_t *root = json_loads(args_json != NULL ? args_json : "{}", 0, &error);
    if (root == NULL)
        return args_error("not valid JSON: %s", error.text);
    int rc = json_is_object(root) ? check_keys(root, "args", known)
                                  : args_error("args must be an object");
    json_t *added = rc == 0 ? json_object_get(root, "addedAffinity") : NULL;
    if (added != NULL && !json_is_object(added))
        rc = args_error("addedAffinity must be an object");
    else if (added != NULL)
        rc = check_keys(added, "addedAffinity", known_affinity);
    json_t *required = added != NULL ? json_object_get(added, known_affinity[0]) : NULL;
    json_t *preferred = added != NULL ? json_object_get(added, known_affinity[1]) : NULL;
    if (rc == 0 && required != NULL)
        rc = read_required(required, p);
    if (rc == 0 && preferred != NULL)
        rc = read_preferred(preferred, p);
    json_decref(root);
    return rc;
}

/* Matching (kube's component-helpers nodeaffinity) ------------------------------------- */

static bool value_in(const struct requirement *r, const char *value)
{
    for (size_t i = 0; i < r->value_count; i++)
        if (strcmp(r->values[i], value) == 0)
            return true;
    return false;
}

static bool requirement_matches(const struct requirement *r, const kc_node *node)
{
    const char *value = r->field ? kc_node_name(node) : kc_node_label(node, r->key);
    long long have;
    switch (r->op) {
    case OP_IN: return value != NULL && value_in(r, value);
    case OP_NOT_IN: return value == NULL || !value_in(r, value);
    case OP_EXISTS: return value != NULL;
    case OP_DOES_NOT_EXIST: return value == NULL;
    case OP_GT: return value != NULL && parse_number(value, &have) && have > r->number;
    case OP_LT: return value != NULL && parse_number(value, &have) && have < r->number;
    }
    return false;
}

static bool term_matches(const struct term *term, const kc_node *node)
{
    if (term->count == 0)
        return false;
    for (size_t i = 0; i < term->count; i++)
        if (!requirement_matches(&term->requirements[i], node))
            return false;
    return true;
}

static bool added_required_matches(const struct plugin *p, const kc_node *node)
{
    if (!p->has_required)
        return true;
    for (size_t i = 0; i < p->required_count; i++)
        if (term_matches(&p->required[i], node))
            return true;
    return false;
}

/* Phases -------------------------------------------------------------------------------- */

static int nodeaffinity_init(const kc_host_api *host, const char *args_json, void **self)
{
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    struct plugin *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -ENOMEM;
    rc = read_args(args_json, p);
    if (rc < 0) {
        plugin_free(p);
        return rc;
    }
    *self = p;
    return 0;
}

static void nodeaffinity_fini(void *self)
{
    plugin_free(self);
}

/* A pod without nodeSelector or required affinity skips Filter when the args add none, as in
 * kube. Node names pinned with matchFields restrict the attempt to those nodes
 * (kc_cycle_restrict_nodes): the runtime leaves the others out of Filter and counts them under
 * kube's reason for them. */
static kc_status nodeaffinity_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    const struct plugin *p = self;
    uint32_t constraints = kc_pod_node_constraints(pod);
    if (!p->has_required &&
        (constraints & (KC_POD_NODE_SELECTOR | KC_POD_REQUIRED_NODE_AFFINITY)) == 0)
        return KC_SKIP;
    int32_t count = kc_pod_affinity_node_names(pod, NULL, 0);
    if (count < 0)
        return KC_SUCCESS;
    if (count == 0) {
        kc_cycle_reject(cycle, REASON_CONFLICT);
        return KC_UNRESOLVABLE;
    }
    const char **names = malloc((size_t)count * sizeof(*names));
    if (names == NULL)
        return KC_ERROR;
    count = kc_pod_affinity_node_names(pod, names, (uint32_t)count);
    int rc = kc_cycle_restrict_nodes(cycle, KUBE_NAME, names, (uint32_t)count);
    free(names);
    return rc == 0 ? KC_SUCCESS : KC_ERROR;
}

/* Node labels change only when an administrator edits them: unresolvable for preemption. */
static kc_status nodeaffinity_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                     const kc_node *node)
{
    const struct plugin *p = self;
    if (!added_required_matches(p, node)) {
        kc_cycle_reject(cycle, REASON_ENFORCED);
        return KC_UNRESOLVABLE;
    }
    if (!kc_pod_matches_node_affinity(pod, node)) {
        kc_cycle_reject(cycle, REASON_POD);
        return KC_UNRESOLVABLE;
    }
    return KC_SUCCESS;
}

/* Nothing to score without preferred terms (the pod's or the args'): skipped, as in kube. */
static kc_status nodeaffinity_pre_score(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    const struct plugin *p = self;
    (void)cycle;
    if (p->preferred_count == 0 && (kc_pod_node_constraints(pod) & KC_POD_PREFERRED_NODE_AFFINITY) == 0)
        return KC_SKIP;
    return KC_SUCCESS;
}

static kc_status nodeaffinity_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                    const kc_node *node, int64_t *score)
{
    const struct plugin *p = self;
    (void)cycle;
    int64_t sum = kc_pod_preferred_affinity_score(pod, node);
    for (size_t i = 0; i < p->preferred_count; i++)
        if (term_matches(&p->preferred[i].term, node))
            sum += p->preferred[i].weight;
    *score = sum;
    return KC_SUCCESS;
}

/* kube's DefaultNormalizeScore: 100 * weight / max, all 0 when no node matched a preferred
 * term. */
static kc_status nodeaffinity_normalize_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                              const kc_node *const *nodes, int64_t *scores,
                                              uint32_t count)
{
    (void)self;
    (void)cycle;
    (void)pod;
    (void)nodes;
    kc_normalize_scores(scores, count, 0);
    return KC_SUCCESS;
}

/* A new node, a relabelled node, or the pod itself changed. */
static uint32_t nodeaffinity_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_UPDATE);
}

static const kc_plugin_ops nodeaffinity_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = nodeaffinity_init,
    .fini = nodeaffinity_fini,
    .requeue_events = nodeaffinity_requeue_events,
    .pre_filter = nodeaffinity_pre_filter,
    .filter = nodeaffinity_filter,
    .pre_score = nodeaffinity_pre_score,
    .score = nodeaffinity_score,
    .normalize_score = nodeaffinity_normalize_score,
};

static const kc_plugin_descriptor nodeaffinity_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &nodeaffinity_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &nodeaffinity_descriptor;
}
