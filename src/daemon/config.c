/*
 * config.c — slotd's --config FILE (config.h): reads `name = value` lines
 * and hands each to the flag parser as --name=value.
 */
#include "daemon_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One setting line, pointing into the file's buffer (NUL-ended in place). */
typedef struct setting {
    const char *name;
    const char *value;
    unsigned line;
    int opt;   /* index into opts */
    bool last; /* a no-value flag: the last line with this name (only it counts) */
} setting;

/* The argv strings handed to the parser, which may keep pointers into them
 * (a path, a file name) for the life of the process: kept here, and freed at
 * exit so that a leak checker sees nothing left behind. */
typedef struct kept_arg {
    struct kept_arg *next;
    char text[];
} kept_arg;

static kept_arg *kept;

static void free_kept(void)
{
    while (kept) {
        kept_arg *k = kept;
        kept = k->next;
        free(k);
    }
}

/* "--name" or "--name=value" in a kept string; NULL when out of memory. */
static char *keep_arg(const char *name, const char *value)
{
    size_t n = 2 + strlen(name) + (value ? 1 + strlen(value) : 0) + 1;
    kept_arg *k = malloc(sizeof(*k) + n);
    if (!k)
        return NULL;
    if (!kept)
        atexit(free_kept);
    snprintf(k->text, n, value ? "--%s=%s" : "--%s", name, value ? value : "");
    k->next = kept;
    kept = k;
    return k->text;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* Reads the whole file into a NUL-ended heap buffer; NULL after printing why. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "slotd: --config %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(SLOT_CONFIG_BYTES_MAX + 2);
    size_t n = buf ? fread(buf, 1, SLOT_CONFIG_BYTES_MAX + 1, f) : 0;
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (!buf || err) {
        fprintf(stderr, "slotd: --config %s: %s\n", path, buf ? strerror(err) : "out of memory");
        free(buf);
        return NULL;
    }
    if (n > SLOT_CONFIG_BYTES_MAX) {
        fprintf(stderr, "slotd: --config %s: larger than %u bytes\n", path, SLOT_CONFIG_BYTES_MAX);
        free(buf);
        return NULL;
    }
    if (memchr(buf, '\0', n)) {
        fprintf(stderr, "slotd: --config %s: holds a NUL byte (not a text file)\n", path);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Cuts the value off at a comment, trims it, removes one pair of quotes.
 * Returns the value (in place), or NULL with *why set. */
static char *parse_value(char *v, const char **why)
{
    if (*v == '"') {
        char *close = strchr(v + 1, '"');
        if (!close) {
            *why = "a quoted value without its closing quote";
            return NULL;
        }
        char *rest = close + 1;
        while (is_blank(*rest))
            rest++;
        if (*rest && *rest != '#') {
            *why = "text after the closing quote";
            return NULL;
        }
        *close = 0;
        return v + 1;
    }
    char *end = v;
    while (*end && !(*end == '#' && (end == v || is_blank(end[-1]))))
        end++;
    while (end > v && is_blank(end[-1]))
        end--;
    *end = 0;
    return v;
}

/* Parses one line (NUL-ended, no newline) into *s. Returns 1 for a setting,
 * 0 for a blank or comment line, -1 with *why set. */
static int parse_line(char *p, setting *s, const char **why)
{
    size_t n = strlen(p);
    if (n && p[n - 1] == '\r')
        p[--n] = 0;
    while (is_blank(*p))
        p++;
    if (*p == 0 || *p == '#')
        return 0;
    char *name = p;
    while (is_name_char(*p))
        p++;
    char *name_end = p;
    while (is_blank(*p))
        p++;
    if (name_end == name || *p != '=') {
        *why = "want `name = value` (name: a long flag without its dashes, in lower case)";
        return -1;
    }
    *name_end = 0;
    p++;
    while (is_blank(*p))
        p++;
    char *value = parse_value(p, why);
    if (!value)
        return -1;
    s->name = name;
    s->value = value;
    return 1;
}

/* Finds the setting's flag and checks its value's form. Returns 0, or -1 with *why set. */
static int check_setting(setting *s, const struct option *opts, const char *const *refused, const char **why)
{
    for (size_t i = 0; refused && refused[i]; i++) {
        if (strcmp(refused[i], s->name) == 0) {
            *why = "cannot be set in a config file";
            return -1;
        }
    }
    s->opt = -1;
    for (int i = 0; opts[i].name; i++)
        if (strcmp(opts[i].name, s->name) == 0)
            s->opt = i;
    if (s->opt < 0) {
        *why = "no such setting (the settings are slotd's long flags without their dashes; see slotd --help)";
        return -1;
    }
    if (opts[s->opt].has_arg == no_argument) {
        if (strcmp(s->value, "true") != 0 && strcmp(s->value, "false") != 0) {
            *why = "takes no value on the command line: write true or false";
            return -1;
        }
    } else if (*s->value == 0) {
        *why = "needs a value";
        return -1;
    }
    return 0;
}

/* Splits buf into lines and checks each; fills set[] (room for every line). */
static int parse_all(const char *path, char *buf, size_t len, const struct option *opts, const char *const *refused,
                     setting *set, size_t *nset)
{
    unsigned line = 0;
    *nset = 0;
    for (char *p = buf; p < buf + len;) {
        char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        char *next = nl ? nl + 1 : buf + len;
        line++;
        if ((size_t)(next - p) > SLOT_CONFIG_LINE_BYTES_MAX) {
            fprintf(stderr, "slotd: %s:%u: longer than %u bytes\n", path, line, SLOT_CONFIG_LINE_BYTES_MAX);
            return -1;
        }
        if (nl)
            *nl = 0;
        setting *s = &set[*nset];
        const char *why = NULL;
        int rc = parse_line(p, s, &why);
        if (rc < 0) {
            fprintf(stderr, "slotd: %s:%u: %s\n", path, line, why);
            return -1;
        }
        if (rc > 0 && check_setting(s, opts, refused, &why) != 0) {
            fprintf(stderr, "slotd: %s:%u: \"%s\": %s\n", path, line, s->name, why);
            return -1;
        }
        if (rc > 0) {
            s->line = line;
            (*nset)++;
        }
        p = next;
    }
    return 0;
}

/* Marks, for each no-value flag, the last line that sets it. */
static int mark_last(const struct option *opts, setting *set, size_t nset)
{
    size_t nopts = 0;
    while (opts[nopts].name)
        nopts++;
    bool *seen = calloc(nopts ? nopts : 1, sizeof(*seen));
    if (!seen)
        return -1;
    for (size_t i = nset; i-- > 0;) {
        set[i].last = !seen[set[i].opt];
        seen[set[i].opt] = true;
    }
    free(seen);
    return 0;
}

static int apply_one(const char *path, const setting *s, const struct option *opts, slot__config_apply_fn apply,
                     void *ctx)
{
    bool flag = opts[s->opt].has_arg == no_argument;
    if (flag && (!s->last || strcmp(s->value, "false") == 0))
        return 0;
    char *arg = keep_arg(s->name, flag ? NULL : s->value);
    if (!arg) {
        fprintf(stderr, "slotd: --config %s: out of memory\n", path);
        return -1;
    }
    char *argv[] = {(char *)"slotd", arg, NULL};
    if (apply(2, argv, ctx) != 0) {
        fprintf(stderr, "slotd: %s:%u: \"%s\": the value is not accepted (the line above says why)\n", path, s->line,
                s->name);
        return -1;
    }
    return 0;
}

int slot__config_read(const char *path, const struct option *opts, const char *const *refused,
                      slot__config_apply_fn apply, void *ctx)
{
    size_t len = 0;
    char *buf = read_all(path, &len);
    if (!buf)
        return -1;
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += buf[i] == '\n';
    setting *set = calloc(cap, sizeof(*set));
    size_t nset = 0;
    int rc = set ? parse_all(path, buf, len, opts, refused, set, &nset) : -1;
    if (!set)
        fprintf(stderr, "slotd: --config %s: out of memory\n", path);
    if (rc == 0 && mark_last(opts, set, nset) != 0) {
        fprintf(stderr, "slotd: --config %s: out of memory\n", path);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < nset; i++)
        rc = apply_one(path, &set[i], opts, apply, ctx);
    free(set);
    free(buf);
    return rc;
}
