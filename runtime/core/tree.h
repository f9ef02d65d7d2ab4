/* A parsed YAML or JSON document with the position of every node, for error messages that
 * name file:line:column. JSON is parsed as YAML flow style, so one loader serves both. */
#ifndef KC_CORE_TREE_H
#define KC_CORE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

enum tree_type { TREE_SCALAR, TREE_MAP, TREE_SEQ };

struct tree {
    enum tree_type type;
    uint32_t line;    /* 1-based */
    uint32_t column;  /* 1-based */
    const char *file; /* shared by every node of the document */
    /* TREE_SCALAR */
    char *scalar;
    bool quoted; /* written in quotes: always a string, never a number/bool/null */
    /* TREE_MAP: keys[i] -> items[i]; TREE_SEQ: items[i] */
    struct tree **keys;
    struct tree **items;
    uint32_t count;
};

/* Parse a file or a buffer. The name is used in messages. On error *out is NULL and err says
 * "file:line:column: what": -EINVAL for bad syntax, anchors/aliases, non-scalar or duplicate
 * map keys and a second document; -errno when the file cannot be read; -ENOMEM. Only the first
 * document is read; an empty one is an empty map. A buffer whose first non-blank character is
 * '{' or '[' is JSON: its tabs become spaces, so tab-indented JSON loads. The caller frees the
 * result with tree_free (any node frees its subtree; the root also frees the file name). */
int tree_parse_file(const char *path, struct tree **out, struct kc_error *err);
int tree_parse_buffer(const char *name, const char *data, size_t len, struct tree **out,
                      struct kc_error *err);
void tree_free(struct tree *t);

/* Format "FILE:LINE:COL: key 'KEY': problem" (or "key 'KEY': problem" when t is NULL) into err
 * and return code: the one shape of every file error. */
int tree_error(const struct tree *t, struct kc_error *err, int code, const char *key,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Map lookup; NULL when t is not a map or has no such key. */
const struct tree *tree_get(const struct tree *t, const char *key);
/* A plain scalar that YAML reads as null (~, null, Null, NULL, or empty). false for NULL. */
bool tree_is_null(const struct tree *t);

/* Typed reads of a scalar. Each returns 0 or -EINVAL with err naming file:line:column and
 * what, where `what` names the key for the user (e.g. "percentageOfNodesToScore"):
 * "FILE:LINE:COL: key 'WHAT': problem; what is expected". A null, a map or a list is an error
 * for all of them. Strings accept any other scalar and point into t. Integers are plain decimal
 * int64, booleans plain true/True/TRUE/false/False/FALSE; quoted text is never either. */
int tree_string(const struct tree *t, const char *what, const char **out, struct kc_error *err);
int tree_int64(const struct tree *t, const char *what, int64_t *out, struct kc_error *err);
int tree_bool(const struct tree *t, const char *what, bool *out, struct kc_error *err);
/* Durations, Go's syntax without sign: units h, m, s, ms, chained as in "1h30m", with
 * fractions ("1.5s"), or a plain number of seconds. Must come to whole milliseconds. */
int tree_duration_ms(const struct tree *t, const char *what, int64_t *out, struct kc_error *err);
/* A Kubernetes quantity (string or number) for resource_name, scaled as quantity_scale_for. */
int tree_quantity(const struct tree *t, const char *resource_name, int64_t *out,
                  struct kc_error *err);

/* Check that every key of map t is in allowed (NULL-terminated); -EINVAL naming the first
 * unknown key and its position otherwise. -EINVAL too when t is not a map. */
int tree_check_keys(const struct tree *t, const char *what, const char *const *allowed,
                    struct kc_error *err);

/* The subtree as compact JSON (plain scalars become numbers, true/false or null where YAML's
 * 1.2 core schema reads them so: 42, 0x1F, 0o17, 1.5, 1e3, true, null, ~; quoted scalars stay
 * strings). Key order is kept. malloc'd; the caller frees it. NULL on allocation failure. */
char *tree_to_json(const struct tree *t);

#endif
