/* A valid shared object that exports a function, but not kc_plugin_query: the loader must
 * say which symbol is missing instead of calling through a NULL pointer. */
#include <kcycle/kcycle.h>

/* Exported on purpose under a name close to the real one, as a plausible author mistake. */
KC_API const char *kc_plugin_describe(void);

KC_API const char *kc_plugin_describe(void)
{
    return "noquery: exports no kc_plugin_query";
}
