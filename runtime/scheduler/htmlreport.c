/* --report-html: one self-contained HTML page of a simulation. Every plot is inline SVG written
 * here, the only script (htmlreport_sort.js) sorts the placement table, and a
 * Content-Security-Policy forbids any load and runs no script but that one (allowed by its
 * hash), so the page shows the same offline, in a CI artifact or a mail attachment. Every string
 * that comes from the input (names, reasons, phases) is HTML-escaped. Each plot is a
 * <section data-plot=NAME data-state=drawn|absent> holding <svg id="plot-NAME">: the tests
 * and readers find them by those names. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htmlreport_script.h"
#include "model.h"
#include "resource_table.h"
#include "sim_gpu.h"
#include "sim_status.h"
#include "simulator.h"

#define CHART_WIDTH 960
#define CHART_HEIGHT 260
#define MARGIN_LEFT 64
#define MARGIN_RIGHT 16
#define MARGIN_TOP 12
#define MARGIN_BOTTOM 36
#define PLOT_WIDTH (CHART_WIDTH - MARGIN_LEFT - MARGIN_RIGHT)
#define PLOT_HEIGHT (CHART_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM)
#define HEATMAP_COLUMNS 120
#define GROUP_ROWS_MAX 100
#define GPU_NODES_MAX 64
#define TABLE_ROWS_MAX 20000

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define PALETTE_SIZE (sizeof(palette) / sizeof(palette[0]))

static void put_escaped(FILE *out, const char *text)
{
    for (const char *p = text != NULL ? text : ""; *p != '\0'; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*p, out);
        }
    }
}

/* ---- the time axis shared by the plots over time ---- */

static int64_t end_ms(const struct sim_timeline *t)
{
    int64_t end = t->sample_count > 0 ? t->samples[t->sample_count - 1].at_ms : 0;
    return end > 0 ? end : 1;
}

/* Runs whose samples crowd at the start (arrivals over milliseconds, then timeouts over
 * minutes) get a logarithmic time axis, so both parts can be read. */
static bool log_axis(const struct sim_timeline *t)
{
    return t->sample_count > 0 && t->samples[t->sample_count / 2].at_ms * 20 < end_ms(t);
}

/* The log axis's unit: times well below it are drawn near 0. */
static double log_unit_ms(const struct sim_timeline *t)
{
    double unit = (double)end_ms(t) / 1000.0;
    return unit < 1.0 ? 1.0 : unit;
}

static double x_of(const struct sim_timeline *t, int64_t at_ms)
{
    double f = (double)at_ms / (double)end_ms(t);
    if (log_axis(t))
        f = log1p((double)at_ms / log_unit_ms(t)) / log1p((double)end_ms(t) / log_unit_ms(t));
    return MARGIN_LEFT + (double)PLOT_WIDTH * f;
}

/* The time drawn at fraction f (0..1) of the plot's width: x_of's inverse. */
static int64_t time_at(const struct sim_timeline *t, double f)
{
    if (!log_axis(t))
        return (int64_t)(f * (double)end_ms(t));
    double unit = log_unit_ms(t);
    return (int64_t)(unit * expm1(f * log1p((double)end_ms(t) / unit)));
}

static void svg_open(FILE *out, const char *id, int height, const char *title)
{
    fprintf(out,
            "<svg id=\"%s\" class=\"plot\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "role=\"img\"><title>%s</title>\n",
            id, CHART_WIDTH, height, CHART_WIDTH, height, title);
}

static void time_tick(FILE *out, const struct sim_timeline *t, int bottom, int64_t at_ms)
{
    fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.3g s</text>\n",
            x_of(t, at_ms), bottom + 16, (double)at_ms / 1000.0);
}

/* Time ticks along the bottom of a plot whose drawing area ends at y = bottom: evenly spaced,
 * or on the log axis at 1, 2 and 5 times the powers of ten that lie far enough apart. */
static void time_axis(FILE *out, const struct sim_timeline *t, int bottom)
{
    fprintf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", MARGIN_LEFT,
            bottom, MARGIN_LEFT + PLOT_WIDTH, bottom);
    bool log_scale = log_axis(t);
    if (!log_scale)
        for (int i = 0; i <= 5; i++)
            time_tick(out, t, bottom, end_ms(t) * i / 5);
    double last_x = MARGIN_LEFT;
    if (log_scale)
        time_tick(out, t, bottom, 0);
    for (int64_t decade = 1; log_scale && decade <= end_ms(t); decade *= 10)
        for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {
            int64_t at = decade * m;
            double x = x_of(t, at);
            if (at > end_ms(t) || x - last_x < 56 || MARGIN_LEFT + PLOT_WIDTH - x < 40)
                continue;
            time_tick(out, t, bottom, at);
            last_x = x;
        }
    if (log_scale)
        time_tick(out, t, bottom, end_ms(t));
    fprintf(out,
            "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"end\">simulated time%s</text>\n",
            MARGIN_LEFT + PLOT_WIDTH, bottom + 32, log_scale ? " (logarithmic)" : "");
}

/* Horizontal grid lines and labels from 0 to top (the value at the top of the plot). */
static void value_axis(FILE *out, double top, const char *unit)
{
    for (int i = 0; i <= 4; i++) {
        double y = MARGIN_TOP + PLOT_HEIGHT - (double)PLOT_HEIGHT * i / 4;
        fprintf(out,
                "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g%s</text>\n",
                MARGIN_LEFT, y, MARGIN_LEFT + PLOT_WIDTH, y, MARGIN_LEFT - 6, y + 4, top * i / 4,
                unit);
    }
}

static void legend_entry(FILE *out, uint32_t i, const char *text, const char *detail)
{
    fprintf(out, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
            palette[i % PALETTE_SIZE]);
    put_escaped(out, text);
    if (detail != NULL)
        fprintf(out, " <span class=\"detail\">%s</span>", detail);
    fputs("</li>\n", out);
}

static void section_open(FILE *out, const char *name, bool drawn, const char *heading)
{
    fprintf(out, "<section data-plot=\"%s\" data-state=\"%s\">\n<h2>%s</h2>\n", name,
            drawn ? "drawn" : "absent", heading);
}

/* ---- utilisation over time, per resource ---- */

static double share(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0.0;
}

static void utilisation_plot(FILE *out, const struct sim_timeline *t)
{
    bool drawn = t->sample_count > 0;
    section_open(out, "utilisation", drawn, "Utilisation over time");
    fputs("<p>Requested over allocatable, summed over all nodes, per resource.</p>\n", out);
    if (!drawn) {
        fputs("<p class=\"absent\">The run took no samples.</p></section>\n", out);
        return;
    }
    svg_open(out, "plot-utilisation", CHART_HEIGHT, "Utilisation over time per resource");
    value_axis(out, 100.0, "%");
    time_axis(out, t, MARGIN_TOP + PLOT_HEIGHT);
    for (uint32_t k = 0; k < t->resource_count; k++) {
        /* resource names come from the input (a node's allocatable keys): escaped */
        fputs("<polyline class=\"series\" data-resource=\"", out);
        put_escaped(out, resource_name(t->resources[k]));
        fprintf(out, "\" stroke=\"%s\" points=\"", palette[k % PALETTE_SIZE]);
        for (uint32_t i = 0; i < t->sample_count; i++) {
            const struct sim_sample *s = &t->samples[i];
            double y = MARGIN_TOP + PLOT_HEIGHT * (1.0 - share(s->requested[k], s->allocatable[k]));
            fprintf(out, "%.1f,%.1f ", x_of(t, s->at_ms), y);
        }
        fputs("\"/>\n", out);
    }
    fputs("</svg>\n<ul class=\"legend\">\n", out);
    const struct sim_sample *last = &t->samples[t->sample_count - 1];
    for (uint32_t k = 0; k < t->resource_count; k++) {
        char detail[64];
        snprintf(detail, sizeof(detail), "%.1f%% at the end",
                 100.0 * share(last->requested[k], last->allocatable[k]));
        legend_entry(out, k, resource_name(t->resources[k]), detail);
    }
    fputs("</ul>\n</section>\n", out);
}

/* ---- per-node heat map: nodes down, time across ---- */

/* The sample that stands for the time up to at_ms: the last one taken by then. */
static const struct sim_sample *sample_at(const struct sim_timeline *t, int64_t at_ms)
{
    const struct sim_sample *found = &t->samples[0];
    for (uint32_t i = 0; i < t->sample_count && t->samples[i].at_ms <= at_ms; i++)
        found = &t->samples[i];
    return found;
}

/* From near white (idle) to dark blue (full). */
static void heat_colour(uint8_t load, char *buf, size_t size)
{
    double f = load / 255.0;
    snprintf(buf, size, "rgb(%d,%d,%d)", (int)(247 - f * (247 - 8)), (int)(251 - f * (251 - 48)),
             (int)(255 - f * (255 - 107)));
}

static void row_label(FILE *out, const struct simulator *sim, const struct sim_timeline *t,
                      uint32_t row)
{
    uint32_t first = (uint32_t)((uint64_t)row * t->node_count / t->row_count);
    uint32_t last = (uint32_t)((uint64_t)(row + 1) * t->node_count / t->row_count) - 1;
    put_escaped(out, sim->sched.cache.nodes[first].node->name);
    if (last > first) {
        fputs(" … ", out);
        put_escaped(out, sim->sched.cache.nodes[last].node->name);
    }
}

static void heatmap_plot(FILE *out, const struct simulator *sim, const struct sim_timeline *t)
{
    bool drawn =
        t->sample_count > 0 && t->row_count > 0 && sim->sched.cache.node_count >= t->node_count;
    section_open(out, "heatmap", drawn, "Node load over time");
    fputs("<p>One row per node (or per run of neighbouring nodes when there are many): the "
          "largest requested/allocatable share over the resources above; darker is fuller.</p>\n",
          out);
    if (!drawn) {
        fputs("<p class=\"absent\">No nodes or no samples.</p></section>\n", out);
        return;
    }
    int row_height = t->row_count <= 20 ? 14 : t->row_count <= 60 ? 6 : 3;
    int label_every = (int)(t->row_count + 19) / 20;
    int height = MARGIN_TOP + row_height * (int)t->row_count + MARGIN_BOTTOM;
    svg_open(out, "plot-heatmap", height, "Per-node load over time");
    uint32_t columns = t->sample_count < HEATMAP_COLUMNS ? t->sample_count : HEATMAP_COLUMNS;
    double cell_width = (double)PLOT_WIDTH / columns;
    for (uint32_t c = 0; c < columns; c++) {
        const struct sim_sample *s = sample_at(t, time_at(t, (double)(c + 1) / columns));
        for (uint32_t r = 0; s->rows != NULL && r < t->row_count; r++) {
            char colour[32];
            heat_colour(s->rows[r], colour, sizeof(colour));
            fprintf(out,
                    "<rect class=\"cell\" x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                    "fill=\"%s\"/>",
                    MARGIN_LEFT + c * cell_width, MARGIN_TOP + (int)r * row_height,
                    cell_width + 0.3, row_height, colour);
        }
        fputc('\n', out);
    }
    for (uint32_t r = 0; r < t->row_count; r += (uint32_t)label_every) {
        fprintf(out, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", MARGIN_LEFT - 4,
                MARGIN_TOP + (int)r * row_height + row_height);
        row_label(out, sim, t, r);
        fputs("</text>\n", out);
    }
    time_axis(out, t, MARGIN_TOP + row_height * (int)t->row_count);
    fputs("</svg>\n</section>\n", out);
}

/* ---- pending pods by reason, stacked ---- */

static uint32_t pending_total(const struct sim_sample *s)
{
    uint32_t sum = 0;
    for (uint32_t k = 0; k <= SIM_TIMELINE_MAX_REASONS; k++)
        sum += s->pending[k];
    return sum;
}

/* Pods below band k (bands 0..k-1) in sample s. */
static uint32_t pending_below(const struct sim_sample *s, uint32_t k)
{
    uint32_t sum = 0;
    for (uint32_t j = 0; j < k; j++)
        sum += s->pending[j];
    return sum;
}

static void pending_plot(FILE *out, const struct sim_timeline *t)
{
    uint32_t top = 0;
    for (uint32_t i = 0; i < t->sample_count; i++) {
        uint32_t total = pending_total(&t->samples[i]);
        top = total > top ? total : top;
    }
    top = (top + 3) / 4 * 4; /* whole numbers on the four grid lines */
    bool drawn = t->sample_count > 0;
    section_open(out, "pending", drawn, "Pending pods by reason");
    fputs("<p>Pods waiting for a node, stacked by the reason of their last attempt (counts in "
          "the text shown as N).</p>\n",
          out);
    if (!drawn) {
        fputs("<p class=\"absent\">The run took no samples.</p></section>\n", out);
        return;
    }
    double scale = top > 0 ? (double)PLOT_HEIGHT / top : 0.0;
    svg_open(out, "plot-pending", CHART_HEIGHT, "Pending pods by reason over time");
    value_axis(out, top, "");
    time_axis(out, t, MARGIN_TOP + PLOT_HEIGHT);
    bool other = false; /* reasons beyond the table's: drawn last, when there are any */
    for (uint32_t i = 0; i < t->sample_count; i++)
        other = other || t->samples[i].pending[SIM_TIMELINE_MAX_REASONS] > 0;
    uint32_t bands = t->reason_count + other;
    for (uint32_t k = 0; k < bands; k++) {
        uint32_t slot = k < t->reason_count ? k : SIM_TIMELINE_MAX_REASONS;
        fprintf(out, "<polygon class=\"band\" data-reason=\"%u\" fill=\"%s\" points=\"", k,
                palette[k % PALETTE_SIZE]);
        for (uint32_t i = 0; i < t->sample_count; i++) {
            const struct sim_sample *s = &t->samples[i];
            uint32_t upper = pending_below(s, slot) + s->pending[slot];
            fprintf(out, "%.1f,%.1f ", x_of(t, s->at_ms), MARGIN_TOP + PLOT_HEIGHT - upper * scale);
        }
        for (uint32_t i = t->sample_count; i-- > 0;) {
            const struct sim_sample *s = &t->samples[i];
            fprintf(out, "%.1f,%.1f ", x_of(t, s->at_ms),
                    MARGIN_TOP + PLOT_HEIGHT - pending_below(s, slot) * scale);
        }
        fputs("\"/>\n", out);
    }
    fputs("</svg>\n<ul class=\"legend\">\n", out);
    for (uint32_t k = 0; k < t->reason_count; k++)
        legend_entry(out, k, t->reasons[k], NULL);
    if (other)
        legend_entry(out, t->reason_count, "other reasons", NULL);
    uint32_t most = 0;
    for (uint32_t i = 0; i < t->sample_count; i++)
        most = pending_total(&t->samples[i]) > most ? pending_total(&t->samples[i]) : most;
    fprintf(out, "</ul>\n<p>At most %u pending at once; %u at the end.</p>\n</section>\n", most,
            pending_total(&t->samples[t->sample_count - 1]));
}

/* ---- pod-group timelines ---- */

static const char *phase_colour(const char *phase)
{
    static const struct {
        const char *phase, *colour;
    } colours[] = {{"Pending", "#fdd49e"}, {"Scheduling", "#6baed6"}, {"Scheduled", "#a1d99b"},
                   {"Running", "#31a354"}, {"Failed", "#de2d26"},     {"Finished", "#969696"}};
    for (size_t i = 0; i < sizeof(colours) / sizeof(colours[0]); i++)
        if (strcmp(phase, colours[i].phase) == 0)
            return colours[i].colour;
    return "#cccccc";
}

static void group_row(FILE *out, const struct sim_timeline *t, uint32_t group, int y)
{
    fprintf(out, "<g class=\"group\" data-group=\"");
    put_escaped(out, t->groups[group].name);
    fprintf(out, "\"><text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", MARGIN_LEFT - 4,
            y + 13);
    put_escaped(out, t->groups[group].name);
    fputs("</text>\n", out);
    for (uint32_t i = 0; i < t->change_count; i++) {
        const struct sim_group_change *c = &t->changes[i];
        if (c->group != group)
            continue;
        int64_t until = end_ms(t);
        for (uint32_t j = i + 1; j < t->change_count; j++)
            if (t->changes[j].group == group) {
                until = t->changes[j].at_ms;
                break;
            }
        double x = x_of(t, c->at_ms), width = x_of(t, until) - x;
        fprintf(out,
                "<rect class=\"phase\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"16\" "
                "fill=\"%s\"><title>",
                x, y, width < 1.0 ? 1.0 : width, phase_colour(c->phase));
        put_escaped(out, c->phase);
        fprintf(out, ", %u scheduled, from %.3f s</title></rect>\n", c->scheduled,
                (double)c->at_ms / 1000.0);
    }
    fputs("</g>\n", out);
}

static void groups_plot(FILE *out, const struct sim_timeline *t)
{
    bool drawn = t->group_count > 0 && t->sample_count > 0;
    section_open(out, "groups", drawn, "Pod-group timelines");
    if (!drawn) {
        fputs("<p class=\"absent\">No pod groups in this run.</p></section>\n", out);
        return;
    }
    fputs("<p>Each group's reported phase from its first status on.</p>\n", out);
    uint32_t rows = t->group_count < GROUP_ROWS_MAX ? t->group_count : GROUP_ROWS_MAX;
    int height = MARGIN_TOP + 20 * (int)rows + MARGIN_BOTTOM;
    svg_open(out, "plot-groups", height, "Pod-group phases over time");
    for (uint32_t g = 0; g < rows; g++)
        group_row(out, t, g, MARGIN_TOP + 20 * (int)g);
    time_axis(out, t, MARGIN_TOP + 20 * (int)rows);
    fputs("</svg>\n<ul class=\"legend\">\n", out);
    static const char *const phases[] = {"Pending", "Scheduling", "Scheduled", "Running", "Failed"};
    for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
        fprintf(out, "<li><span class=\"swatch\" style=\"background:%s\"></span>%s</li>\n",
                phase_colour(phases[i]), phases[i]);
    fputs("</ul>\n", out);
    if (rows < t->group_count)
        fprintf(out, "<p>The first %u of %u groups.</p>\n", rows, t->group_count);
    fputs("</section>\n", out);
}

/* ---- GPU cards at the end of the run (gpushare) ---- */

struct gpu_drawing {
    FILE *out;
    const char *node; /* the node of the row being drawn */
    uint32_t rows, cards_in_row, cards;
};

static void draw_card(void *ctx, const char *node, int index, int64_t memory_mib,
                      int64_t allocated_mib, uint32_t users)
{
    struct gpu_drawing *d = ctx;
    if (d->node == NULL || strcmp(d->node, node) != 0) {
        d->node = node;
        d->cards_in_row = 0;
        d->rows++;
        if (d->rows <= GPU_NODES_MAX) {
            fprintf(d->out, "<text class=\"tick\" x=\"%d\" y=\"%u\" text-anchor=\"end\">",
                    MARGIN_LEFT + 96, MARGIN_TOP + 22 * (d->rows - 1) + 13);
            put_escaped(d->out, node);
            fputs("</text>\n", d->out);
        }
    }
    if (d->rows > GPU_NODES_MAX)
        return;
    double x = MARGIN_LEFT + 104 + 48.0 * d->cards_in_row++;
    unsigned y = MARGIN_TOP + 22 * (d->rows - 1);
    double used = memory_mib > 0 ? 44.0 * (double)allocated_mib / (double)memory_mib : 0.0;
    fprintf(d->out,
            "<g class=\"card\"><rect x=\"%.1f\" y=\"%u\" width=\"44\" height=\"16\" "
            "fill=\"#f0f0f0\" stroke=\"#888\"/><rect x=\"%.1f\" y=\"%u\" width=\"%.1f\" "
            "height=\"16\" fill=\"%s\"/><title>",
            x, y, x, y, used > 44.0 ? 44.0 : used, users > 0 ? "#ff7f0e" : "#f0f0f0");
    put_escaped(d->out, node);
    fprintf(d->out, " GPU %d: %" PRId64 " of %" PRId64 " MiB allocated, %u pods</title></g>\n",
            index, allocated_mib, memory_mib, users);
    d->cards++;
}

/* Counts the nodes with cards (cards come node by node). */
static void count_node(void *ctx, const char *node, int index, int64_t memory_mib,
                       int64_t allocated_mib, uint32_t users)
{
    (void)index, (void)memory_mib, (void)allocated_mib, (void)users;
    struct gpu_drawing *d = ctx;
    if (d->node == NULL || strcmp(d->node, node) != 0)
        d->rows++;
    d->node = node;
    d->cards++;
}

static void gpu_plot(FILE *out, const struct simulator *sim)
{
    struct gpu_drawing count = {0};
    sim_gpu_cards(sim, count_node, &count);
    section_open(out, "gpu", count.cards > 0, "GPU card occupancy");
    if (count.cards == 0) {
        fputs("<p class=\"absent\">No GPU cards in this run (gpushare reads them from node "
              "annotations, NodeResourceTopology or GPU feature discovery labels).</p>"
              "</section>\n",
              out);
        return;
    }
    fputs("<p>Each card's memory allocated by kcycle.io/gpu-assignment at the end of the run; "
          "hover for the figures.</p>\n",
          out);
    uint32_t rows = count.rows < GPU_NODES_MAX ? count.rows : GPU_NODES_MAX;
    svg_open(out, "plot-gpu", MARGIN_TOP + 22 * (int)rows + 8, "GPU card occupancy per node");
    struct gpu_drawing d = {.out = out};
    sim_gpu_cards(sim, draw_card, &d);
    fputs("</svg>\n", out);
    if (d.rows > GPU_NODES_MAX)
        fprintf(out, "<p>The first %u of %u nodes with GPUs.</p>\n", GPU_NODES_MAX, d.rows);
    fputs("</section>\n", out);
}

/* ---- queue shares (capacityqueue) ----
 * Drawn from the object status the capacityqueue plugin reports (the same samples, one per
 * simulated second, as the JSON report's objectStatus): each queue's dominant share of the
 * cluster (the largest used/allocatable over the resources of the utilisation plot), the part
 * of that resource it borrows (above the queue's guarantee), and its pending pods. */

#define QUEUE_SERIES_MAX 64
#define QUEUE_KIND "CapacityQueue"

/* "8000m" or "1073741824": the plugin writes resources in the scheduler's own units (cpu in
 * millicores, with an "m" to say so), so the number compares with allocatable as it is. */
static int64_t status_quantity(const json_t *map, const char *resource)
{
    const char *text = json_string_value(json_object_get(map, resource));
    return text != NULL ? strtoll(text, NULL, 10) : 0;
}

/* The share of the cluster's allocatable (at the end of the run) that the map `key` of status
 * holds: of resource `only` when it is >= 0, else the largest over the drawn resources, whose
 * index goes to *dominant. */
static double status_share(const struct sim_timeline *t, const json_t *status, const char *key,
                           int only, int *dominant)
{
    const struct sim_sample *last = &t->samples[t->sample_count - 1];
    const json_t *map = json_object_get(status, key);
    double best = 0.0;
    for (uint32_t k = 0; k < t->resource_count; k++) {
        if (only >= 0 && (int)k != only)
            continue;
        double f =
            share(status_quantity(map, resource_name(t->resources[k])), last->allocatable[k]);
        if (dominant != NULL && (*dominant < 0 || f > best))
            *dominant = (int)k;
        best = f > best ? f : best;
    }
    return best;
}

static bool is_queue(const struct sim_status_record *r)
{
    return strcmp(r->kind, QUEUE_KIND) == 0 && r->sample_count > 0;
}

/* The figure of one series at one status sample: "used" (the dominant share), "borrowed" (the
 * borrowed share of the same resource) or "pending" (pods). */
static double queue_figure(const struct sim_timeline *t, const json_t *status, const char *what)
{
    if (strcmp(what, "pending") == 0)
        return (double)json_integer_value(json_object_get(status, "pending"));
    int dominant = -1;
    double used = status_share(t, status, "used", -1, &dominant);
    if (strcmp(what, "used") == 0)
        return used;
    return dominant >= 0 ? status_share(t, status, "borrowed", dominant, NULL) : 0.0;
}

/* One polyline of queue record r, a step per status sample, held to the end of the run; its
 * final figures (as the JSON report's objectStatus has them) ride along as data- attributes
 * for readers and tests. pending_scale > 0: pixels per pending pod; else a share of 100%. */
static void queue_series(FILE *out, const struct sim_timeline *t,
                         const struct sim_status_record *r, uint32_t colour, const char *what,
                         double pending_scale)
{
    bool borrowed_line = strcmp(what, "borrowed") == 0;
    fputs("<polyline class=\"series\" data-queue=\"", out);
    put_escaped(out, r->name); /* queue names come from the input */
    fprintf(out, "\" data-series=\"%s\" stroke=\"%s\"%s points=\"", what,
            palette[colour % PALETTE_SIZE], borrowed_line ? " stroke-dasharray=\"5,3\"" : "");
    double y = MARGIN_TOP + PLOT_HEIGHT, value = 0.0;
    for (uint32_t i = 0; i < r->sample_count; i++) {
        json_t *status = json_loads(r->samples[i].json, 0, NULL);
        value = queue_figure(t, status, what);
        json_decref(status);
        double x = x_of(t, r->samples[i].at_ms);
        if (i > 0) /* the previous figure holds until this sample */
            fprintf(out, "%.1f,%.1f ", x, y);
        y = pending_scale > 0 ? MARGIN_TOP + PLOT_HEIGHT - value * pending_scale
                              : MARGIN_TOP + PLOT_HEIGHT * (1.0 - (value > 1.0 ? 1.0 : value));
        fprintf(out, "%.1f,%.1f ", x, y);
    }
    fprintf(out, "%.1f,%.1f\"", x_of(t, end_ms(t)), y);
    json_t *final = json_loads(r->samples[r->sample_count - 1].json, 0, NULL);
    char *used = json_dumps(json_object_get(final, "used"), JSON_SORT_KEYS | JSON_COMPACT);
    char *borrowed = json_dumps(json_object_get(final, "borrowed"), JSON_SORT_KEYS | JSON_COMPACT);
    fputs(" data-final-used=\"", out);
    put_escaped(out, used != NULL ? used : "{}");
    fputs("\" data-final-borrowed=\"", out);
    put_escaped(out, borrowed != NULL ? borrowed : "{}");
    fprintf(out,
            "\" data-final-pending=\"%lld\" data-final-admitted=\"%lld\" "
            "data-final-value=\"%.6g\"/>\n",
            (long long)json_integer_value(json_object_get(final, "pending")),
            (long long)json_integer_value(json_object_get(final, "admitted")), value);
    free(used);
    free(borrowed);
    json_decref(final);
}

/* The most pods any queue had pending at once, rounded up to whole numbers per grid line. */
static uint32_t queue_pending_top(const struct sim_status *st)
{
    json_int_t top = 0;
    for (uint32_t i = 0; i < st->count; i++)
        for (uint32_t k = 0; is_queue(&st->records[i]) && k < st->records[i].sample_count; k++) {
            json_t *status = json_loads(st->records[i].samples[k].json, 0, NULL);
            json_int_t p = json_integer_value(json_object_get(status, "pending"));
            top = p > top ? p : top;
            json_decref(status);
        }
    return ((uint32_t)top + 3) / 4 * 4;
}

/* Every queue's series of one kind (at most QUEUE_SERIES_MAX queues, colours in order). */
static void queue_lines(FILE *out, const struct sim_timeline *t, const struct sim_status *st,
                        const char *what, double pending_scale)
{
    uint32_t drawn = 0;
    for (uint32_t i = 0; i < st->count && drawn < QUEUE_SERIES_MAX; i++)
        if (is_queue(&st->records[i]))
            queue_series(out, t, &st->records[i], drawn++, what, pending_scale);
}

static void queue_shares_plot(FILE *out, const struct simulator *sim)
{
    const struct sim_timeline *t = sim->timeline;
    const struct sim_status *st = &sim->status;
    uint32_t queues = 0;
    for (uint32_t i = 0; i < st->count; i++)
        queues += is_queue(&st->records[i]);
    bool drawn = queues > 0 && t->sample_count > 0;
    section_open(out, "queue-shares", drawn, "Queue shares");
    if (!drawn) {
        fputs("<p class=\"absent\">No capacity queues in this run.</p></section>\n", out);
        return;
    }
    fputs("<p>Each CapacityQueue's dominant share of the cluster (its largest share of "
          "allocatable over the resources above; dashed: the part of that resource borrowed "
          "beyond the queue's guarantee), then its pending pods, as the capacityqueue plugin "
          "reported them.</p>\n",
          out);
    svg_open(out, "plot-queue-shares", CHART_HEIGHT, "Queue dominant shares over time");
    value_axis(out, 100.0, "%");
    time_axis(out, t, MARGIN_TOP + PLOT_HEIGHT);
    queue_lines(out, t, st, "used", 0);
    queue_lines(out, t, st, "borrowed", 0);
    fputs("</svg>\n", out);
    uint32_t top = queue_pending_top(st);
    svg_open(out, "plot-queue-pending", CHART_HEIGHT, "Pending pods per queue over time");
    value_axis(out, top, "");
    time_axis(out, t, MARGIN_TOP + PLOT_HEIGHT);
    /* with nothing ever pending the lines lie on the axis */
    queue_lines(out, t, st, "pending", top > 0 ? (double)PLOT_HEIGHT / top : 1e-9);
    fputs("</svg>\n<ul class=\"legend\">\n", out);
    uint32_t listed = 0;
    for (uint32_t i = 0; i < st->count && listed < QUEUE_SERIES_MAX; i++)
        if (is_queue(&st->records[i]))
            legend_entry(out, listed++, st->records[i].name, NULL);
    fputs("</ul>\n", out);
    if (queues > QUEUE_SERIES_MAX)
        fprintf(out, "<p>The first %u of %u queues.</p>\n", QUEUE_SERIES_MAX, queues);
    fputs("</section>\n", out);
}

/* ---- sortable placement table ---- */

static void cell_seconds(FILE *out, bool known, int64_t ms)
{
    if (known)
        fprintf(out, "<td class=\"num\">%.3f</td>", (double)ms / 1000.0);
    else
        fputs("<td class=\"num\"></td>", out);
}

static void placement_row(FILE *out, const struct simulator *sim, const struct sim_record *r)
{
    fputs("<tr><td>", out);
    put_escaped(out, r->namespace);
    fputs("</td><td>", out);
    put_escaped(out, r->name);
    fputs("</td><td>", out);
    put_escaped(out, r->node);
    fputs("</td>", out);
    cell_seconds(out, true, r->arrival_ms);
    cell_seconds(out, r->node != NULL, r->bound_ms);
    cell_seconds(out, r->node != NULL, r->bound_ms - r->arrival_ms);
    if (r->generation_index > 0)
        fprintf(out, "<td class=\"num\">%" PRIu64 "</td><td>",
                sim->generations[r->generation_index - 1].generation);
    else
        fputs("<td class=\"num\"></td><td>", out);
    if (r->preempted)
        fputs("preempted", out);
    else
        put_escaped(out, report_record_reason(sim, r));
    fputs("</td></tr>\n", out);
}

static void placement_table(FILE *out, const struct simulator *sim)
{
    section_open(out, "placements", true, "Placements");
    uint32_t rows = sim->record_count < TABLE_ROWS_MAX ? sim->record_count : TABLE_ROWS_MAX;
    if (rows < sim->record_count)
        fprintf(out, "<p>The first %u of %u pods; the JSON report (--report) has them all.</p>\n",
                rows, sim->record_count);
    fputs("<p>Click a column heading to sort by it.</p>\n"
          "<table id=\"placements\" class=\"sortable\"><thead><tr>"
          "<th>Namespace</th><th>Pod</th><th>Node</th><th data-type=\"num\">Arrived (s)</th>"
          "<th data-type=\"num\">Bound (s)</th><th data-type=\"num\">Waited (s)</th>"
          "<th data-type=\"num\">Plugin generation</th><th>Reason</th></tr></thead>\n<tbody>\n",
          out);
    for (uint32_t i = 0; i < rows; i++)
        placement_row(out, sim, &sim->records[i]);
    fputs("</tbody></table>\n</section>\n", out);
}

/* ---- the page ---- */

static const char style[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1000px}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}"
    "svg.plot{display:block;background:#fff}"
    ".axis{stroke:#444}.grid{stroke:#e4e4e4}.tick{font-size:11px;fill:#444}"
    ".label{font-size:11px;fill:#666}.series{fill:none;stroke-width:2}.band{stroke:none;"
    "opacity:.85}.legend{list-style:none;padding:0;font-size:13px}.legend li{margin:2px 0}"
    ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:middle}"
    ".detail{color:#666}.absent{color:#777;font-style:italic}"
    "table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left}th{background:#f4f4f4;cursor:pointer}td.num{text-align:right}"
    "td:not(:last-child){white-space:nowrap}";

static void summary(FILE *out, const struct simulator *sim)
{
    fputs("<p id=\"summary\">", out);
    put_escaped(out, sim->opt.sim_path);
    fprintf(out,
            ": %u pods on %u nodes; %" PRIu64 " scheduled, %u unschedulable; %" PRIu64
            " attempts; %.3f s simulated.</p>\n",
            sim->record_count, sim->sched.cache.node_count, sim->bound,
            sim->record_count - (uint32_t)sim->bound, sim->sched.stats.attempts,
            (double)sim->now_ms / 1000.0);
}

static void page(FILE *out, const struct simulator *sim)
{
    const struct sim_timeline *t = sim->timeline;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'sha256-" HTMLREPORT_SCRIPT_SHA256 "'\">\n"
          "<title>kcycle simulation: ",
          out);
    put_escaped(out, sim->opt.sim_path);
    fprintf(out, "</title>\n<style>%s</style>\n</head><body>\n<h1>kcycle simulation report</h1>\n",
            style);
    summary(out, sim);
    utilisation_plot(out, t);
    heatmap_plot(out, sim, t);
    pending_plot(out, t);
    groups_plot(out, t);
    gpu_plot(out, sim);
    queue_shares_plot(out, sim);
    placement_table(out, sim);
    /* exactly the bytes the policy's hash is of (htmlreport_sort.js) */
    fputs("<script>" HTMLREPORT_SCRIPT "</script>\n</body></html>\n", out);
}

int htmlreport_write(const struct simulator *sim, const char *path, struct kc_error *err)
{
    if (sim->timeline == NULL)
        return kc_error_set(err, -EINVAL, "%s: the run kept no timeline for the HTML report", path);
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return kc_error_set(err, -errno, "%s: cannot write the HTML report: %s", path,
                            strerror(errno));
    page(out, sim);
    bool failed = ferror(out) != 0;
    if (fclose(out) != 0 || failed)
        return kc_error_set(err, -EIO, "%s: could not write the HTML report", path);
    return 0;
}
