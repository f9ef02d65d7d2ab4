/* Typed plugin args over jansson (plugin_args.h, docs/sdk/kc_args_parse.md). A getter that
 * meets a value of the wrong type records the first such error instead of failing init on the
 * spot, so a plugin reads every key and reports once, from kc_args_finish. */
#include "plugin_args.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "quantity.h"

struct kc_args {
    json_t *root;
    char error[256];   /* the first bad value; "" while none */
    const char **read; /* keys a getter asked for (the object's own strings), grown on demand */
    uint32_t read_count, read_capacity;
    bool out_of_memory; /* a read key could not be recorded: finish reports that, not "unknown" */
};

static void copy_error(char *error, size_t error_size, const char *text)
{
    if (error != NULL && error_size > 0)
        snprintf(error, error_size, "%s", text);
}

kc_args *plugin_args_parse(const char *json, char *error, size_t error_size)
{
    json_error_t jerr;
    json_t *root = json_loads(json != NULL && json[0] != '\0' ? json : "{}", 0, &jerr);
    if (root == NULL) {
        char text[256];
        snprintf(text, sizeof(text), "args: line %d column %d: %s", jerr.line, jerr.column,
                 jerr.text);
        copy_error(error, error_size, text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        copy_error(error, error_size, "args: want a JSON object");
        return NULL;
    }
    struct kc_args *args = calloc(1, sizeof(*args));
    if (args == NULL) {
        json_decref(root);
        copy_error(error, error_size, "args: out of memory");
        return NULL;
    }
    args->root = root;
    return args;
}

/* The value of key, marking it read; NULL when absent (or JSON null), and for NULL args (a
 * failed parse: the getters then answer the fallback rather than crash the host). */
static json_t *take(kc_args *args, const char *key)
{
    if (args == NULL)
        return NULL;
    const char *stored = NULL;
    json_t *value = NULL;
    void *iter = json_object_iter_at(args->root, key);
    if (iter != NULL) {
        stored = json_object_iter_key(iter);
        value = json_object_iter_value(iter);
    }
    if (stored != NULL) {
        bool seen = false;
        for (uint32_t i = 0; i < args->read_count && !seen; i++)
            seen = strcmp(args->read[i], stored) == 0;
        if (!seen && args->read_count == args->read_capacity) {
            uint32_t capacity = args->read_capacity != 0 ? args->read_capacity * 2 : 16;
            const char **grown = realloc(args->read, capacity * sizeof(*grown));
            if (grown != NULL) {
                args->read = grown;
                args->read_capacity = capacity;
            }
        }
        if (!seen && args->read_count < args->read_capacity)
            args->read[args->read_count++] = stored;
        else if (!seen)
            args->out_of_memory = true;
    }
    return json_is_null(value) ? NULL : value;
}

static int bad(kc_args *args, const char *key, const char *want)
{
    if (args->error[0] == '\0')
        snprintf(args->error, sizeof(args->error), "args: key \"%s\": %s", key, want);
    return -EINVAL;
}

int plugin_args_int(kc_args *args, const char *key, int64_t fallback, int64_t *out)
{
    json_t *v = take(args, key);
    *out = fallback;
    if (v == NULL)
        return 0;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    double d = json_is_real(v) ? json_real_value(v) : 0.5;
    if (d > -9e18 && d < 9e18 && d == (double)(int64_t)d) { /* 4.0 is an integer; 4.5 not */
        *out = (int64_t)d;
        return 0;
    }
    return bad(args, key, "want an integer");
}

int plugin_args_string(kc_args *args, const char *key, const char *fallback, const char **out)
{
    json_t *v = take(args, key);
    *out = fallback;
    if (v == NULL)
        return 0;
    if (!json_is_string(v))
        return bad(args, key, "want a string");
    *out = json_string_value(v);
    return 0;
}

int plugin_args_bool(kc_args *args, const char *key, int fallback, int *out)
{
    json_t *v = take(args, key);
    *out = fallback;
    if (v == NULL)
        return 0;
    if (!json_is_boolean(v))
        return bad(args, key, "want true or false");
    *out = json_is_true(v);
    return 0;
}

int plugin_args_quantity(kc_args *args, const char *key, int scale, int64_t fallback, int64_t *out)
{
    json_t *v = take(args, key);
    *out = fallback;
    if (v == NULL)
        return 0;
    char text[64];
    if (json_is_string(v))
        snprintf(text, sizeof(text), "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        /* 15 significant digits give back the decimal the config wrote (0.1, not the double's
         * 0.10000000000000001, which would round up to 101m); the quantity grammar takes the
         * exponent %g may print. */
        snprintf(text, sizeof(text), "%.15g", json_real_value(v));
    else
        return bad(args, key, "want a quantity such as \"4Gi\" or \"500m\"");
    int64_t value;
    int rc = quantity_parse(text, strlen(text), scale, &value);
    if (rc == -ERANGE)
        return bad(args, key, "quantity too large");
    if (rc < 0)
        return bad(args, key, "want a quantity such as \"4Gi\" or \"500m\"");
    *out = value;
    return 0;
}

int plugin_args_finish(kc_args *args, char *error, size_t error_size)
{
    if (args == NULL)
        return 0;
    int rc = 0;
    if (args->error[0] != '\0') {
        copy_error(error, error_size, args->error);
        rc = -EINVAL;
    } else if (args->out_of_memory) {
        copy_error(error, error_size, "args: out of memory recording the keys read");
        rc = -ENOMEM;
    } else {
        const char *key;
        json_t *value;
        json_object_foreach(args->root, key, value)
        {
            bool seen = false;
            for (uint32_t i = 0; i < args->read_count && !seen; i++)
                seen = strcmp(args->read[i], key) == 0;
            if (!seen) {
                char text[256];
                snprintf(text, sizeof(text), "args: unknown key \"%s\"", key);
                copy_error(error, error_size, text);
                rc = -EINVAL;
                break;
            }
        }
    }
    json_decref(args->root);
    free(args->read);
    free(args);
    return rc;
}
