"""Between the processes of -j (api/jobs.py): plain pipes, widened, carrying length-prefixed messages; a
worker's output sent from a thread (Sender), read by the parent into a buffer of its own per worker (Inbox), and
the plan sent to a worker in chunks (plan_chunks)."""
from __future__ import annotations

import os
import queue
import struct
import threading
from array import array

CHUNK_BYTES = 256 << 10        # a worker sends its output in chunks of about this size ...
CHUNK_FRAMES = 2048            # ... or of this many frames
QUEUE_PLANNING = 256           # chunks a worker keeps ready while the parent still plans (it merges only then) ...
QUEUE_CHUNKS = 16              # ... and then, while the parent is busy (then it waits). Kept small (4 MB, not 64):
                               # output sent soon after it is made is still in the cache (the workers' CPU on 40,000
                               # frames of -T json: 8 % less in five alternated runs under load), and -j 2 -T json's
                               # largest process peaks at 50 MB, not 87
PIPE_BYTES = 256 << 10         # (a chunk in one write)

# A chunk of a worker's output is: a header (HEAD: FRAMES, frames n, bytes of the head, bytes of the blob), then
# n + 1 offsets into the blob where each frame's output ends (int64), each frame's time (int64; NO_TIME: not
# displayed), the head (the writer's first form of the worker's first displayed frame, or nothing), the blob. The
# parent reads it into a buffer of its own per worker, reused from chunk to chunk, and writes slices of it: no
# pickling, no copy but the pipe's. The end (trailer, statistics) and a failure are pickled (END, ERROR).

FRAMES, END, ERROR, FAKES = 1, 2, 3, 4     # FAKES (pickled): the heuristic lookups of the next chunk's frames
                                         # (output/lua_fakes.py), sent before it when it has any
HEAD = struct.Struct("<qqqq")
SIZE = struct.Struct("<q")              # the length of a chunk of the plan (0: the end of the plan)


def send_all(fd: int, parts: list) -> None:
    """Write every part (bytes-like) to the pipe."""
    for at in range(0, len(parts), 1000):           # (IOV_MAX is 1024)
        group = parts[at:at + 1000]
        done = os.writev(fd, group)
        total = sum(memoryview(p).nbytes for p in group)
        if done < total:                            # (a signal, or a non-blocking pipe)
            rest = memoryview(b"".join(group))[done:]
            while rest:
                rest = rest[os.write(fd, rest):]


def read_into(fd: int, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError
        got += n


def read_exact(fd: int, n: int) -> bytes:
    buf = bytearray(n)
    read_into(fd, memoryview(buf))
    return bytes(buf)


class Inbox:
    """One worker's messages, as the parent reads them."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()
        self.leave_blob = False        # a chunk's frames' bytes are left in the pipe (blob None): the merge moves them

    def read(self):
        import pickle
        kind, n, head, blob = HEAD.unpack(read_exact(self.fd, HEAD.size))
        if kind != FRAMES:
            return kind, pickle.loads(read_exact(self.fd, blob))
        if self.leave_blob:
            blob = 0
        need = 16 * n + 8 + head + blob
        if len(self.buf) < need:       # (the old buffer may still be exported: a new one)
            self.buf = bytearray(max(need, 2 * len(self.buf)))
        view = memoryview(self.buf)[:need]
        read_into(self.fd, view)
        at = 8 * (n + 1)
        ends, times = view[:at].cast("q"), view[at:at + 8 * n].cast("q")
        at += 8 * n
        return FRAMES, times, bytes(view[at:at + head]), view[at + head:] if blob else None, ends


class Sender:
    """Sends from a thread: the worker goes on decoding while the parent reads the other workers."""

    def __init__(self, fd: int):
        self.fd = fd
        self.queue: queue.Queue = queue.Queue(QUEUE_PLANNING)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        import pickle
        while True:
            msg = self.queue.get()
            if msg is None:
                return
            if msg[0] == FRAMES:
                _, ends, times, head, pieces = msg
                parts = [HEAD.pack(FRAMES, len(times), len(head), ends[-1]), ends, times, head, *pieces]
            else:
                data = pickle.dumps(msg[1], pickle.HIGHEST_PROTOCOL)
                parts = [HEAD.pack(msg[0], 0, 0, len(data)), data]
            try:
                send_all(self.fd, parts)
            except OSError:             # the parent is gone (a closed pipe, a failed run)
                os._exit(0)

    def put(self, msg) -> None:
        self.queue.put(msg)

    def planned(self) -> None:
        """The parent has planned the file and merges from now on: keep fewer chunks ready."""
        with self.queue.mutex:
            self.queue.maxsize = QUEUE_CHUNKS

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        os.close(self.fd)


def plan_chunks(fd: int, planned=None):
    """The worker's plan as the parent sends it: read by a thread, so the parent never waits for a worker busy
    decoding (or blocked sending to the parent, which is still planning). `planned()` is called at its end."""
    chunks: queue.Queue = queue.Queue()

    def receive():
        try:
            while True:
                (size,) = SIZE.unpack(read_exact(fd, SIZE.size))
                if not size:
                    break
                chunks.put(read_exact(fd, size))
            if planned is not None:
                planned()
        except (EOFError, OSError):             # the parent is gone
            os._exit(0)
        chunks.put(None)
    threading.Thread(target=receive, daemon=True).start()
    while True:
        data = chunks.get()
        if data is None:
            return
        entries = array("q")
        entries.frombytes(data)
        yield entries


def widen(fd: int) -> None:
    """A pipe that holds a chunk of output (or a worker's whole plan) in one write: fewer wake-ups either side."""
    import fcntl
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, AttributeError):       # over the user's pipe quota, or not Linux: the default size
        pass
