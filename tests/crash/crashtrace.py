"""crashtrace.py - reads and appends to the crash-state harness's trace (tests/crash/trace.h).

record.c (LD_PRELOAD in the daemon) appends the daemon's file-system
operations; the workload appends SEND and ACK records to the same O_APPEND
file, so a record's index orders it against the daemon's syncs."""
import os
import struct
import time

FMT = "<IBBHHHiiiiiQQQd"  # trace_rec, 64 bytes
HEAD = struct.calcsize(FMT)
assert HEAD == 64

OPEN, WRITE, TRUNC, RENAME, UNLINK, SYNC_BEGIN, SYNC_END, CLOSE, MKDIR = range(1, 10)
SEND, ACK = 20, 21
CREATED, DIR, DATASYNC, ALL = 1, 2, 4, 8


class Rec:
    __slots__ = ("idx", "type", "flags", "pid", "tid", "fd", "err", "ino", "off", "len", "t",
                 "path", "path2", "data")


def read(path):
    """Every record of the trace, in order (idx: its position)."""
    with open(path, "rb") as f:
        buf = f.read()
    out, at = [], 0
    while at + HEAD <= len(buf):
        (size, typ, flags, plen, p2len, _pad, pid, tid, fd, err, _pad2, ino, off, ln,
         t) = struct.unpack_from(FMT, buf, at)
        if size < HEAD or at + size > len(buf):
            raise ValueError("trace %s: a damaged record at byte %d" % (path, at))
        r = Rec()
        r.idx, r.type, r.flags, r.pid, r.tid, r.fd, r.err = len(out), typ, flags, pid, tid, fd, err
        r.ino, r.off, r.len, r.t = ino, off, ln, t
        p = at + HEAD
        r.path = buf[p:p + plen].decode()
        r.path2 = buf[p + plen:p + plen + p2len].decode()
        r.data = buf[p + plen + p2len:at + size]
        out.append(r)
        at += size
    return out


class Writer:
    """The client's side: SEND and ACK records, one write(2) each."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def put(self, typ, off, ln=0, err=0):
        os.write(self.fd, struct.pack(FMT, HEAD, typ, 0, 0, 0, 0, os.getpid(), 0, -1, err, 0, 0,
                                      off, ln, time.monotonic()))

    def close(self):
        os.close(self.fd)
