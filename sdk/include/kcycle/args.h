/* Typed plugin args (added in 1.2): read the JSON object given to init without a JSON
 * library. Parse once, read each key with the type it must have, then finish: the host reports
 * the first bad value or a key no getter read (a typo), naming the key. */
#ifndef KCYCLE_ARGS_H
#define KCYCLE_ARGS_H

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NULL args_json reads as "{}". NULL with error filled when the text is not a JSON object, or
 * on an older host when there are args to read. A host older than 1.2 has no parser: absent
 * args (NULL, "" or "{}", blanks aside) still parse, to a sentinel on which every getter gives
 * its fallback, so a plugin without args keeps loading there. */
static inline kc_args *kc_args_parse(const char *args_json, char *error, size_t error_size)
{
    if (!KC_HOST_HAS(kc_host, args_finish)) {
        static char older_host_sentinel;
        const char *p = args_json != NULL ? args_json : "";
        int matched = 0; /* characters of "{}" seen so far */
        for (; *p != '\0'; p++) {
            if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
                continue;
            if (matched == 2 || *p != "{}"[matched])
                break;
            matched++;
        }
        if (*p == '\0' && matched != 1)
            return (kc_args *)(void *)&older_host_sentinel;
        if (error != NULL && error_size > 0)
            snprintf(error, error_size, "args given but the host cannot read them (it lacks "
                                        "SDK 1.2's args_parse)");
        return NULL;
    }
    return kc_host->args_parse(args_json, error, error_size);
}

/* Each getter: 0 with *out = fallback when args is NULL or the host predates 1.2. */
static inline int kc_args_int(kc_args *args, const char *key, int64_t fallback, int64_t *out)
{
    if (args == NULL || !KC_HOST_HAS(kc_host, args_finish)) {
        *out = fallback;
        return 0;
    }
    return kc_host->args_int(args, key, fallback, out);
}

static inline int kc_args_string(kc_args *args, const char *key, const char *fallback,
                                 const char **out)
{
    if (args == NULL || !KC_HOST_HAS(kc_host, args_finish)) {
        *out = fallback;
        return 0;
    }
    return kc_host->args_string(args, key, fallback, out);
}

static inline int kc_args_bool(kc_args *args, const char *key, int fallback, int *out)
{
    if (args == NULL || !KC_HOST_HAS(kc_host, args_finish)) {
        *out = fallback;
        return 0;
    }
    return kc_host->args_bool(args, key, fallback, out);
}

static inline int kc_args_quantity(kc_args *args, const char *key, int scale, int64_t fallback,
                                   int64_t *out)
{
    if (args == NULL || !KC_HOST_HAS(kc_host, args_finish)) {
        *out = fallback;
        return 0;
    }
    return kc_host->args_quantity(args, key, scale, fallback, out);
}

/* 0 for NULL args and on an older host (the sentinel holds nothing to free or report). */
static inline int kc_args_finish(kc_args *args, char *error, size_t error_size)
{
    if (args == NULL || !KC_HOST_HAS(kc_host, args_finish))
        return 0;
    return kc_host->args_finish(args, error, error_size);
}

#ifdef __cplusplus
}
#endif

#endif
