/*
 * slotctl_seats.c — `slotctl seats EVENT [--svg FILE]`: a seated event's
 * house (docs/protocol.md, "Seated events") from the seat_map op and the
 * event view: in the terminal one line per row with its seats' states, then
 * the counts per category; with --svg, a picture of the sections and rows,
 * each seat a square coloured by state, with a legend and the counts. Part
 * of slotctl (slotctl.h); the command table and its help are in slotctl.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "slot/client.h"
#include "slotctl.h"

#define SEAT_PX 12 /* a seat's square, with its gap */
#define ROW_LABEL_PX 64
#define SECTION_GAP_PX 22
#define TOP_PX 64 /* title and legend */

static uint64_t num(json_t *o, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(o, k));
}

/* The state character's colour and name (the seat_map alphabet). */
static const char *state_colour(char st)
{
    switch (st) {
    case '.':
        return "#43a047"; /* free */
    case 'h':
        return "#fb8c00"; /* held */
    case 'c':
        return "#c62828"; /* confirmed */
    default:
        return "#9e9e9e"; /* x: in an allocation */
    }
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++)
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
        default:
            fputc(*s, f);
        }
}

/* The rows "SECTION-ROW" -> states, in the map's order (jansson keeps it). */
static int write_svg(const char *path, const char *event, json_t *rows, json_t *view)
{
    size_t longest = 0, nrows = 0, nsections = 0;
    char last_sec[64] = "";
    const char *k;
    json_t *v;
    json_object_foreach(rows, k, v)
    {
        size_t n = strlen(json_string_value(v));
        longest = n > longest ? n : longest;
        nrows++;
        size_t sl = strcspn(k, "-");
        if (sl >= sizeof last_sec || strncmp(last_sec, k, sl) != 0 || last_sec[sl] != 0) {
            nsections++;
            snprintf(last_sec, sizeof last_sec, "%.*s", (int)sl, k);
        }
    }
    json_t *cats = json_object_get(view, "categories");
    size_t ncats = json_is_object(cats) ? json_object_size(cats) : 0;
    size_t width = ROW_LABEL_PX + longest * SEAT_PX + 40;
    if (width < 560)
        width = 560;
    size_t height = TOP_PX + nrows * SEAT_PX + nsections * SECTION_GAP_PX + 40 + ncats * 18;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "slotctl: seats: %s: %s\n", path, strerror(errno));
        return EXIT_SERVER_ERROR;
    }
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%zu\" height=\"%zu\" viewBox=\"0 0 %zu %zu\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n",
            width, height, width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n<text x=\"12\" y=\"20\" font-size=\"15\" "
               "font-weight=\"bold\">");
    xml_text(f, event);
    fprintf(f, ": %" PRIu64 " seats, %" PRIu64 " free, %" PRIu64 " held, %" PRIu64 " confirmed</text>\n",
            num(view, "capacity"), num(view, "available"), num(view, "held"), num(view, "confirmed"));
    static const char legend[] = ".hcx";
    static const char *const names[] = {"free", "held", "confirmed", "allocation"};
    for (int i = 0; i < 4; i++) {
        fprintf(f, "<rect x=\"%d\" y=\"32\" width=\"10\" height=\"10\" fill=\"%s\"/>", 12 + i * 110,
                state_colour(legend[i]));
        fprintf(f, "<text x=\"%d\" y=\"41\">%s</text>\n", 26 + i * 110, names[i]);
    }
    size_t y = TOP_PX;
    last_sec[0] = 0;
    json_object_foreach(rows, k, v)
    {
        size_t sl = strcspn(k, "-");
        if (strncmp(last_sec, k, sl) != 0 || last_sec[sl] != 0) {
            snprintf(last_sec, sizeof last_sec, "%.*s", (int)sl, k);
            y += SECTION_GAP_PX - 6;
            fprintf(f, "<text x=\"12\" y=\"%zu\" font-weight=\"bold\">section ", y);
            xml_text(f, last_sec);
            fputs("</text>\n", f);
            y += 6;
        }
        fprintf(f, "<text x=\"12\" y=\"%zu\" fill=\"#555555\">", y + 9);
        xml_text(f, k[sl] ? k + sl + 1 : k);
        fputs("</text>", f);
        const char *st = json_string_value(v);
        for (size_t i = 0; st[i]; i++)
            fprintf(f, "<rect x=\"%zu\" y=\"%zu\" width=\"%d\" height=\"%d\" rx=\"2\" fill=\"%s\"/>",
                    ROW_LABEL_PX + i * SEAT_PX, y, SEAT_PX - 2, SEAT_PX - 2, state_colour(st[i]));
        fputc('\n', f);
        y += SEAT_PX;
    }
    y += 24;
    json_object_foreach(cats, k, v)
    {
        fprintf(f, "<text x=\"12\" y=\"%zu\">category ", y);
        xml_text(f, k);
        fprintf(f, ": capacity %" PRIu64 ", available %" PRIu64 ", held %" PRIu64 ", confirmed %" PRIu64 "</text>\n",
                num(v, "capacity"), num(v, "available"), num(v, "held"), num(v, "confirmed"));
        y += 18;
    }
    fputs("</svg>\n", f);
    if (fclose(f) != 0) {
        fprintf(stderr, "slotctl: seats: %s: %s\n", path, strerror(errno));
        return EXIT_SERVER_ERROR;
    }
    return 0;
}

int cmd_seats(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"svg", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {0}};
    const char *svg = NULL;
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0)
        svg = optarg;
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    const char *event = argv[optind];
    slot_req req;
    slot_reply map, view;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_SEAT_MAP, event)) || (rc = ctl_call(x, &req, &map)))
        return rc;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_EVENT, event)) || (rc = ctl_call(x, &req, &view))) {
        slot_reply_clear(&map);
        return rc;
    }
    json_t *jm = json_loads(map.line, 0, NULL), *jv = json_loads(view.line, 0, NULL);
    json_t *rows = json_object_get(jm, "rows");
    if (!json_is_object(rows) || !json_is_object(jv)) {
        fprintf(stderr, "slotctl: seats: the server's reply has no rows\n");
        rc = EXIT_SERVER_ERROR;
    } else if (svg) {
        rc = write_svg(svg, event, rows, jv);
        if (rc == 0 && !x->json)
            printf("wrote %s (%zu rows)\n", svg, json_object_size(rows));
    } else if (!x->json) {
        const char *k;
        json_t *v;
        json_object_foreach(rows, k, v) printf("%-16s %s\n", k, json_string_value(v));
        printf("\n. free  h held  c confirmed  x allocation\n");
        json_object_foreach(json_object_get(jv, "categories"), k, v)
            printf("category %-16s capacity %" PRIu64 "  available %" PRIu64 "  held %" PRIu64 "  confirmed %" PRIu64
                   "\n",
                   k, num(v, "capacity"), num(v, "available"), num(v, "held"), num(v, "confirmed"));
    }
    json_decref(jm);
    json_decref(jv);
    slot_reply_clear(&map);
    slot_reply_clear(&view);
    return rc;
}
