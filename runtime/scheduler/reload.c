/* Hot reload for the scheduler's loops: see reload.h. */
#include "reload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int reloader_open(struct reloader *r, struct scheduler *s, const char *config_path,
                  bool watch_plugins, bool watch_config, struct kc_error *err)
{
    memset(r, 0, sizeof(*r));
    r->watch.fd = -1;
    r->config_path = config_path;
    r->watch_plugins = watch_plugins;
    r->watch_config = watch_config;
    int rc = watch_open(&r->watch, s->fw, watch_plugins, watch_config ? config_path : NULL);
    if (rc < 0)
        return kc_error_set(err, rc, "hot reload: cannot watch files: %s", kc_strerror(rc));
    /* from here on a change of a watched file is seen (its identity is taken) and SIGHUP
     * reloads: what a deployment check, or a test, waits for before changing a file */
    uint32_t plugin_files = 0;
    for (uint32_t i = 0; i < r->watch.file_count; i++)
        plugin_files += !r->watch.files[i].config;
    log_info("hot reload: ready, plugin generation %llu; %u plugin file(s) watched%s",
             (unsigned long long)s->fw->generation, plugin_files,
             watch_config ? ", the configuration file watched" : "");
    return 0;
}

void reloader_close(struct reloader *r)
{
    watch_close(&r->watch);
    if (r->reloaded_cfg != NULL) {
        config_free(r->reloaded_cfg);
        free(r->reloaded_cfg);
    }
    memset(r, 0, sizeof(*r));
    r->watch.fd = -1;
}

/* A configuration reload: the whole file is checked first; a bad one changes nothing. */
static bool reload_config(struct reloader *r, struct scheduler *s)
{
    struct kc_error err = {{0}};
    if (r->config_path == NULL) {
        log_warn("configuration reload asked, but the configuration did not come from a file "
                 "of its own: give --config FILE to reload one");
        return false;
    }
    struct config *cfg = calloc(1, sizeof(*cfg));
    int rc = cfg == NULL ? -ENOMEM : config_load_file(r->config_path, cfg, &err);
    if (rc < 0) {
        log_error("configuration %s rejected, the running one stays: %s", r->config_path,
                  err.message[0] != '\0' ? err.message : kc_strerror(rc));
        if (cfg != NULL)
            config_free(cfg);
        free(cfg);
        return false;
    }
    if (strcmp(cfg->scheduler_name, s->cfg->scheduler_name) != 0)
        log_warn("configuration %s: schedulerName changes only at a restart", r->config_path);
    free(cfg->scheduler_name);
    cfg->scheduler_name = strdup(s->cfg->scheduler_name);
    cfg->private_copies = true;
    if (cfg->scheduler_name == NULL || (rc = scheduler_reload(s, cfg, &err)) < 0) {
        log_error("configuration %s rejected, the running one stays: %s", r->config_path,
                  err.message[0] != '\0' ? err.message : kc_strerror(rc));
        config_free(cfg);
        free(cfg);
        return false;
    }
    if (r->reloaded_cfg != NULL) {
        config_free(r->reloaded_cfg);
        free(r->reloaded_cfg);
    }
    r->reloaded_cfg = cfg;
    /* the plugin files may have moved with the configuration */
    int wrc =
        watch_open(&r->watch, s->fw, r->watch_plugins, r->watch_config ? r->config_path : NULL);
    if (wrc < 0)
        log_error("hot reload: watching the files stopped: %s; SIGHUP still reloads",
                  kc_strerror(wrc));
    log_warn("configuration %s reloaded: plugin generation %llu", r->config_path,
             (unsigned long long)s->fw->generation);
    return true;
}

/* Changed plugin files and SIGHUP, looked at every few milliseconds of wall time. */
bool reloader_poll(struct reloader *r, struct scheduler *s)
{
    int64_t now = wall_us();
    if (now - r->last_poll_us < 2000)
        return false;
    r->last_poll_us = now;
    int changes = watch_poll(&r->watch);
    if (changes & WATCH_CONFIG)
        return reload_config(r, s); /* it loads every plugin file again */
    if (!(changes & WATCH_PLUGINS))
        return false;
    struct kc_error err = {{0}};
    int rc = scheduler_reload(s, NULL, &err);
    if (rc < 0) {
        log_error("hot reload refused, generation %llu keeps serving: %s",
                  (unsigned long long)s->fw->generation,
                  err.message[0] != '\0' ? err.message : kc_strerror(rc));
        return false;
    }
    log_warn("hot reload: plugin generation %llu serves new cycles",
             (unsigned long long)s->fw->generation);
    return true;
}
