"""-j N's parent process (api/jobs.py decides that a run is shared out and plans its first look): it forks the
workers, streams the rest of the plan to them as it is made, and merges what they send (api/jobs_merge.py). Its
own module so that a run that is not shared out (a small file, -j 1) does not import the pipes, the worker and the
merge at start-up."""
from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from .jobs_merge import Merger, WorkerDied
from .jobs_pipes import SIZE, Inbox, send_all, widen
from .jobs_worker import worker

if TYPE_CHECKING:
    from .jobs import Run

MOST = 0.85                    # a plan whose largest shard has more of the frames than this: one process
ONE = "one conversation has most frames"


def one_process(planner, numbers) -> str | None:
    """Why the plan so far says one process should read the file (None: share it out)."""
    if numbers.unsplittable:
        return numbers.unsplittable
    frames = planner.frames
    if sum(1 for n in frames if n) < 2 or max(frames) > MOST * planner.n:
        return ONE
    return None


def say(jobs: int, what: str) -> None:
    if os.environ.get("PROTODUMP_JOBS_VERBOSE"):        # what the tests check
        print(f"protodump: -j {jobs}: {what}", file=sys.stderr)


class Parent(Merger):
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
            why = one_process(planner, self.numbers) if self.numbers.unsplittable else None
            if why is not None:
                self._stop()
                say(self.jobs, f"one process ({why})")
                return False
            say(self.jobs, ", ".join(f"shard {k}: {n} frames" for k, n in enumerate(planner.frames)))
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
