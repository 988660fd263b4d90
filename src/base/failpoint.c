/* failpoint.c — fault injection for test builds; see slot/failpoint.h. */
#include "slot/failpoint.h"

#ifdef SLOT_FAILPOINTS

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
#define SLOT__FP_NAME(name, spelling) spelling,
    SLOT_FAILPOINT_MAP(SLOT__FP_NAME)
#undef SLOT__FP_NAME
};

static struct {
    unsigned long skip, times;
    bool standing; /* armed at start, for slot_failpoint_armed */
} armed[SLOT_FP__COUNT];

int slot_failpoints_parse(const char *spec, char *err, unsigned errlen)
{
    char buf[512];
    if (!spec || !*spec)
        return 0;
    snprintf(buf, sizeof(buf), "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        unsigned long skip = 0, times = 1;
        char *at = strchr(item, '@'), *star = strchr(item, '*');
        if (star)
            *star++ = 0;
        if (at)
            *at++ = 0;
        char *end = NULL;
        if (at && ((skip = strtoul(at, &end, 10)), *end))
            goto bad;
        if (star && ((times = strtoul(star, &end, 10)), *end))
            goto bad;
        int fp = -1;
        for (int i = 0; i < SLOT_FP__COUNT; i++)
            if (strcmp(item, names[i]) == 0)
                fp = i;
        if (fp < 0)
            goto bad;
        armed[fp].skip = skip;
        armed[fp].times = times;
        armed[fp].standing = true;
        continue;
    bad:
        snprintf(err, errlen, "SLOT_FAILPOINTS: bad item \"%s\" (want NAME[@SKIP][*TIMES])", item);
        return -1;
    }
    return 0;
}

bool slot_failpoint_hit(slot_failpoint fp)
{
    if (armed[fp].times == 0)
        return false;
    if (armed[fp].skip > 0) {
        armed[fp].skip--;
        return false;
    }
    armed[fp].times--;
    fprintf(stderr, "slotd: failpoint %s fired\n", names[fp]);
    return true;
}

bool slot_failpoint_armed(slot_failpoint fp)
{
    return armed[fp].standing;
}

#endif
