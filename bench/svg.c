/*
 * svg.c — --svg: three plots in one hand-written SVG file.
 *   1. the sell-out curve: units left (left axis) and requests/s (right axis) over time;
 *   2. p99 latency of each 100 ms over time;
 *   3. latency by percentile (HdrHistogram style: the x axis stretches the tail,
 *      50% .. 99.999%), from the whole measured phase.
 * Axes carry units; text is 13 px sans-serif on white.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "engine.h"
#include "report.h"

#define SVG_WIDTH_PX 960
#define SVG_LEFT_PX 80  /* room for the left axis labels */
#define SVG_RIGHT_PX 90 /* room for the right axis labels */
#define SVG_PLOT_WIDTH_PX (SVG_WIDTH_PX - SVG_LEFT_PX - SVG_RIGHT_PX)
#define SVG_PCT_POINTS 200 /* points of the percentile curve */
#define SVG_NINES_MAX 5.0  /* the percentile axis ends at 99.999% */

typedef struct panel {
    double x0, y0, w, h;      /* plot area in px */
    double xmax, ymax, y2max; /* data ranges (y2: the right axis; 0 = none) */
} panel;

/* A round step (1, 2 or 5 x 10^k) giving about five ticks up to max. */
static double nice_step(double max)
{
    if (!(max > 0))
        return 1;
    double raw = max / 5, mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* The top of an axis: max rounded up to a whole step. */
static double nice_max(double max)
{
    double step = nice_step(max);
    double top = ceil(max / step) * step;
    return top > 0 ? top : 1;
}

/* A tick label: 1500000 -> "1.5M", 0.25 -> "0.25". */
static void num_label(double v, char *buf, size_t n)
{
    if (v >= 1e6)
        snprintf(buf, n, "%gM", v / 1e6);
    else if (v >= 1e4)
        snprintf(buf, n, "%gk", v / 1e3);
    else
        snprintf(buf, n, "%g", v);
}

static double px_x(const panel *p, double v)
{
    return p->x0 + (p->xmax > 0 ? v / p->xmax : 0) * p->w;
}

static double px_y(const panel *p, double v, double max)
{
    return p->y0 + p->h - (max > 0 ? v / max : 0) * p->h;
}

/* Frame, grid, ticks and axis titles of a panel. */
static void axes(FILE *f, const panel *p, const char *title, const char *xunit, const char *yunit, const char *y2unit)
{
    char lab[32];
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", p->x0, p->y0 - 12,
            title);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", p->x0,
            p->y0, p->w, p->h);
    double ys = nice_step(p->ymax);
    for (double v = 0; v <= p->ymax * 1.0001; v += ys) {
        double y = px_y(p, v, p->ymax);
        num_label(v, lab, sizeof(lab));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", p->x0, y, p->x0 + p->w,
                y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", p->x0 - 6, y + 4, lab);
    }
    double y2s = nice_step(p->y2max);
    for (double v = 0; p->y2max > 0 && v <= p->y2max * 1.0001; v += y2s) {
        num_label(v, lab, sizeof(lab));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c0392b\">%s</text>\n", p->x0 + p->w + 6,
                px_y(p, v, p->y2max) + 4, lab);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", p->x0 + p->w / 2, p->y0 + p->h + 36,
            xunit);
    fprintf(f,
            "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"#1f5fa8\">%s</text>\n",
            p->x0 - 58, p->y0 + p->h / 2, yunit);
    if (y2unit)
        fprintf(
            f,
            "<text transform=\"translate(%.1f,%.1f) rotate(90)\" text-anchor=\"middle\" fill=\"#c0392b\">%s</text>\n",
            p->x0 + p->w + 58, p->y0 + p->h / 2, y2unit);
}

/* Time ticks along the bottom, in seconds. */
static void time_ticks(FILE *f, const panel *p)
{
    char lab[32];
    double s = nice_step(p->xmax);
    for (double v = 0; v <= p->xmax * 1.0001; v += s) {
        num_label(v, lab, sizeof(lab));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px_x(p, v), p->y0 + p->h + 18,
                lab);
    }
}

/* requests/s in sample i, from the answered counts. */
static double rate_at(const bench_run *run, size_t i)
{
    const bench_sample *s = &run->series[i];
    uint64_t prev_n = i ? run->series[i - 1].answered : 0;
    uint32_t prev_t = i ? run->series[i - 1].t_ms : 0;
    return s->t_ms > prev_t ? (double)(s->answered - prev_n) * 1000.0 / (s->t_ms - prev_t) : 0;
}

static void sellout_panel(FILE *f, const bench_run *run, double sellout_s, double y0)
{
    double tmax = 0, umax = 0, rmax = 0;
    for (size_t i = 0; i < run->nseries; i++) {
        tmax = fmax(tmax, run->series[i].t_ms / 1000.0);
        umax = fmax(umax, (double)run->series[i].units_left);
        rmax = fmax(rmax, rate_at(run, i));
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < run->nevents; i++)
        total += run->events[i].measured ? run->events[i].capacity : 0;
    umax = fmax(umax, (double)total);
    panel p = {SVG_LEFT_PX, y0, SVG_PLOT_WIDTH_PX, 240, nice_max(tmax), nice_max(umax), nice_max(rmax)};
    axes(f, &p, "Sell-out curve: units left and requests/s", "time since the first request (s)", "units left",
         "requests/s");
    time_ticks(f, &p);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2\" points=\"%.1f,%.1f", px_x(&p, 0),
            px_y(&p, (double)total, p.ymax));
    for (size_t i = 0; i < run->nseries; i++)
        fprintf(f, " %.1f,%.1f", px_x(&p, run->series[i].t_ms / 1000.0),
                px_y(&p, (double)run->series[i].units_left, p.ymax));
    fprintf(f, "\"/>\n<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.5\" points=\"");
    for (size_t i = 0; i < run->nseries; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", px_x(&p, run->series[i].t_ms / 1000.0),
                px_y(&p, rate_at(run, i), p.y2max));
    fprintf(f, "\"/>\n");
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"><tspan fill=\"#1f5fa8\">&#8212; units left</tspan>"
            "<tspan fill=\"#c0392b\" dx=\"16\">&#8212; requests/s</tspan></text>\n",
            p.x0 + p.w, p.y0 - 12);
    if (sellout_s > 0 && sellout_s <= p.xmax) {
        double x = px_x(&p, sellout_s);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n",
                x, p.y0, x, p.y0 + p.h);
        bool left = x > p.x0 + p.w * 0.7; /* near the right axis: write it on the left of the line */
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">sold out at %.3f s</text>\n", left ? x - 4 : x + 4,
                p.y0 + 16, left ? "end" : "start", sellout_s);
    }
}

static void p99_panel(FILE *f, const bench_run *run, double y0)
{
    double tmax = 0, lmax = 0;
    for (size_t i = 0; i < run->nseries; i++) {
        tmax = fmax(tmax, run->series[i].t_ms / 1000.0);
        lmax = fmax(lmax, run->series[i].p99_ms);
    }
    panel p = {SVG_LEFT_PX, y0, SVG_PLOT_WIDTH_PX, 180, nice_max(tmax), nice_max(lmax), 0};
    axes(f, &p, "p99 latency of each 100 ms", "time since the first request (s)", "latency (ms)", NULL);
    time_ticks(f, &p);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"1.5\" points=\"");
    size_t k = 0;
    for (size_t i = 0; i < run->nseries; i++)
        if (run->series[i].p99_ms > 0)
            fprintf(f, "%s%.1f,%.1f", k++ ? " " : "", px_x(&p, run->series[i].t_ms / 1000.0),
                    px_y(&p, run->series[i].p99_ms, p.ymax));
    fprintf(f, "\"/>\n");
}

/* x = log10(1 / (1 - p)): 0 is 0%, 1 is 90%, 2 is 99%, ... */
static void percentile_panel(FILE *f, const bench_run *run, double y0)
{
    const slot_hist *h = run->lat_ns;
    double nines = h->count > 1 ? fmin(log10((double)h->count), SVG_NINES_MAX) : 1;
    double lmax = h->count ? (double)slot_hist_percentile(h, 100.0 * (1 - pow(10, -nines))) / 1e6 : 0;
    panel p = {SVG_LEFT_PX, y0, SVG_PLOT_WIDTH_PX, 220, nines, nice_max(lmax), 0};
    axes(f, &p, "Latency by percentile (whole measured phase)", "percentile of answers", "latency (ms)", NULL);
    static const char *const labels[] = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"};
    for (int k = 0; k <= (int)floor(nines + 1e-9) && k <= (int)SVG_NINES_MAX; k++)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px_x(&p, k), p.y0 + p.h + 18,
                labels[k]);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">50%%</text>\n", px_x(&p, log10(2)), p.y0 + p.h + 18);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2\" points=\"");
    for (int i = 0; h->count && i <= SVG_PCT_POINTS; i++) {
        double x = nines * i / SVG_PCT_POINTS;
        double ms = (double)slot_hist_percentile(h, 100.0 * (1 - pow(10, -x))) / 1e6;
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", px_x(&p, x), px_y(&p, fmin(ms, p.ymax), p.ymax));
    }
    fprintf(f, "\"/>\n");
}

/* Text with the five XML specials escaped. */
static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

int bench_report_svg(const bench_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "slot-bench: --svg %s: %s\n", path, strerror(errno));
        return -errno;
    }
    const bench_config *c = r->run->cfg;
    const char *version = json_string_value(json_object_get(r->server, "version"));
    int height = 90 + 300 + 250 + 290;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\" font-size=\"13\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            SVG_WIDTH_PX, height, SVG_WIDTH_PX, height);
    char title[512];
    snprintf(title, sizeof(title), "slot-bench %s against %s %s: %.0f requests/s, p99 %.3f ms", c->name,
             r->run->drv->name, version ? version : "?", r->requests_per_s, r->p99_ms);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"16\">", SVG_LEFT_PX);
    xml_text(f, title);
    snprintf(title, sizeof(title), "%s, capacity %" PRIu64 "%s, qty %s, %u connections x pipeline %u, seed %" PRIu64,
             c->event, c->capacity, c->events > 1 ? " each" : "", c->qty.text, c->connections, c->pipeline, c->seed);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" fill=\"#555\">", SVG_LEFT_PX);
    xml_text(f, title);
    fprintf(f, "</text>\n");
    sellout_panel(f, r->run, r->sellout_s, 90);
    p99_panel(f, r->run, 90 + 300);
    percentile_panel(f, r->run, 90 + 300 + 250);
    fprintf(f, "</svg>\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "slot-bench: --svg %s: write failed\n", path);
        return -EIO;
    }
    return 0;
}
