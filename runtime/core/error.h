/* Error codes and the error message buffer that runtime functions fill for the user. */
#ifndef KC_CORE_ERROR_H
#define KC_CORE_ERROR_H

#include <errno.h>
#include <stdarg.h>

/* Runtime functions return 0 or a negative errno-style code (-EINVAL, -ENOMEM, -ERANGE,
 * -ENOENT, ...). Codes of our own start at KC_ERR_BASE; never reuse a removed number. */
#define KC_ERR_BASE 10000
#define KC_ERR_ABI (-(KC_ERR_BASE + 1))        /* plugin ABI not supported by this host */
#define KC_ERR_NOT_PLUGIN (-(KC_ERR_BASE + 2)) /* file has no kc_plugin_query */
#define KC_ERR_SYNTAX (-(KC_ERR_BASE + 3))     /* malformed input file */
#define KC_ERR_PLUGIN (-(KC_ERR_BASE + 4))     /* a plugin failed (init, bad status) */

/* A message for the user: names the object and position, says what to do. */
struct kc_error {
    char message[1024];
};

/* Text for a runtime code. Static storage. */
const char *kc_strerror(int code);

/* Formats into err (when err is not NULL) and returns code, so callers can
 * `return kc_error_set(err, -EINVAL, "%s:%u:%u: ...", ...)`. */
int kc_error_set(struct kc_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
