/* Runtime logging to stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static kc_log_level current_level = KC_LOG_WARN;
static char tag[96]; /* "plugin host NAME: " in a plugin host, so its lines say whose they are */

void log_set_tag(const char *text)
{
    snprintf(tag, sizeof(tag), "%s%s", text != NULL ? text : "", text != NULL ? ": " : "");
}

void log_set_level(kc_log_level level)
{
    current_level = level;
}

kc_log_level log_level(void)
{
    return current_level;
}

void log_msg(kc_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    if (level > current_level)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "kcycle: %s: %s%s\n", names[level], tag, line);
}
