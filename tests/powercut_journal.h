/*
 * tests/powercut_journal.h — the entry types of the disk that forgets'
 * journal, shared by tests/powercut_preload.c (which writes it) and
 * tests/powercut_rebuild.c (which reads it, for tests/test_powercut.c); the
 * layout of each is in powercut_preload.c's head comment.
 */
#ifndef SLOT_TEST_POWERCUT_JOURNAL_H
#define SLOT_TEST_POWERCUT_JOURNAL_H

enum pc_type {
    PC_EXIST = 1,
    PC_WRITE,
    PC_TRUNC,
    PC_FBEGIN,
    PC_FDONE,
    PC_DBEGIN,
    PC_DDONE,
    PC_CREATE,
    PC_MKDIR,
    PC_UNLINK,
    PC_RMDIR,
    PC_RENAME,
    PC_MMAPW,
    PC_SHORT,
};

#endif
