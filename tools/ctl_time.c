/* ctl_time.c — command-line times (ctl_time.h): ISO 8601, "+30s", raw ms. */
#include "ctl_time.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slot/limits.h"

/* Exactly n digits at *p into *v; advances p. */
static int digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return -1;
        *v = *v * 10 + (**p - '0');
    }
    return 0;
}

static int parse_relative(const char *s, uint64_t now_ms, uint64_t *out)
{
    char *end;
    unsigned long long n = strtoull(s, &end, 10);
    if (end == s || !isdigit((unsigned char)*s))
        return -1;
    uint64_t unit;
    if (strcmp(end, "ms") == 0)
        unit = 1;
    else if (strcmp(end, "s") == 0 || *end == 0)
        unit = 1000;
    else if (strcmp(end, "m") == 0)
        unit = 60000;
    else if (strcmp(end, "h") == 0)
        unit = 3600000;
    else if (strcmp(end, "d") == 0)
        unit = 86400000;
    else
        return -1;
    if (n > SLOT_TIME_MS_MAX / unit || now_ms + n * unit > SLOT_TIME_MS_MAX)
        return -1;
    *out = now_ms + n * unit;
    return 0;
}

/* YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|+HH:MM|-HH:MM] */
static int parse_iso(const char *p, uint64_t *out)
{
    struct tm tm = {0};
    int y, mo, d, h, mi, sec = 0, ms = 0, off_min = 0;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d))
        return -1;
    if ((*p != 'T' && *p != ' ') || (p++, digits(&p, 2, &h)) || *p++ != ':' || digits(&p, 2, &mi))
        return -1;
    if (*p == ':') {
        p++;
        if (digits(&p, 2, &sec))
            return -1;
        if (*p == '.') {
            p++;
            int n = 0;
            for (; isdigit((unsigned char)*p); p++, n++)
                if (n < 3)
                    ms = ms * 10 + (*p - '0');
            if (n == 0)
                return -1;
            for (; n < 3; n++)
                ms *= 10;
        }
    }
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        off_min = sign * (oh * 60 + om);
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    long long v = (long long)t * 1000 + ms - (long long)off_min * 60000;
    if (t == (time_t)-1 || v < 0 || (uint64_t)v > SLOT_TIME_MS_MAX)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int slot_ctl_time_parse(const char *s, uint64_t now_ms, uint64_t *out)
{
    if (strcmp(s, "none") == 0) {
        *out = 0;
        return 0;
    }
    if (*s == '+')
        return parse_relative(s + 1, now_ms, out);
    size_t n = strspn(s, "0123456789");
    if (n > 0 && s[n] == 0) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (v > SLOT_TIME_MS_MAX || n > 16)
            return -1;
        *out = v;
        return 0;
    }
    return parse_iso(s, out);
}

char *slot_ctl_time_format(uint64_t ms, char *out, unsigned long cap)
{
    if (ms == 0) {
        snprintf(out, cap, "none");
        return out;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char day[24];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03uZ", day, (unsigned)(ms % 1000));
    return out;
}
