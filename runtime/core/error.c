/* kc_strerror and the error message helper. */
#include "error.h"

#include <stdio.h>
#include <string.h>

const char *kc_strerror(int code)
{
    switch (code) {
    case 0: return "success";
    case KC_ERR_ABI: return "plugin ABI not supported by this host";
    case KC_ERR_NOT_PLUGIN: return "not a kcycle plugin (no kc_plugin_query)";
    case KC_ERR_SYNTAX: return "malformed input";
    case KC_ERR_PLUGIN: return "plugin failure";
    default: break;
    }
    if (code < 0 && code > -KC_ERR_BASE)
        return strerror(-code);
    return "unknown error";
}

int kc_error_set(struct kc_error *err, int code, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    }
    return code;
}
