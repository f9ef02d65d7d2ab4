/* The host side of the SDK's typed args (<kcycle/args.h>): the JSON object a plugin's init
 * receives, parsed once with jansson, read key by key, and checked for keys nothing read. The
 * scheduler's host table and the tests' fake host both serve these functions. */
#ifndef KC_CORE_PLUGIN_ARGS_H
#define KC_CORE_PLUGIN_ARGS_H

#include <kcycle/host.h>

kc_args *plugin_args_parse(const char *json, char *error, size_t error_size);
int plugin_args_int(kc_args *args, const char *key, int64_t fallback, int64_t *out);
int plugin_args_string(kc_args *args, const char *key, const char *fallback, const char **out);
int plugin_args_bool(kc_args *args, const char *key, int fallback, int *out);
int plugin_args_quantity(kc_args *args, const char *key, int scale, int64_t fallback, int64_t *out);
int plugin_args_finish(kc_args *args, char *error, size_t error_size);

#endif
