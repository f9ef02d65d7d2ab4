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
 * on an older host. */
static inline kc_args *kc_args_parse(const char *args_json, char *error, size_t error_size)
{
    if (!KC_HOST_HAS(kc_host, args_finish)) {
        if (error != NULL && error_size > 0)
            snprintf(error, error_size, "the host does not read args (SDK 1.2 needed)");
        return NULL;
    }
    return kc_host->args_parse(args_json, error, error_size);
}

static inline int kc_args_int(kc_args *args, const char *key, int64_t fallback, int64_t *out)
{
    return kc_host->args_int(args, key, fallback, out);
}

static inline int kc_args_string(kc_args *args, const char *key, const char *fallback,
                                 const char **out)
{
    return kc_host->args_string(args, key, fallback, out);
}

static inline int kc_args_bool(kc_args *args, const char *key, int fallback, int *out)
{
    return kc_host->args_bool(args, key, fallback, out);
}

static inline int kc_args_quantity(kc_args *args, const char *key, int scale, int64_t fallback,
                                   int64_t *out)
{
    return kc_host->args_quantity(args, key, scale, fallback, out);
}

static inline int kc_args_finish(kc_args *args, char *error, size_t error_size)
{
    if (args == NULL)
        return 0;
    return kc_host->args_finish(args, error, error_size);
}

#ifdef __cplusplus
}
#endif

#endif
