/* Hot reload triggers: inotify on the plugin files and the configuration file, and SIGHUP.
 * Polled from the scheduler's loop between cycles; never blocks. */
#ifndef KC_SCHED_WATCH_H
#define KC_SCHED_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "framework.h"

/* A change is acted on once its files have been quiet this long (cp writes in pieces). */
#define WATCH_DEBOUNCE_MS 150

struct watch_file {
    int wd; /* the watch on the file's directory */
    char *dir;
    char *base;
    char *path;
    bool config; /* the configuration file, not a plugin */
    /* the content the path (through symlinks) had when last looked at: a file published
     * again unchanged is no change */
    uint64_t size, hash;
    bool present;
};

struct watch {
    int fd; /* inotify, non-blocking; -1 when nothing is watched */
    struct watch_file *files;
    uint32_t file_count;
    int64_t plugins_due_us, config_due_us; /* 0: nothing pending */
};

enum watch_change { WATCH_NONE = 0, WATCH_PLUGINS = 1, WATCH_CONFIG = 2 };

/* Watch the files of fw's in-process plugins (when plugins) and config_path (when not NULL): an atomic
 * rename into place, a copy over the file and a new file all count. Replaces what w watched. */
int watch_open(struct watch *w, const struct framework *fw, bool plugins, const char *config_path);
void watch_close(struct watch *w);
/* What changed and has been quiet for WATCH_DEBOUNCE_MS (bits of enum watch_change), including
 * a SIGHUP since the last call (WATCH_CONFIG). */
int watch_poll(struct watch *w);
/* SIGHUP asks for a configuration reload (watch_poll reports it). */
void watch_install_sighup(void);

#endif
