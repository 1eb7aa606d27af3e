"""-j N: one capture decoded by N processes, conversation by conversation, merged back in frame order.

Everything protodump keeps state for lives in a conversation, so a file is shared out by whole conversations, each
worker (a forked process) decoding its own. What tshark numbers across conversations in frame order is decided
once, by the planning pass over the frame headers (api/shards.py `Planner`): `tcp.stream`/`udp.stream`
(shards.StreamNumbers; the workers' TCP and UDP tables take each frame's number from the plan instead of counting),
the previous captured frame's time, and the capture's first frame. The previous *displayed* frame depends on the
other shards' display decisions when a display filter is on: the worker then renders `frame.time_delta_displayed`
(and `-t dd`) as a marker value that the parent, which sees every displayed frame in order, replaces.

The plan is streamed: the first LOOK frames are planned before forking (one process when one conversation has
most of them, and still has up to a twentieth of the file: a capture of one conversation costs that look only);
the workers then start on them while the parent plans the rest a chunk at a time and sends each worker its frames
(number, byte offset, stream number, previous frame's time): a worker seeks to its own frames, reading no other
(pcapng: and the section headers and interface descriptions it needs; gzip cannot be sought: read through). If
the plan later finds that one process must read the file (time running back, too many live conversations), the
workers are stopped before anything is written.

Moving results: plain pipes (widened to 256 KB), length-prefixed. A worker sends, per chunk of frames (about
256 KB), each frame's end offset and time (NO_TIME: not displayed) and the frames' output as encoded bytes, never
packet trees (lazily built, sharing frozen subtrees and memos: they are the worker's), written with writev from a
sender thread so the worker goes on decoding: up to 64 MB ahead while the parent plans (it merges only once the
whole plan says the file can be shared out), 4 MB after (what is sent soon after it is made is still in the
cache). The parent reads each chunk's frame ends and times into a buffer of its own per worker (no pickling), and
as it knows from the plan which worker owns each frame, it moves a run of one worker's consecutive frames from that
worker's pipe to the output with splice(2), never through its own memory (read and written where the output takes
no splice; frame by frame, the chunk read whole, under -Y or -w). Measured on 20,000 frames of -T json
(45 MB): the parent's merge takes 0.06 s of CPU. Writers need no change: a worker's writer renders its first
displayed frame twice (the first rendering has the writer's header: "[", the fields header, the PSML preamble), and
the parent uses that one only for the frame displayed first overall; the trailer is the one of a worker that wrote.

Statistics are each worker's tap state, merged as for --dask (shards.merge_taps). The byte budgets
(reassembly/budget.py) are shared: each worker holds 1/N. Whatever cannot be cut this way runs in one process,
silently: -2, live capture, standard input, capture sets, follow and other statistics that do not merge,
--export-objects, a terminal (colours) or -l, a filter that reads the displayed delta itself, `-T ek` and `-T pdml`
(the plugin's fake items follow the heuristic lists' order, which every earlier frame moves; the JSON forms' fake
items are recounted by the parent from the workers' lookups: output/lua_fakes.py), and a capture of one
conversation (nothing to share out).

Standard library only (multiprocessing with fork: the workers inherit the parsed options, filter and taps).
Here: whether a run is shared out, the plan's first look, the fork and the plan streamed to the workers. The
workers' tables numbered by the plan: api/planned.py; a worker: api/jobs_worker.py; the pipes between the
processes and their messages: api/jobs_pipes.py; receiving and merging the output: api/jobs_merge.py.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

from .capture.files import CaptureError
from .jobs_merge import Merger, WorkerDied
from .jobs_pipes import SIZE, Inbox, send_all, widen
from .jobs_worker import worker

AUTO_MIN_BYTES = 4 << 20       # without -j: smaller files are read in one process (forking costs more)
MOST = 0.85                    # a plan whose largest shard has more of the frames than this: one process
MAX_JOBS = 255                 # (a frame's shard is a byte)
LOOK = 512                     # frames planned before forking: one process when one conversation has most of them
                               # (a small look: it is all the parent's time before the workers start)
LOOK_SHARE = 20                # ... and so far, up to a twentieth of the file
ONE = "one conversation has most frames"
CHUNK_PLAN = 2048              # then the plan is sent to the workers in chunks of this many frames


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:      # not Linux
        return max(1, os.cpu_count() or 1)


# --- the run --------------------------------------------------------------------------------------------------

@dataclass
class Run:
    """What one read command does, as read_cmd set it up (inherited by the forked workers as is)."""

    path: str
    make_writer: object            # out -> a fresh writer of the command's output form (the command's own writer,
                                   # already made on stdout, wrote what a writer writes when made)
    dispatcher: object
    shows: object = None           # -Y, compiled
    quiet: bool = False
    count: int | None = None
    taps: list = field(default_factory=list)
    zstats: tuple = ()
    source: object = None          # cli.capture_opts.CaptureSource (-w)
    stats_format: str = "text"


def unsplittable(jobs, path, *, two_pass=False, live=False, exporter=None, line_buffered=False,
                 display_filter=None, zstats=(), write_path=None, fake_items=False) -> bool:
    """Modes that one process must run (see the module docstring). fake_items: the output shows the plugin's
    `_ws.lua.fake` items (EK, PDML), whose number on a conversation's first packet follows the order Wireshark's
    heuristic lists took from every earlier frame (a heuristic that wins moves to the front), which no worker sees."""
    if jobs <= 1 or two_pass or live or exporter is not None or line_buffered or fake_items:
        return True
    if not isinstance(path, str) or path == "-" or not os.path.isfile(path) or write_path == "-":
        return True
    if sys.stdout.isatty():
        return True
    if any("time_delta_displayed" in (text or "") for text in (display_filter, *zstats)):
        return True
    if not zstats:
        return False
    from .analysis import stats          # (only then: its modules are a twentieth of the start-up)
    from .shards import _family, MERGES
    try:
        return any(_family(stats.make_tap(arg)) not in MERGES for arg in zstats)
    except stats.StatsError:
        return True


def run(jobs: int, run: Run, explicit: bool) -> bool:
    """Run the command on `jobs` processes; False (nothing done) when one process should run it: a small file
    under the default -j, or a capture whose conversations cannot be shared out.

    The plan's first LOOK frames are planned before forking: when one shard would have most of them (one
    conversation), or what one process numbers cannot be planned, one process reads the file, at the cost of
    that look only. The workers then start on the first chunk while the parent plans the rest (api/shards.py
    Planner), a chunk at a time, and sends each its frames' places, so a worker seeks to its own frames."""
    if not explicit and os.path.getsize(run.path) < AUTO_MIN_BYTES:
        return False
    from .shards import Planner, StreamNumbers
    numbers = StreamNumbers(None if run.dispatcher.standard_only else run.dispatcher.lifetimes)
    try:
        planner = Planner(run.path, min(jobs, MAX_JOBS), streams=numbers, count=run.count, offsets=True)
    except (CaptureError, OSError):
        return False
    look, chunk = LOOK, CHUNK_PLAN
    if os.environ.get("PROTODUMP_JOBS_PLAN"):          # "LOOK,CHUNK": the tests' small chunks
        look, chunk = map(int, os.environ["PROTODUMP_JOBS_PLAN"].split(","))
    first = planner.step(look)
    why = _one_process(planner, numbers)
    size = os.path.getsize(run.path)
    while why == ONE and not planner.done and planner.position * LOOK_SHARE < size:
        # one conversation so far: look on, up to a share of the file, before saying so (a capture may start
        # with one session before the others join)
        first = [a + b for a, b in zip(first, planner.step(look))]
        why = _one_process(planner, numbers)
    if why is not None:
        planner.close()
        _say(jobs, f"one process ({why})")
        return False
    if not _Parent(run, planner, numbers, jobs, chunk).go(first):
        return False
    _exit_now()
    return True


def _exit_now() -> None:
    """The run is over and written: end the process without the interpreter's teardown (freeing every module
    and object: about 0.03 s, a tenth of what -j 2 adds to the work of one process). The exit handlers still
    run (multiprocessing's: the workers are joined already). Only when this process is the protodump program
    itself, never in a caller's (a test's CliRunner or capture swaps the standard streams)."""
    import atexit
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None or sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__:
        return
    sys.stdout.flush()              # (a closed reader: BrokenPipeError, handled by the command as ever)
    sys.stderr.flush()
    run_handlers()
    os._exit(0)


def _one_process(planner, numbers) -> str | None:
    """Why the plan so far says one process should read the file (None: share it out)."""
    if numbers.unsplittable:
        return numbers.unsplittable
    frames = planner.frames
    if sum(1 for n in frames if n) < 2 or max(frames) > MOST * planner.n:
        return ONE
    return None


def _say(jobs: int, what: str) -> None:
    if os.environ.get("PROTODUMP_JOBS_VERBOSE"):        # what the tests check
        print(f"protodump: -j {jobs}: {what}", file=sys.stderr)


class _Parent(Merger):
    """Forks the workers and sends them the plan as it is made; then merges what they send (Merger)."""

    def __init__(self, run: Run, planner, numbers, jobs: int, chunk: int):
        self.run, self.planner, self.numbers, self.jobs = run, planner, numbers, jobs
        self.chunk_frames = chunk          # frames planned per chunk sent
        self.filtering = run.shows is not None
        self.sends_frames = not run.quiet or run.source.write_path is not None

    def go(self, first: list) -> bool:
        """Fork the workers, plan the rest of the file as they decode, merge; False (the workers stopped,
        nothing written) when the plan finds that one process must read the file after all."""
        import gc
        import multiprocessing as mp
        ctx = mp.get_context("fork")
        run, planner = self.run, self.planner
        sys.stdout.flush()
        gc.freeze()                    # the workers' collections leave the parent's objects (and pages) alone
        self.forked_cpu = time.process_time()
        self.procs, self.inboxes, plans = [], [], []
        ran = False
        try:
            for k in range(planner.parts):
                out_r, out_w = os.pipe()
                plan_r, plan_w = os.pipe()
                for fd in (out_r, plan_w):
                    widen(fd)
                # the worker closes what it inherits of the other workers' pipes (else a dead peer's pipe stays open)
                theirs = [i.fd for i in self.inboxes] + plans + [out_r, plan_w]
                p = ctx.Process(target=worker, args=(run, k, planner.parts, planner.first_ns, planner.seekable,
                                                      plan_r, out_w, self.filtering, theirs), daemon=True,
                                name=f"protodump-shard-{k}")
                p.start()
                os.close(out_w)
                os.close(plan_r)
                self.procs.append(p)
                self.inboxes.append(Inbox(out_r))
                plans.append(plan_w)
            self._plan(plans, first)
            self.planned_cpu = time.process_time()
            why = _one_process(planner, self.numbers) if self.numbers.unsplittable else None
            if why is not None:
                self._stop()
                _say(self.jobs, f"one process ({why})")
                return False
            _say(self.jobs, ", ".join(f"shard {k}: {n} frames" for k, n in enumerate(planner.frames)))
            self.owner, self.total, self.error = planner.owner, planner.n, planner.error
            ran = True
            run.source._open_dump(None, None)          # -w: opened as the one-process path opens it
            self._merge()
        except WorkerDied as exc:
            sys.stdout.flush()
            print(f"protodump: -j: {exc}", file=sys.stderr)
            sys.exit(2)
        finally:
            gc.unfreeze()
            planner.close()
            self._stop()
            for inbox in self.inboxes:
                os.close(inbox.fd)
            if ran:                                     # (else the one-process path runs with it)
                run.source.finish()
        return True

    def _plan(self, plans: list, chunk: list) -> None:
        """Send each worker its frames, a chunk of the plan at a time (a worker that died is found by the merge)."""
        planner = self.planner
        live = list(plans)
        while chunk is not None:
            for k, entries in enumerate(chunk):
                if entries and live[k] is not None:
                    try:
                        send_all(live[k], [SIZE.pack(len(entries) * entries.itemsize), entries])
                    except OSError:
                        live[k] = None
            if self.numbers.unsplittable:
                break
            chunk = planner.step(self.chunk_frames)
        for fd in plans:
            try:
                send_all(fd, [SIZE.pack(0)])               # the end of the plan
            except OSError:
                pass
            os.close(fd)

    def _stop(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.kill()
            p.join()
        self.procs = []
