/* trace.h - the record format of the crash-state harness's trace (issue 29).
 *
 * tests/crash/record.c appends one record per file-system operation of the
 * daemon (and of its snapshot children) under $PCD_CRASH_ROOT; the workload
 * client appends SEND and ACK records to the same file.  Every record is
 * written with one writev to a descriptor opened O_APPEND, so records of
 * several processes and threads never interleave, and a record's position in
 * the file is the order in which the operations completed.
 * tests/crash/crashtrace.py reads it (struct format FMT in crashtrace.py: keep the
 * two in step). */
#ifndef PCD_CRASH_TRACE_H
#define PCD_CRASH_TRACE_H

#include <stdint.h>

enum trace_type {
    TR_OPEN = 1,        /* path, ino; off = open flags; flags TRF_CREATED / TRF_DIR */
    TR_WRITE = 2,       /* ino, off, len bytes of data follow */
    TR_TRUNC = 3,       /* ino, off = new length (ftruncate, or O_TRUNC at open) */
    TR_RENAME = 4,      /* path -> path2 */
    TR_UNLINK = 5,      /* path */
    TR_SYNC_BEGIN = 6,  /* ino (0 with TRF_ALL: syncfs/sync); before the call */
    TR_SYNC_END = 7,    /* same, after it; err != 0: it failed */
    TR_CLOSE = 8,       /* ino */
    TR_MKDIR = 9,       /* path */
    TR_SEND = 20,       /* client: requests off .. off+len-1 sent */
    TR_ACK = 21,        /* client: request off answered; err = error code or 0 */
};

enum trace_flags {
    TRF_CREATED = 1,  /* open: the call created the file */
    TRF_DIR = 2,      /* the descriptor is a directory */
    TRF_DATASYNC = 4, /* fdatasync rather than fsync */
    TRF_ALL = 8,      /* syncfs / sync: every file */
};

/* Little-endian, 64 bytes, then path, path2 and data. */
typedef struct trace_rec {
    uint32_t size; /* the whole record */
    uint8_t type;
    uint8_t flags;
    uint16_t plen;
    uint16_t p2len;
    uint16_t pad;
    int32_t pid;
    int32_t tid;
    int32_t fd;
    int32_t err;
    int32_t pad2;
    uint64_t ino;
    uint64_t off;
    uint64_t len;
    double t; /* CLOCK_MONOTONIC, seconds */
} trace_rec;

_Static_assert(sizeof(trace_rec) == 64, "trace_rec is 64 bytes (crashtrace.py reads it so)");

#endif
