/* Runtime logging: one line per message on stderr, filtered by level, as text or JSON. */
#ifndef KC_CORE_LOG_H
#define KC_CORE_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include <kcycle/host.h>

void log_set_level(kc_log_level level);
kc_log_level log_level(void);
/* "text" (the default: "kcycle: LEVEL: message") or "json" (one object per line with ts,
 * level, msg and the fields). 0 or -EINVAL for another name. */
int log_set_format(const char *name);
bool log_json(void);
/* Text put before every message after the level ("plugin host evaluate"); NULL: none. */
void log_set_tag(const char *text);
void log_msg(kc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One field of a structured line: text (NULL: left out) or a number. */
struct log_field {
    const char *key;
    const char *text;
    double number;
    bool is_number;
};

/* The rate limit's state for one subject (a pod): kept by the caller, zeroed at first, used
 * by one thread at a time. Per subject, so that many subjects never share or evict a count. */
struct log_rate {
    uint64_t hash; /* of the key of the lines counted */
    int64_t window_start_ms;
    uint32_t lines;      /* written in this window */
    uint32_t suppressed; /* dropped since the last line written, said with the next one */
};

/* A structured line: msg then key=value pairs (text) or members (JSON). With rate and
 * rate_key, at most 3 lines a minute with the same key are written for rate's subject; the
 * next one written says how many were dropped (suppressed=N). The key names what makes lines
 * "the same" (an outcome, not the attempt's duration). A line longer than 4 KiB is cut short
 * ("...") and stays valid JSON; bytes that are not UTF-8 are written as U+FFFD. */
void log_fields(kc_log_level level, const char *msg, const struct log_field *fields, uint32_t count,
                struct log_rate *rate, const char *rate_key);

#define log_error(...) log_msg(KC_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(KC_LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(KC_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(KC_LOG_DEBUG, __VA_ARGS__)

#endif
