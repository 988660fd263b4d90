/* log.c — see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

uint64_t slot__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void slot__log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("slotd: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
