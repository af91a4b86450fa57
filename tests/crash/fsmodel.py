"""fsmodel.py - the crash states POSIX allows, built from a trace (ALICE/CrashMonkey style).

The trace (crashtrace.py) is replayed into a model of the files under the run's
root.  At a crash point k (every record before k happened, none after):

  file data   every write, truncation and O_TRUNC before the begin of the
              file's last completed fsync/fdatasync (or syncfs) is there;
              of the later ones, any prefix may be there, the next one cut
              at a 512-byte boundary ("torn"), or, at page granularity, any
              subset of the pages they touched ("pages": a page not written
              back keeps its durable content, zeros past the durable end)
  names       a create, rename, unlink or mkdir is there once an fsync of its
              directory began after it and completed; any subset of the
              others may be there (applied in their order; an operation whose
              name is not there does nothing)

Only what a sync began after is covered: another thread may write while it
runs.  A failed sync covers nothing (PostgreSQL's lesson).  The durable part
is what the daemon may rely on; the variants choose the rest:

  max     everything that happened (what kill -9 leaves)
  min     only what is durable
  rand    each name operation at random, each file a random prefix, and
          sometimes the next write torn
  pages   names at random, each file's unsynced pages kept or not at random
"""
import os
import random

from crashtrace import (ALL, CLOSE, CREATED, DIR, MKDIR, OPEN, RENAME, SYNC_BEGIN, SYNC_END, TRUNC,
                   UNLINK, WRITE)

PAGE = 4096
SECTOR = 512
VARIANTS = ("max", "min", "rand", "pages")


class Inode:
    __slots__ = ("ops", "durable")

    def __init__(self):
        self.ops = []       # ("w", off, bytes) or ("t", length)
        self.durable = 0    # ops[:durable] survive any crash


class Meta:
    __slots__ = ("kind", "path", "path2", "inode", "dirs", "pos")

    def __init__(self, kind, path, path2=None, inode=None):
        self.kind, self.path, self.path2, self.inode = kind, path, path2, inode
        self.dirs = {os.path.dirname(path)} | ({os.path.dirname(path2)} if path2 else set())
        self.pos = {}       # dir -> index in that dir's list


def apply_ops(ops, upto=None, torn=None):
    """The content after ops (and, with torn = (op, n), the first n bytes of op's write)."""
    buf = bytearray()
    for op in ops if torn is None else list(ops) + [torn[0]]:
        if op[0] == "t":
            del buf[op[1]:]
            buf.extend(bytes(max(0, op[1] - len(buf))))
        else:
            data = op[2] if torn is None or op is not torn[0] else op[2][:torn[1]]
            end = op[1] + len(data)
            if end > len(buf):
                buf.extend(bytes(end - len(buf)))
            buf[op[1]:end] = data
    return bytes(buf)


class Model:
    """The files under root as the trace leaves them, replayed up to a crash point."""

    def __init__(self, records, root):
        self.records = records
        self.root = root
        self.at = 0                         # records replayed
        self.live = {root: "dir"}           # the namespace as the processes see it
        self.by_ino = {}                    # ino -> Inode (files) or path (directories)
        self.inodes = []
        self.meta = []
        self.dir_meta = {}                  # dir -> [Meta] in order
        self.dir_durable = {}               # dir -> how many of dir_meta[dir] are durable
        self.begun = {}                     # (pid, tid, fd) -> what the sync will cover

    def _meta(self, m):
        self.meta.append(m)
        for d in m.dirs:
            lst = self.dir_meta.setdefault(d, [])
            m.pos[d] = len(lst)
            lst.append(m)

    def _step(self, r):
        t = r.type
        if t == OPEN:
            if r.flags & DIR:
                self.by_ino[r.ino] = r.path
                return
            if r.flags & CREATED or r.path not in self.live:
                ino = Inode()
                self.inodes.append(ino)
                self._meta(Meta("create", r.path, inode=ino))
                self.live[r.path] = ino
            self.by_ino[r.ino] = self.live[r.path]
        elif t == WRITE:
            self.by_ino[r.ino].ops.append(("w", r.off, bytes(r.data)))
        elif t == TRUNC:
            self.by_ino[r.ino].ops.append(("t", r.off))
        elif t == RENAME:
            self._meta(Meta("rename", r.path, r.path2))
            if r.path in self.live:
                self.live[r.path2] = self.live.pop(r.path)
        elif t == UNLINK:
            self._meta(Meta("unlink", r.path))
            self.live.pop(r.path, None)
        elif t == MKDIR:
            self._meta(Meta("mkdir", r.path))
            self.live[r.path] = "dir"
        elif t == SYNC_BEGIN:
            if r.flags & ALL:
                cover = ("all", [(i, len(i.ops)) for i in self.inodes],
                         {d: len(v) for d, v in self.dir_meta.items()})
            elif r.flags & DIR:
                d = self.by_ino.get(r.ino)
                cover = ("dir", d, len(self.dir_meta.get(d, [])))
            else:
                ino = self.by_ino.get(r.ino)
                cover = ("file", ino, len(ino.ops) if ino else 0)
            self.begun[(r.pid, r.tid, r.fd)] = cover
        elif t == SYNC_END:
            cover = self.begun.pop((r.pid, r.tid, r.fd), None)
            if cover is None or r.err:
                return  # a failed sync makes nothing durable
            if cover[0] == "all":
                for ino, n in cover[1]:
                    ino.durable = max(ino.durable, n)
                for d, n in cover[2].items():
                    self.dir_durable[d] = max(self.dir_durable.get(d, 0), n)
            elif cover[0] == "dir":
                self.dir_durable[cover[1]] = max(self.dir_durable.get(cover[1], 0), cover[2])
            elif cover[1] is not None:
                cover[1].durable = max(cover[1].durable, cover[2])
        elif t == CLOSE:
            pass

    def advance(self, k):
        """Replays the records before k (k only grows)."""
        while self.at < k:
            self._step(self.records[self.at])
            self.at += 1

    def durable(self, m):
        return all(m.pos[d] < self.dir_durable.get(d, 0) for d in m.dirs)

    def state(self, variant, rng):
        """One crash state at the current point: {path: bytes or "dir"}."""
        names = {self.root: "dir"}
        for m in self.meta:
            if not self.durable(m):
                keep = {"max": True, "min": False}.get(variant)
                if keep is None:
                    keep = rng.random() < 0.5
                if not keep:
                    continue
            parent_ok = names.get(os.path.dirname(m.path)) == "dir"
            if m.kind == "create" and parent_ok:
                names[m.path] = m.inode
            elif m.kind == "mkdir" and parent_ok:
                names[m.path] = "dir"
            elif m.kind == "unlink":
                names.pop(m.path, None)
            elif m.kind == "rename" and m.path in names and \
                    names.get(os.path.dirname(m.path2)) == "dir":
                names[m.path2] = names.pop(m.path)
        out = {}
        for path, v in names.items():
            out[path] = v if v == "dir" else self.content(v, variant, rng)
        return out

    def content(self, ino, variant, rng):
        n, d = len(ino.ops), min(ino.durable, len(ino.ops))
        if variant == "max" or n == d:
            return apply_ops(ino.ops)
        if variant == "min":
            return apply_ops(ino.ops[:d])
        if variant == "rand":
            p = rng.randint(d, n)
            nxt = ino.ops[p] if p < n else None
            if nxt and nxt[0] == "w" and len(nxt[2]) > SECTOR and rng.random() < 0.5:
                # torn: the write's first sectors (up to a sector boundary of the file)
                cut = rng.randrange(SECTOR, len(nxt[2]), SECTOR)
                cut -= (nxt[1] + cut) % SECTOR
                if cut > 0:
                    return apply_ops(ino.ops[:p], torn=(nxt, cut))
            return apply_ops(ino.ops[:p])
        # pages: every op, then each page an unsynced op touched kept or reverted
        full, base = bytearray(apply_ops(ino.ops)), apply_ops(ino.ops[:d])
        touched = set()
        for op in ino.ops[d:]:
            if op[0] == "w" and op[2]:
                touched.update(range(op[1] // PAGE, (op[1] + len(op[2]) - 1) // PAGE + 1))
        for pg in touched:
            if rng.random() < 0.5:
                a, b = pg * PAGE, min(len(full), (pg + 1) * PAGE)
                old = base[a:b]
                full[a:b] = old + bytes(max(0, b - a - len(old)))
        return bytes(full)


def materialize(state, root, target):
    """Writes a state's files, with root replaced by target."""
    for path in sorted(state, key=len):
        rel = os.path.relpath(path, root)
        dst = target if rel == "." else os.path.join(target, rel)
        if state[path] == "dir":
            os.makedirs(dst, exist_ok=True)
    for path, v in state.items():
        if v != "dir":
            dst = os.path.join(target, os.path.relpath(path, root))
            if os.path.isdir(os.path.dirname(dst)):
                with open(dst, "wb") as f:
                    f.write(v)


def crash_points(records, n, seed, variants=VARIANTS):
    """n (k, variant) pairs, sorted by k: points right after one of the
    daemon's operations (client records change nothing on disk), always
    including the end of the trace with every variant."""
    rng = random.Random(seed)
    daemon = [r.idx + 1 for r in records if r.type < 20]
    pts = [(len(records), v) for v in variants]
    while len(pts) < n and daemon:
        pts.append((rng.choice(daemon), rng.choice(variants)))
    return sorted(pts)
