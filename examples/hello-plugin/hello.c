/* hello: the model third-party kcycle plugin. A Score plugin that strongly prefers nodes
 * carrying a label (by default hello.kcycle.io/preferred: "true"). It is built out of tree
 * against the installed SDK and links against nothing of kcycle's: every call into the
 * scheduler goes through the host table given to init. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/kcycle.h>

/* The SDK's inline accessors (kc_node_label, kc_log, ...) call through this pointer; each
 * plugin defines it once and kc_plugin_attach() sets it in init. */
KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "hello"
#define PLUGIN_VERSION "1.0.0"
#define DEFAULT_LABEL "hello.kcycle.io/preferred"
#define DEFAULT_VALUE "true"
#define PREFERRED_SCORE 100
#define OTHER_SCORE 0

/* What init read from the args; Score only reads it, so threads can share it. */
struct hello {
    char *label; /* the node label to look for */
    char *value; /* the value that makes a node preferred */
};

/* strdup is POSIX, not C11: a plugin built with -std=c11 and no feature macros lacks it. */
static char *copy_text(const char *text, size_t length)
{
    char *copy = malloc(length + 1);
    if (copy != NULL) {
        memcpy(copy, text, length);
        copy[length] = '\0';
    }
    return copy;
}

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* A deliberately small reader for one string member of a flat JSON object: enough for this
 * plugin's args without pulling a JSON library into a sample. A plugin with richer args
 * should use a JSON parser (the shipped plugins use jansson). Returns 0 with *out a malloc'd
 * copy (NULL when the member is absent), -22 when the member is not a plain non-empty string,
 * -12 when out of memory. */
static int json_string_member(const char *json, const char *key, char **out)
{
    size_t key_length = strlen(key);
    *out = NULL;
    for (const char *at = strchr(json, '"'); at != NULL; at = strchr(at + 1, '"')) {
        if (strncmp(at + 1, key, key_length) != 0 || at[1 + key_length] != '"')
            continue;
        const char *p = skip_space(at + 2 + key_length);
        if (*p != ':')
            continue; /* the key's text appeared as a value, not as a member name */
        p = skip_space(p + 1);
        const char *end = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (end == NULL || end == p + 1)
            return -22;
        /* escapes are not worth supporting in a label: refuse them rather than guess */
        if (memchr(p + 1, '\\', (size_t)(end - p - 1)) != NULL)
            return -22;
        *out = copy_text(p + 1, (size_t)(end - p - 1));
        return *out != NULL ? 0 : -12;
    }
    return 0;
}

static void hello_fini(void *self)
{
    struct hello *hello = self;
    if (hello == NULL)
        return;
    free(hello->label);
    free(hello->value);
    free(hello);
}

/* Reads an optional string arg, falling back to a default; logs a bad value so the operator
 * sees which arg to fix. */
static int read_arg(const char *args_json, const char *key, const char *fallback, char **out)
{
    int rc = json_string_member(args_json, key, out);
    if (rc == -22) {
        char message[160];
        snprintf(message, sizeof(message), "args: '%s' must be a non-empty string without escapes",
                 key);
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, message);
    }
    if (rc == 0 && *out == NULL) {
        *out = copy_text(fallback, strlen(fallback));
        rc = *out != NULL ? 0 : -12;
    }
    if (rc == -12)
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory while reading args");
    return rc;
}

/* args: {"label": "<node label key>", "value": "<label value>"}, both optional. */
static int hello_init(const kc_host_api *host, const char *args_json, void **self)
{
    /* First, before any other SDK call: it checks the host table is at least ABI 1.0. */
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    struct hello *hello = calloc(1, sizeof(*hello));
    if (hello == NULL)
        return -12; /* ENOMEM */
    rc = read_arg(args_json, "label", DEFAULT_LABEL, &hello->label);
    if (rc == 0)
        rc = read_arg(args_json, "value", DEFAULT_VALUE, &hello->value);
    if (rc != 0) {
        hello_fini(hello);
        return rc;
    }
    *self = hello;
    return 0;
}

/* Score may run on several threads at once: it only reads the plugin's state and the node,
 * and allocates nothing (it runs once per feasible node per pod). */
static kc_status hello_score(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                             int64_t *score)
{
    (void)cycle; /* no per-cycle state: the label alone decides */
    (void)pod;
    const struct hello *hello = self;
    const char *value = kc_node_label(node, hello->label);
    *score = value != NULL && strcmp(value, hello->value) == 0 ? PREFERRED_SCORE : OTHER_SCORE;
    return KC_SUCCESS;
}

/* Only the phases it implements are set; the host skips the plugin everywhere else. Built
 * with this SDK's sizeof, so a later host knows which members this plugin knew about. */
static const kc_plugin_ops hello_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = hello_init,
    .fini = hello_fini,
    .score = hello_score,
};

static const kc_plugin_descriptor hello_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, PLUGIN_VERSION, &hello_ops);

/* The one exported symbol. The host compares the descriptor's ABI with its own; returning
 * NULL here is how a plugin declines a host of another ABI major. */
KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &hello_descriptor;
}
