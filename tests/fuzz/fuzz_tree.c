/* Fuzz target for the YAML/JSON loader: tree_parse_buffer on any bytes, then every typed read on
 * every node and tree_to_json on the root, whose output must be JSON that jansson reads back. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "tree.h"

static const char *const some_keys[] = {"name", "count", "metadata", "spec", NULL};

/* Every failure fills the message: errors reach users, who need to be told where and why. */
static void check_failure(int rc, const struct kc_error *err, const char *what)
{
    if (rc == 0)
        return;
    fuzz_check(rc == -EINVAL, what, "failed with a code other than -EINVAL");
    fuzz_check(err->message[0] != '\0', what, "failed without a message");
}

static void visit_scalar(const struct tree *t)
{
    struct kc_error err = {{0}};
    fuzz_check(t->scalar != NULL, "a scalar without text", NULL);
    fuzz_check(t->keys == NULL && t->items == NULL && t->count == 0, "a scalar with children",
               t->scalar);

    const char *s;
    int rc = tree_string(t, "fuzz", &s, &err);
    check_failure(rc, &err, "tree_string");
    fuzz_check((rc == 0) == !tree_is_null(t), "tree_string and tree_is_null disagree", t->scalar);

    int64_t number;
    err.message[0] = '\0';
    rc = tree_int64(t, "fuzz", &number, &err);
    check_failure(rc, &err, "tree_int64");
    fuzz_check(rc != 0 || !t->quoted, "tree_int64 read quoted text", t->scalar);

    bool flag;
    err.message[0] = '\0';
    rc = tree_bool(t, "fuzz", &flag, &err);
    check_failure(rc, &err, "tree_bool");
    fuzz_check(rc != 0 || !t->quoted, "tree_bool read quoted text", t->scalar);

    int64_t ms = -1;
    err.message[0] = '\0';
    rc = tree_duration_ms(t, "fuzz", &ms, &err);
    check_failure(rc, &err, "tree_duration_ms");
    fuzz_check(rc != 0 || ms >= 0, "tree_duration_ms gave a negative duration", t->scalar);

    static const char *const resources[] = {"cpu", "memory"};
    for (size_t i = 0; i < sizeof(resources) / sizeof(resources[0]); i++) {
        int64_t amount;
        err.message[0] = '\0';
        rc = tree_quantity(t, resources[i], &amount, &err);
        check_failure(rc, &err, "tree_quantity");
    }
}

static void visit(const struct tree *t, const struct tree *root);

static void visit_map(const struct tree *t, const struct tree *root)
{
    for (uint32_t i = 0; i < t->count; i++) {
        const struct tree *key = t->keys[i];
        fuzz_check(key != NULL && key->type == TREE_SCALAR, "a map key that is not a scalar", NULL);
        /* Keys are unique, so a lookup finds this very entry. */
        fuzz_check(tree_get(t, key->scalar) == t->items[i], "tree_get found another entry",
                   key->scalar);
        visit(key, root);
        visit(t->items[i], root);
    }
    struct kc_error err = {{0}};
    check_failure(tree_check_keys(t, "fuzz", some_keys, &err), &err, "tree_check_keys");
}

static void visit(const struct tree *t, const struct tree *root)
{
    fuzz_check(t != NULL, "a missing node", NULL);
    fuzz_check(t->line >= 1 && t->column >= 1, "a node without a position", NULL);
    fuzz_check(t->file == root->file, "a node that names another file", NULL);
    switch (t->type) {
    case TREE_SCALAR: visit_scalar(t); break;
    case TREE_MAP: visit_map(t, root); break;
    case TREE_SEQ:
        fuzz_check(t->keys == NULL, "a list with keys", NULL);
        for (uint32_t i = 0; i < t->count; i++)
            visit(t->items[i], root);
        break;
    default: fuzz_check(false, "a node of unknown type", NULL);
    }
}

/* The integer a plain scalar names in YAML 1.2's core schema (decimal, 0x hex, 0o octal). */
static long long scalar_integer(const char *s)
{
    if (strncmp(s, "0x", 2) == 0)
        return (long long)strtoull(s + 2, NULL, 16);
    if (strncmp(s, "0o", 2) == 0)
        return (long long)strtoull(s + 2, NULL, 8);
    return strtoll(s, NULL, 10);
}

/* What jansson reads back must be what the document says, down to every digit of a number:
 * plugins get their args as this JSON and cannot tell a rounded value from the real one. */
static void check_json_value(const struct tree *t, json_t *json)
{
    fuzz_check(json != NULL, "tree_to_json lost a value", t->scalar);
    switch (t->type) {
    case TREE_MAP:
        fuzz_check(json_is_object(json) && json_object_size(json) == t->count,
                   "tree_to_json changed a map", NULL);
        for (uint32_t i = 0; i < t->count; i++)
            check_json_value(t->items[i], json_object_get(json, t->keys[i]->scalar));
        return;
    case TREE_SEQ:
        fuzz_check(json_is_array(json) && json_array_size(json) == t->count,
                   "tree_to_json changed a list", NULL);
        for (uint32_t i = 0; i < t->count; i++)
            check_json_value(t->items[i], json_array_get(json, i));
        return;
    case TREE_SCALAR: break;
    }
    if (json_is_string(json))
        fuzz_check(strcmp(json_string_value(json), t->scalar) == 0, "tree_to_json changed text",
                   t->scalar);
    else if (json_is_integer(json))
        fuzz_check(json_integer_value(json) == scalar_integer(t->scalar),
                   "tree_to_json changed an integer", t->scalar);
    else if (json_is_real(json))
        fuzz_check(json_real_value(json) == strtod(t->scalar, NULL),
                   "tree_to_json changed a number", t->scalar);
    fuzz_check(!t->quoted || json_is_string(json), "tree_to_json unquoted quoted text", t->scalar);
}

/* The JSON must be valid and say what the tree says: plugins parse their args with jansson. */
static void check_json(const struct tree *root)
{
    char *text = tree_to_json(root);
    fuzz_check(text != NULL, "tree_to_json failed on a parsed tree", NULL);
    json_error_t error;
    json_t *back = json_loads(text, JSON_DECODE_ANY, &error);
    fuzz_check(back != NULL, "tree_to_json wrote JSON that jansson refuses", error.text);
    check_json_value(root, back);
    json_decref(back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tree sentinel; /* a failed parse must reset root to NULL */
    struct tree *root = &sentinel;
    struct kc_error err = {{0}};
    int rc = tree_parse_buffer("fuzz.yaml", (const char *)data, size, &root, &err);
    if (rc != 0) {
        fuzz_check(root == NULL, "tree_parse_buffer failed but returned a tree", NULL);
        fuzz_check(rc == -EINVAL || rc == -ENOMEM, "tree_parse_buffer: undocumented code", NULL);
        fuzz_check(strncmp(err.message, "fuzz.yaml:", 10) == 0,
                   "tree_parse_buffer: the message does not name the file", err.message);
        return 0;
    }
    fuzz_check(root != NULL && strcmp(root->file, "fuzz.yaml") == 0,
               "tree_parse_buffer: the root does not name the file", NULL);
    visit(root, root);
    check_json(root);
    tree_free(root);
    return 0;
}
