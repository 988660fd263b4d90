/*
 * slot/assert.h — SLOT_ASSERT, for programmer errors only (TigerBeetle style:
 * always on, never compiled out). Operating errors — disk, network, bad input
 * — are returned and handled, never asserted.
 */
#ifndef SLOT_ASSERT_H
#define SLOT_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#define SLOT_ASSERT(cond)                                                                        \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "slotd: assertion failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                                             \
        }                                                                                        \
    } while (0)

#endif
