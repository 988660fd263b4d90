/*
 * slotctl_watch.c — `slotctl watch` (slotctl_watch.h). Every interval it
 * asks for stats (and the event), and draws one frame from the difference
 * with the sample before: holds/s, sold-out answers/s, requests/s, commit
 * time per commit; p50/p99 are the server's latency histogram since it
 * started (stats keeps no window). On a terminal the frame is redrawn in
 * place and the keyboard is read without echo (q quits); the terminal's
 * modes are put back on every way out.
 */
#include "slotctl_watch.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EXIT_FAIL 1
#define EXIT_CONNECTION 2
#define EXIT_USAGE 64
#define WATCH_INTERVAL_MS_DEFAULT 1000
#define WATCH_INTERVAL_MS_MIN 100
#define WATCH_INTERVAL_MS_MAX 60000
#define WATCH_BAR_COLS_MAX 60 /* the units-left bar; narrower terminals get less */
#define WATCH_BAR_COLS_MIN 10

const char *slotctl_watch_help(void)
{
    return "A live view of the server, redrawn every interval until q or Ctrl-C: with EVENT its units\n"
           "left (a bar of available/capacity), held, confirmed and waiting, and for an event with a\n"
           "waiting room its mode, rate, joined, waiting, admitted, open grants, joins/s and\n"
           "admissions/s, and for a seated event its rows' seats (the first 24 rows); then holds/s,\n"
           "sold-out\n"
           "answers/s, requests/s and errors/s over the last interval, latency p50/p99 (the server's\n"
           "histogram since it started), connections, queue, commits/s and the time per commit, and\n"
           "the database's size. Ends with exit 2 and a message when the server goes away.\n"
           "Without a terminal (stdout a pipe or a file) the frames follow one another.\n"
           "  --once                print one frame (two samples an interval apart) and exit, for scripts\n"
           "  --interval MS         time between frames, 100..60000 (default 1000)\n";
}

typedef struct sample {
    uint64_t t_ms; /* monotonic */
    bool have_event;
    json_t *stats, *event; /* replies (owned) */
    json_t *seats;         /* a seated event's seat_map reply (owned), else NULL */
} sample;

#define WATCH_SEAT_ROWS_MAX 24 /* rows of a seated event's map in a frame */

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t u64(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static uint64_t u64_in(json_t *o, const char *obj, const char *k)
{
    return u64(json_object_get(o, obj), k);
}

/* One request's reply as JSON into *out. 0, or an exit status after a message. */
static int ask(slot_follow *f, const slot_req *req, json_t **out, char *why, size_t whylen)
{
    *out = NULL;
    slot_reply r;
    int rc = slot_follow_call(f, req, &r);
    if (rc < 0) {
        snprintf(why, whylen, "the server went away (%s)", slot_follow_error(f));
        return EXIT_CONNECTION;
    }
    if (!r.ok) {
        snprintf(why, whylen, "%s: %s", r.error[0] ? r.error : "error",
                 r.message[0] ? r.message : slot_err_message(r.err));
        slot_reply_clear(&r);
        return EXIT_FAIL;
    }
    *out = json_loads(r.line, 0, NULL);
    slot_reply_clear(&r);
    if (!*out) {
        snprintf(why, whylen, "the server's reply is not JSON");
        return EXIT_FAIL;
    }
    return 0;
}

static int take(slot_follow *f, const char *event, sample *s, char *why, size_t whylen)
{
    memset(s, 0, sizeof(*s));
    slot_req req;
    slot_req_init(&req, SLOT_OP_STATS);
    int rc = ask(f, &req, &s->stats, why, whylen);
    if (rc == 0 && event) {
        slot_req_event(&req, SLOT_OP_EVENT, event);
        rc = ask(f, &req, &s->event, why, whylen);
        s->have_event = rc == 0;
        if (rc == 0 && json_object_get(s->event, "categories")) { /* seated: its map too */
            slot_req_event(&req, SLOT_OP_SEAT_MAP, event);
            rc = ask(f, &req, &s->seats, why, whylen);
        }
    }
    s->t_ms = mono_ms();
    return rc;
}

static void drop(sample *s)
{
    json_decref(s->stats);
    json_decref(s->event);
    json_decref(s->seats);
    memset(s, 0, sizeof(*s));
}

/* A counter's change per second between a and b. */
static double rate(const sample *a, const sample *b, const char *k)
{
    double dt = (double)(b->t_ms - a->t_ms) / 1000.0;
    uint64_t x = u64(a->stats, k), y = u64(b->stats, k);
    return dt > 0 && y >= x ? (double)(y - x) / dt : 0.0;
}

static uint64_t requests_total(json_t *stats)
{
    uint64_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(stats, "requests"), k, v)
        n += json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
    return n;
}

static void human_bytes(uint64_t b, char *buf, size_t cap)
{
    if (b >= (1ull << 30))
        snprintf(buf, cap, "%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, cap, "%.1f MiB", (double)b / (double)(1ull << 20));
    else
        snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
}

static int term_cols(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

/* One frame, from the samples a (earlier) and b, to stdout; clear: redraw in place. */
static void draw(const char *addr, const char *event, const sample *a, const sample *b, bool clear, bool tty,
                 int interval_ms)
{
    if (clear)
        fputs("\033[H\033[2J", stdout);
    const char *nl = "\n"; /* OPOST stays on in our raw mode: the terminal adds the \r */
    time_t now = time(NULL);
    struct tm tm;
    char when[32];
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    printf("slotctl watch %s   %s   every %.1f s%s%s", addr, when, interval_ms / 1000.0, tty ? "   (q quits)" : "", nl);
    printf("%s", nl);
    if (event && b->have_event) {
        json_t *e = b->event;
        uint64_t cap = u64(e, "capacity"), avail = u64(e, "available");
        json_t *st = json_object_get(e, "status");
        printf("event %s (%s)%s", event, json_is_string(st) ? json_string_value(st) : "?", nl);
        int cols = term_cols() - 40;
        cols = cols > WATCH_BAR_COLS_MAX ? WATCH_BAR_COLS_MAX : cols < WATCH_BAR_COLS_MIN ? WATCH_BAR_COLS_MIN : cols;
        int fill = cap ? (int)((double)avail * cols / (double)cap + 0.5) : 0;
        printf("  units left %12" PRIu64 " / %-12" PRIu64 " [", avail, cap);
        for (int i = 0; i < cols; i++)
            putchar(i < fill ? '#' : '.');
        printf("] %5.1f%%%s", cap ? 100.0 * (double)avail / (double)cap : 0.0, nl);
        printf("  held %" PRIu64 "   confirmed %" PRIu64 "   waiting %" PRIu64 "%s", u64(e, "held"),
               u64(e, "confirmed"), u64(e, "waiting"), nl);
        json_t *rows = json_object_get(b->seats, "rows");
        if (json_is_object(rows)) { /* docs/protocol.md, "Seated events": the seats, live */
            const char *rk;
            json_t *rv;
            size_t shown = 0, width = (size_t)(term_cols() > 40 ? term_cols() - 20 : 20);
            printf("  seats (. free  h held  c confirmed  x allocation)%s", nl);
            json_object_foreach(rows, rk, rv)
            {
                if (shown++ == WATCH_SEAT_ROWS_MAX) {
                    printf("  ... %zu more rows%s", json_object_size(rows) - WATCH_SEAT_ROWS_MAX, nl);
                    break;
                }
                const char *states = json_string_value(rv);
                size_t n = states ? strlen(states) : 0;
                printf("  %-12s %.*s%s%s", rk, (int)(n < width ? n : width), states ? states : "",
                       n > width ? "..." : "", nl);
            }
        }
        json_t *room = json_object_get(e, "room"), *ra = json_object_get(a->event, "room");
        if (json_is_object(room)) { /* docs/protocol.md, "Admission": the waiting room's counts */
            json_t *mode = json_object_get(e, "admission");
            double dt_s = (double)(b->t_ms - a->t_ms) / 1000.0;
            uint64_t adm = u64(room, "admitted"), adm0 = json_is_object(ra) ? u64(ra, "admitted") : adm;
            uint64_t joi = u64(room, "joined"), joi0 = json_is_object(ra) ? u64(ra, "joined") : joi;
            printf("  room (%s, %" PRIu64 "/s)  joined %" PRIu64 "   waiting %" PRIu64 "   admitted %" PRIu64
                   "   open grants %" PRIu64 "%s",
                   json_is_string(mode) ? json_string_value(mode) : "?", u64(e, "admit_per_s"), joi,
                   u64(room, "waiting"), adm, u64(room, "open_grants"), nl);
            printf("  joins/s %10.0f   admissions/s %10.0f%s",
                   dt_s > 0 && joi >= joi0 ? (double)(joi - joi0) / dt_s : 0.0,
                   dt_s > 0 && adm >= adm0 ? (double)(adm - adm0) / dt_s : 0.0, nl);
        }
        printf("%s", nl);
    }
    double dt = (double)(b->t_ms - a->t_ms) / 1000.0;
    uint64_t ra = requests_total(a->stats), rb = requests_total(b->stats);
    double reqs = dt > 0 && rb >= ra ? (double)(rb - ra) / dt : 0.0;
    printf("holds/s      %10.0f   sold-out/s   %10.0f%s", rate(a, b, "holds"), rate(a, b, "sold_out"), nl);
    printf("requests/s   %10.0f   errors/s     %10.0f%s", reqs, rate(a, b, "errors"), nl);
    printf("latency p50  %8" PRIu64 " us   p99 %10" PRIu64 " us   (since start)%s",
           u64_in(b->stats, "latency_us", "p50"), u64_in(b->stats, "latency_us", "p99"), nl);
    printf("connections  %10" PRIu64 "   queue        %10" PRIu64 "%s", u64(b->stats, "connections"),
           u64(b->stats, "queue"), nl);
    uint64_t dc = u64(b->stats, "commits") - u64(a->stats, "commits");
    uint64_t dbusy = u64(b->stats, "commit_busy_us") - u64(a->stats, "commit_busy_us");
    uint64_t dsync = u64(b->stats, "commit_sync_us") - u64(a->stats, "commit_sync_us");
    if (dc)
        printf("commits/s    %10.0f   commit time  %8.2f ms (fsync %.2f ms)%s", rate(a, b, "commits"),
               (double)dbusy / (double)dc / 1000.0, (double)dsync / (double)dc / 1000.0, nl);
    else
        printf("commits/s    %10.0f   commit time         - (no commit this interval)%s", 0.0, nl);
    char db[32], map[32];
    human_bytes(u64(b->stats, "db_bytes"), db, sizeof db);
    human_bytes(u64(b->stats, "map_bytes"), map, sizeof map);
    printf("database     %s of a %s map%s", db, map, nl);
    fflush(stdout);
}

/* ---- the terminal */

static struct termios saved;
static bool raw_on;
static bool keys_on; /* stdin is the terminal, read for q */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
    stop_sig = sig;
}

static void term_restore(void)
{
    if (!raw_on)
        return;
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    fputs("\033[?25h", stdout); /* cursor back */
    fflush(stdout);
    raw_on = false;
}

static void term_raw(void)
{
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) != 0)
        return;
    struct termios t = saved;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: Ctrl-C is SIGINT, handled below */
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) != 0)
        return;
    raw_on = true;
    keys_on = true;
    atexit(term_restore);
    fputs("\033[?25l", stdout); /* hide the cursor while redrawing */
}

/* Waits up to ms for a key; true when it was q (or Q) or a signal came. */
static bool wait_key(int ms)
{
    uint64_t end = mono_ms() + (uint64_t)ms;
    for (;;) {
        if (stop_sig)
            return true;
        uint64_t now = mono_ms();
        if (now >= end)
            return false;
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int n = poll(&p, keys_on ? 1 : 0, (int)(end - now));
        if (n > 0) {
            char ch;
            ssize_t r = read(STDIN_FILENO, &ch, 1);
            if (r == 1 && (ch == 'q' || ch == 'Q'))
                return true;
            if (r == 0) /* the keyboard went away (EOF): stop reading it */
                keys_on = false;
        }
    }
}

int slotctl_watch(slot_follow *f, int argc, char **argv)
{
    static const struct option opts[] = {{"once", no_argument, NULL, 'o'},
                                         {"interval", required_argument, NULL, 'i'},
                                         {0}};
    bool once = false;
    int interval_ms = WATCH_INTERVAL_MS_DEFAULT;
    int o;
    while ((o = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        if (o == 'o') {
            once = true;
        } else if (o == 'i') {
            char *end = NULL;
            errno = 0;
            long v = optarg[0] >= '0' && optarg[0] <= '9' ? strtol(optarg, &end, 10) : -1;
            if (!end || *end || errno || v < WATCH_INTERVAL_MS_MIN || v > WATCH_INTERVAL_MS_MAX) {
                fprintf(stderr, "slotctl: watch: --interval: want %d..%d ms, not '%s'\n", WATCH_INTERVAL_MS_MIN,
                        WATCH_INTERVAL_MS_MAX, optarg);
                return EXIT_USAGE;
            }
            interval_ms = (int)v;
        } else {
            fprintf(stderr, "slotctl: watch: %s '%s' (see 'slotctl watch --help')\n",
                    o == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr, "slotctl: watch: unexpected argument '%s' (see 'slotctl watch --help')\n", argv[optind + 1]);
        return EXIT_USAGE;
    }
    const char *event = argc > optind ? argv[optind] : NULL;
    if (event && strlen(event) > SLOT_EVENT_BYTES_MAX) {
        fprintf(stderr, "slotctl: watch: event name longer than %d bytes: '%s'\n", SLOT_EVENT_BYTES_MAX, event);
        return EXIT_USAGE;
    }
    bool tty = !once && isatty(STDOUT_FILENO);
    char why[512];
    sample a, b;
    int rc = take(f, event, &a, why, sizeof why);
    if (rc != 0) {
        fprintf(stderr, "slotctl: watch: %s\n", why);
        drop(&a);
        return rc;
    }
    const char *addr = slot_follow_node(f);
    char addr_buf[SLOT_CLIENT_ADDR_BYTES_MAX + 1];
    snprintf(addr_buf, sizeof addr_buf, "%s", addr ? addr : "?");
    if (!once) {
        struct sigaction sa = {.sa_handler = on_stop};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (tty)
            term_raw();
    }
    if (tty) {
        draw(addr_buf, event, &a, &a, true, raw_on, interval_ms); /* the first frame: no rates yet */
    }
    for (;;) {
        if (tty ? wait_key(interval_ms) : (usleep((useconds_t)interval_ms * 1000u), stop_sig != 0))
            break;
        rc = take(f, event, &b, why, sizeof why);
        if (rc != 0) {
            term_restore();
            fprintf(stderr, "%sslotctl: watch: %s\n", tty ? "\n" : "", why);
            drop(&b);
            break;
        }
        draw(addr_buf, event, &a, &b, tty, raw_on, interval_ms);
        drop(&a);
        a = b;
        memset(&b, 0, sizeof b);
        if (once)
            break;
        if (!tty)
            putchar('\n'); /* not a terminal: frames one after another */
    }
    drop(&a);
    term_restore();
    if (tty && rc == 0)
        putchar('\n');
    return rc;
}
