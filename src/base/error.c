/* error.c — names and messages of slot_err, generated from SLOT_ERR_MAP. */
#include "slot/error.h"

#include <string.h>

static const char *const err_names[] = {
#define SLOT__ERR_NAME(name, code, msg) code,
    SLOT_ERR_MAP(SLOT__ERR_NAME)
#undef SLOT__ERR_NAME
};

static const char *const err_messages[] = {
#define SLOT__ERR_MSG(name, code, msg) msg,
    SLOT_ERR_MAP(SLOT__ERR_MSG)
#undef SLOT__ERR_MSG
};

_Static_assert(sizeof(err_names) / sizeof(err_names[0]) == SLOT_E__COUNT, "one name per code");

const char *slot_err_name(slot_err err)
{
    if ((unsigned)err >= SLOT_E__COUNT)
        return "internal";
    return err_names[err];
}

const char *slot_err_message(slot_err err)
{
    if ((unsigned)err >= SLOT_E__COUNT)
        return err_messages[SLOT_E_INTERNAL];
    return err_messages[err];
}

slot_err slot_err_from_name(const char *name)
{
    for (unsigned i = 0; i < SLOT_E__COUNT; i++)
        if (strcmp(err_names[i], name) == 0)
            return (slot_err)i;
    return SLOT_E__COUNT;
}
