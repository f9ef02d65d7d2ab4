/* Object status in a simulation (sim_status.h): the latest status of each object and its
 * history, one sample per simulated second, printed in the summary and written to the report. */
#include "sim_status.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "log.h"
#include "simulator.h"

static bool same(const char *a, const char *b)
{
    return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

static struct sim_status_record *record_of(struct sim_status *st, const char *kind,
                                           const char *namespace_name, const char *name)
{
    for (uint32_t i = 0; i < st->count; i++) {
        struct sim_status_record *r = &st->records[i];
        if (strcmp(r->kind, kind) == 0 && strcmp(r->name, name) == 0 &&
            same(r->namespace_name, namespace_name))
            return r;
    }
    struct sim_status_record *grown =
        array_grow(st->records, &st->capacity, st->count + 1, sizeof(*grown));
    if (grown == NULL)
        return NULL;
    st->records = grown;
    struct sim_status_record *r = &grown[st->count];
    memset(r, 0, sizeof(*r));
    r->kind = strdup(kind);
    r->name = strdup(name);
    r->namespace_name = namespace_name != NULL ? strdup(namespace_name) : NULL;
    if (r->kind == NULL || r->name == NULL ||
        (namespace_name != NULL && r->namespace_name == NULL)) {
        free(r->kind);
        free(r->name);
        free(r->namespace_name);
        return NULL;
    }
    st->count++;
    return r;
}

void sim_status_report(void *ctx, const char *kind, const char *namespace_name, const char *name,
                       const char *status_json)
{
    struct simulator *sim = ctx;
    struct sim_status_record *r = record_of(&sim->status, kind, namespace_name, name);
    char *copy = strdup(status_json);
    if (r == NULL || copy == NULL) {
        free(copy);
        log_error("simulation: out of memory recording the status of %s %s", kind, name);
        return;
    }
    struct sim_status_sample *last = r->sample_count > 0 ? &r->samples[r->sample_count - 1] : NULL;
    /* one sample per simulated second: a later report in the same second replaces it */
    if (last != NULL && last->at_ms / 1000 == sim->now_ms / 1000) {
        free(last->json);
        last->json = copy;
        last->at_ms = sim->now_ms;
        return;
    }
    struct sim_status_sample *grown =
        array_grow(r->samples, &r->sample_capacity, r->sample_count + 1, sizeof(*grown));
    if (grown == NULL) {
        free(copy);
        return;
    }
    r->samples = grown;
    grown[r->sample_count++] = (struct sim_status_sample){.at_ms = sim->now_ms, .json = copy};
}

/* "cpu 8000m, memory 1Gi" from a resource map of the status. */
static void print_resources(FILE *out, const json_t *map)
{
    const char *key;
    const json_t *value;
    bool first = true;
    json_object_foreach((json_t *)map, key, value)
    {
        fprintf(out, "%s%s %s", first ? "" : ", ", key,
                json_is_string(value) ? json_string_value(value) : "?");
        first = false;
    }
    if (first)
        fprintf(out, "nothing");
}

void sim_status_print(const struct simulator *sim, FILE *out)
{
    const struct sim_status *st = &sim->status;
    if (st->count > 0)
        fprintf(out, "  object status (latest of %u objects):\n", st->count);
    for (uint32_t i = 0; i < st->count; i++) {
        const struct sim_status_record *r = &st->records[i];
        if (r->sample_count == 0)
            continue;
        json_t *status = json_loads(r->samples[r->sample_count - 1].json, 0, NULL);
        fprintf(out, "    %s %s%s%s: used ", r->kind,
                r->namespace_name != NULL ? r->namespace_name : "",
                r->namespace_name != NULL ? "/" : "", r->name);
        print_resources(out, json_object_get(status, "used"));
        fprintf(out, "; borrowed ");
        print_resources(out, json_object_get(status, "borrowed"));
        fprintf(out, "; pending %lld, admitted %lld (%u samples)\n",
                (long long)json_integer_value(json_object_get(status, "pending")),
                (long long)json_integer_value(json_object_get(status, "admitted")),
                r->sample_count);
        json_decref(status);
    }
}

json_t *sim_status_json(const struct simulator *sim)
{
    const struct sim_status *st = &sim->status;
    if (st->count == 0)
        return NULL;
    json_t *list = json_array();
    for (uint32_t i = 0; list != NULL && i < st->count; i++) {
        const struct sim_status_record *r = &st->records[i];
        json_t *history = json_array();
        for (uint32_t k = 0; history != NULL && k < r->sample_count; k++)
            json_array_append_new(history,
                                  json_pack("{s:I, s:o}", "at_ms", (json_int_t)r->samples[k].at_ms,
                                            "status", json_loads(r->samples[k].json, 0, NULL)));
        json_t *latest = r->sample_count > 0
                             ? json_loads(r->samples[r->sample_count - 1].json, 0, NULL)
                             : json_null();
        json_t *entry = json_pack("{s:s, s:s, s:o, s:o}", "kind", r->kind, "name", r->name,
                                  "status", latest != NULL ? latest : json_null(), "history",
                                  history != NULL ? history : json_array());
        if (entry != NULL && r->namespace_name != NULL)
            json_object_set_new(entry, "namespace", json_string(r->namespace_name));
        json_array_append_new(list, entry);
    }
    return list;
}

void sim_status_free(struct sim_status *st)
{
    for (uint32_t i = 0; i < st->count; i++) {
        struct sim_status_record *r = &st->records[i];
        for (uint32_t k = 0; k < r->sample_count; k++)
            free(r->samples[k].json);
        free(r->samples);
        free(r->kind);
        free(r->name);
        free(r->namespace_name);
    }
    free(st->records);
    memset(st, 0, sizeof(*st));
}
