/* Taps on the host API table of hostapi.c, for tools that run plugins outside a scheduler (the
 * plugin test harness, docs/plugin-testing.md). */
#ifndef KC_SCHED_HOSTAPI_H
#define KC_SCHED_HOSTAPI_H

#include <kcycle/kcycle.h>

/* Also give every plugin log line (kc_log, kc_logf) to fn, with the plugin's name; NULL fn
 * stops. One tap per process; set it before plugins run, not while they do. */
typedef void (*hostapi_log_fn)(void *ctx, kc_log_level level, const char *plugin,
                               const char *message);
void hostapi_capture_logs(hostapi_log_fn fn, void *ctx);
/* Stop the tap if ctx still holds it (a later one replaced it otherwise). */
void hostapi_capture_logs_stop(void *ctx);

#endif
