/* Runtime logging: one line per message on stderr, filtered by level. */
#ifndef KC_CORE_LOG_H
#define KC_CORE_LOG_H

#include <kcycle/host.h>

void log_set_level(kc_log_level level);
kc_log_level log_level(void);
/* Text put before every message after the level ("plugin host evaluate"); NULL: none. */
void log_set_tag(const char *text);
void log_msg(kc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(KC_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(KC_LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(KC_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(KC_LOG_DEBUG, __VA_ARGS__)

#endif
