/* Builds the framework from the configuration: load, check and init each plugin, then index
 * the plugins by phase so the cycle walks short arrays. */
#include "framework.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crash.h"
#include "log.h"
#include "pod_fields.h"

static bool implements(const struct plugin *p, enum phase phase)
{
    const kc_plugin_ops *o = &p->ops;
    switch (phase) {
    case PHASE_PRE_ENQUEUE: return o->pre_enqueue != NULL;
    case PHASE_PRE_FILTER: return o->pre_filter != NULL;
    case PHASE_FILTER: return o->filter != NULL;
    case PHASE_POST_FILTER: return o->post_filter != NULL;
    case PHASE_PRE_SCORE: return o->pre_score != NULL;
    case PHASE_SCORE: return o->score != NULL;
    case PHASE_RESERVE: return o->reserve != NULL;
    case PHASE_PERMIT: return o->permit != NULL;
    case PHASE_PRE_BIND: return o->pre_bind != NULL;
    case PHASE_BIND: return o->bind != NULL;
    case PHASE_POST_BIND: return o->post_bind != NULL;
    case PHASE_EVENT: return o->on_event != NULL;
    case PHASE_UNRESERVE: return o->unreserve != NULL;
    default: return false;
    }
}

static int index_phases(struct framework *fw, struct kc_error *err)
{
    for (int phase = 0; phase < PHASE_COUNT; phase++) {
        fw->phase[phase] = calloc(fw->count + 1, sizeof(struct plugin *));
        if (fw->phase[phase] == NULL)
            return -ENOMEM;
        for (uint32_t i = 0; i < fw->count; i++)
            if (implements(&fw->plugins[i], (enum phase)phase))
                fw->phase[phase][fw->phase_count[phase]++] = &fw->plugins[i];
    }
    fw->reserve_all = calloc(fw->count + 1, sizeof(struct plugin *));
    if (fw->reserve_all == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < fw->count; i++) {
        struct plugin *p = &fw->plugins[i];
        if (p->ops.reserve != NULL || p->ops.unreserve != NULL)
            fw->reserve_all[fw->reserve_all_count++] = p;
        if (p->ops.queue_less == NULL)
            continue;
        if (fw->queue_sort != NULL)
            return kc_error_set(err, -EINVAL,
                                "plugins %s and %s both implement QueueSort; exactly one may: "
                                "remove one from the configuration",
                                fw->queue_sort->name, p->name);
        fw->queue_sort = p;
    }
    return 0;
}

static int open_one(struct plugin *p, const struct plugin_config *pc, const char *plugin_dir,
                    const kc_host_api *host, const struct framework_load *how, struct kc_error *err)
{
    char *path = loader_find(pc->name, pc->path, plugin_dir);
    if (path == NULL)
        return -ENOMEM;
    int rc = loader_open_as(path, p, how, err);
    free(path);
    if (rc < 0)
        return rc;
    if (strcmp(p->name, pc->name) != 0) {
        rc = kc_error_set(err, -EINVAL,
                          "plugin %s: the file declares the plugin name '%s' but the "
                          "configuration calls it '%s'",
                          p->path, p->name, pc->name);
        loader_close(p);
        return rc;
    }
    p->weight = pc->weight;
    p->failure_policy = pc->failure_policy;
    if (pc->queue_sort_off)
        p->ops.queue_less = NULL; /* another plugin orders the queue (docs/configuration.md) */
    if (p->ops.init != NULL) {
        crash_enter(p->name, "init");
        rc = p->ops.init(host, pc->args_json != NULL ? pc->args_json : "{}", &p->self);
        crash_leave();
        if (rc != 0) {
            rc = kc_error_set(err, KC_ERR_PLUGIN,
                              "plugin %s (%s): init failed (%d); see the plugin's log line "
                              "above for its args",
                              p->name, p->path, rc);
            loader_close(p);
            return rc;
        }
    }
    p->initialized = true;
    p->requeue_mask = p->ops.requeue_events != NULL ? p->ops.requeue_events(p->self) : 0;
    if (p->requeue_mask == 0)
        p->requeue_mask = KC_EVENT_MASK_ALL;
    return 0;
}

/* A plugin served by a plugin host: only what the host needs to load it (remote.c starts it). */
static int describe_remote(struct plugin *p, const struct plugin_config *pc, const char *dir,
                           struct kc_error *err)
{
    memset(p, 0, sizeof(*p));
    p->remote = true;
    p->name = strdup(pc->name);
    p->path = loader_find(pc->name, pc->path, dir);
    p->version = strdup("");
    p->args_json = strdup(pc->args_json != NULL ? pc->args_json : "{}");
    p->host_group = strdup(pc->host != NULL ? pc->host : pc->name);
    p->weight = pc->weight;
    p->failure_policy = pc->failure_policy;
    p->required = pc->required;
    p->requeue_mask = KC_EVENT_MASK_ALL;
    if (p->name == NULL || p->path == NULL || p->version == NULL || p->args_json == NULL ||
        p->host_group == NULL) {
        loader_close(p);
        return kc_error_set(err, -ENOMEM, "out of memory");
    }
    return 0;
}

/* The fields a pod may not use with this generation: those whose shipped plugin is not among
 * the loaded ones, less those a loaded plugin declares (`handles:`) and those the configuration
 * ignores; none when the check is off. */
static uint32_t refused_fields(const struct framework *fw, const struct config *cfg)
{
    if (!cfg->refuse_unhandled_fields)
        return 0;
    const char *names[FRAMEWORK_MAX_PLUGINS];
    uint32_t declared = 0;
    for (uint32_t i = 0; i < fw->count; i++) {
        names[i] = fw->plugins[i].name;
        for (uint32_t c = 0; c < cfg->plugin_count; c++)
            if (strcmp(cfg->plugins[c].name, names[i]) == 0)
                declared |= cfg->plugins[c].handles;
    }
    return pod_fields_unhandled_by(names, fw->count) & ~declared & ~cfg->ignored_unhandled_fields;
}

int framework_open(struct framework *fw, const struct config *cfg, const char *plugin_dir,
                   const kc_host_api *host, struct kc_error *err)
{
    struct framework_load how = {.generation = 1};
    return framework_load(fw, cfg, plugin_dir, host, &how, err);
}

int framework_load(struct framework *fw, const struct config *cfg, const char *plugin_dir,
                   const kc_host_api *host, const struct framework_load *how, struct kc_error *err)
{
    struct kc_error local;
    if (err == NULL)
        err = &local;
    memset(fw, 0, sizeof(*fw));
    if (cfg->plugin_count > FRAMEWORK_MAX_PLUGINS)
        return kc_error_set(err, -EINVAL, "%u plugins configured; at most %d are supported",
                            cfg->plugin_count, FRAMEWORK_MAX_PLUGINS);
    fw->plugins = calloc(cfg->plugin_count + 1, sizeof(*fw->plugins));
    if (fw->plugins == NULL)
        return -ENOMEM;
    const char *dir = plugin_dir != NULL ? plugin_dir : cfg->plugin_dir;
    for (uint32_t i = 0; i < cfg->plugin_count; i++) {
        const struct plugin_config *pc = &cfg->plugins[i];
        struct plugin *p = &fw->plugins[fw->count];
        int rc = pc->isolation == ISOLATION_PROCESS ? describe_remote(p, pc, dir, err)
                                                    : open_one(p, pc, dir, host, how, err);
        if (rc < 0 && (pc->required || how->strict)) {
            if (!pc->required) {
                /* err names the file and why; say why that refuses the whole load */
                char why[sizeof(err->message)];
                snprintf(why, sizeof(why), "%s",
                         err->message[0] != '\0' ? err->message : kc_strerror(rc));
                kc_error_set(err, rc,
                             "%s (plugin %s is required: false, but a reload loads every "
                             "configured plugin or changes nothing)",
                             why, pc->name);
            }
            framework_close(fw);
            return rc;
        }
        if (rc < 0) {
            log_error("%s; continuing without it (required: false)", err->message);
            fw->errors[i] = strdup(err->message[0] != '\0' ? err->message : kc_strerror(rc));
            fw->error_paths[i] = loader_find(pc->name, pc->path, dir);
            continue;
        }
        p->index = fw->count++;
        snprintf(p->default_reason, sizeof(p->default_reason), "node(s) were rejected by plugin %s",
                 p->name);
    }
    int rc = index_phases(fw, err);
    if (rc < 0)
        framework_close(fw);
    fw->generation = how->generation;
    fw->refused_fields = rc < 0 ? 0 : refused_fields(fw, cfg);
    return rc;
}

void framework_close(struct framework *fw)
{
    for (uint32_t i = fw->count; i-- > 0;)
        loader_close(&fw->plugins[i]);
    free(fw->plugins);
    for (int phase = 0; phase < PHASE_COUNT; phase++)
        free(fw->phase[phase]);
    free(fw->reserve_all);
    for (uint32_t i = 0; i < FRAMEWORK_MAX_PLUGINS; i++) {
        free(fw->errors[i]);
        free(fw->error_paths[i]);
    }
    free(fw->hosts);
    memset(fw, 0, sizeof(*fw));
}

int framework_new(const struct config *cfg, const char *plugin_dir, const kc_host_api *host,
                  const struct framework_load *how, struct framework **out, struct kc_error *err)
{
    *out = NULL;
    struct framework *fw = malloc(sizeof(*fw));
    if (fw == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    int rc = framework_load(fw, cfg, plugin_dir, host, how, err);
    if (rc < 0) {
        free(fw);
        return rc;
    }
    fw->refs = 1;
    *out = fw;
    return 0;
}

uint32_t framework_unref(struct framework *fw)
{
    return fw->refs > 0 ? --fw->refs : 0;
}

void framework_free(struct framework *fw)
{
    if (fw == NULL)
        return;
    framework_close(fw);
    free(fw);
}

struct plugin *framework_plugin(const struct framework *fw, const char *name)
{
    for (uint32_t i = 0; i < fw->count; i++)
        if (strcmp(fw->plugins[i].name, name) == 0)
            return &fw->plugins[i];
    return NULL;
}
