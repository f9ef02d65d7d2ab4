/* Hot reload for the scheduler's loops (the simulator and the bridge client): changed plugin
 * files load as a new generation, a changed or SIGHUP'd configuration is checked whole and
 * then replaces the running one; anything that fails leaves the running generation serving. */
#ifndef KC_SCHED_RELOAD_H
#define KC_SCHED_RELOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "scheduler.h"
#include "watch.h"

struct reloader {
    struct watch watch;
    const char *config_path; /* borrowed; NULL: the configuration cannot be reloaded */
    bool watch_plugins, watch_config;
    int64_t last_poll_us;
    struct config *reloaded_cfg; /* the configuration in use after a reload, or NULL */
};

/* Start watching what was asked (the files of s's in-process plugins, the config file).
 * config_path is borrowed and must outlive r. */
int reloader_open(struct reloader *r, struct scheduler *s, const char *config_path,
                  bool watch_plugins, bool watch_config, struct kc_error *err);
/* Look at the watches and SIGHUP (at most every 2 ms of wall time; never blocks) and reload
 * what changed. true when a new plugin generation now serves new cycles. */
bool reloader_poll(struct reloader *r, struct scheduler *s);
/* Call after scheduler_close: the scheduler may point into the reloaded configuration. */
void reloader_close(struct reloader *r);

#endif
