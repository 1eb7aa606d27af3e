"""-j N: one capture decoded by N processes, conversation by conversation, merged back in frame order.

Everything protodump keeps state for lives in a conversation, so a file is shared out by whole conversations, each
worker (a forked process) decoding its own. What tshark numbers across conversations in frame order is decided
once, by the planning pass over the frame headers (api/planning.py `Planner`): `tcp.stream`/`udp.stream`
(planning.StreamNumbers; the workers' TCP and UDP tables take each frame's number from the plan instead of counting),
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

Statistics are each worker's tap state, merged as for --dask (api/tap_merge.py). The byte budgets
(reassembly/budget.py) are shared: each worker holds 1/N. Whatever cannot be cut this way runs in one process,
silently: -2, live capture, standard input, capture sets, follow and other statistics that do not merge,
--export-objects, a terminal (colours) or -l, a filter that reads the displayed delta itself, `-T ek` and `-T pdml`
(the plugin's fake items follow the heuristic lists' order, which every earlier frame moves; the JSON forms' fake
items are recounted by the parent from the workers' lookups: output/lua_fakes.py), and a capture of one
conversation (nothing to share out).

Standard library only (multiprocessing with fork: the workers inherit the parsed options, filter and taps).
Here: whether a run is shared out and the plan's first look. The fork and the plan streamed to the workers:
api/jobs_parent.py; the workers' tables numbered by the plan: api/planned.py; a worker: api/jobs_worker.py; the
pipes between the processes and their messages: api/jobs_pipes.py; receiving and merging the output:
api/jobs_merge.py.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .capture.files import CaptureError

AUTO_MIN_BYTES = 4 << 20       # without -j: smaller files are read in one process (forking costs more)
MAX_JOBS = 255                 # (a frame's shard is a byte)
LOOK = 512                     # frames planned before forking: one process when one conversation has most of them
                               # (a small look: it is all the parent's time before the workers start)
LOOK_SHARE = 20                # ... and so far, up to a twentieth of the file
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
    from .tap_merge import MERGES, merge_family
    try:
        return any(merge_family(stats.make_tap(arg)) not in MERGES for arg in zstats)
    except stats.StatsError:
        return True


def run(jobs: int, run: Run, explicit: bool) -> bool:
    """Run the command on `jobs` processes; False (nothing done) when one process should run it: under the
    default -j a small file or a run of the standard layers alone (-q with their statistics, or only -w), or a
    capture whose conversations cannot be shared out.

    The plan's first LOOK frames are planned before forking: when one shard would have most of them (one
    conversation), or what one process numbers cannot be planned, one process reads the file, at the cost of
    that look only. The workers then start on the first chunk while the parent plans the rest (api/planning.py
    Planner), a chunk at a time, and sends each its frames' places, so a worker seeks to its own frames."""
    if not explicit and (run.dispatcher.standard_only or os.path.getsize(run.path) < AUTO_MIN_BYTES):
        return False          # (standard layers only: planning a frame costs about what decoding it does)
    from .jobs_parent import ONE, Parent, one_process, say    # (only now: a small file's start-up skips them)
    from .planning import Planner, StreamNumbers
    numbers = StreamNumbers(None if run.dispatcher.standard_only else run.dispatcher.lifetimes)
    try:
        planner = Planner(run.path, min(jobs, MAX_JOBS), streams=numbers, count=run.count, offsets=True)
    except (CaptureError, OSError):
        return False
    look, chunk = LOOK, CHUNK_PLAN
    if os.environ.get("PROTODUMP_JOBS_PLAN"):          # "LOOK,CHUNK": the tests' small chunks
        look, chunk = map(int, os.environ["PROTODUMP_JOBS_PLAN"].split(","))
    first = planner.step(look)
    why = one_process(planner, numbers)
    size = os.path.getsize(run.path)
    while why == ONE and not planner.done and planner.position * LOOK_SHARE < size:
        # one conversation so far: look on, up to a share of the file, before saying so (a capture may start
        # with one session before the others join)
        first = [a + b for a, b in zip(first, planner.step(look))]
        why = one_process(planner, numbers)
    if why is not None:
        planner.close()
        say(jobs, f"one process ({why})")
        return False
    if not Parent(run, planner, numbers, jobs, chunk).go(first):
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
