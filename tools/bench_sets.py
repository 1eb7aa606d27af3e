#!/usr/bin/env python3
"""A capture set through Dask vs one process, in one run (wall clock, output to /dev/null).

    python tools/bench_sets.py [--files 4] [--repeat 10] [--file captures/iceball-enet-session.pcap] [-n 1]

The set: FILES pcaps, each the real capture replayed REPEAT times, every round and file on addresses of its
own (tools/bench.py's _moved), so the files share no conversation and each file is a shard. Timed, per job:
one process; `--dask local` (a LocalCluster of 2 single-threaded workers, its start-up included); and
`--dask ADDRESS` to a `dask scheduler` with two `dask worker`s started beforehand (start-up excluded).
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import dpkt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import _moved, protodump_cmd, time_cmd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
JOBS = {
    "stats": ["-q", "-z", "io,phs", "-z", "conv,udp", "-z", "iceball,types", "-z", "enet,types"],
    "fields": ["-T", "fields", "-e", "frame.number", "-e", "ip.src", "-e", "udp.srcport", "-e", "iceball.id",
               "-e", "enet.command.type"],
}


def build_set(source: Path, files: int, repeat: int) -> list[Path]:
    with open(source, "rb") as f:
        frames = list(dpkt.pcap.Reader(f))
    span = frames[-1][0] - frames[0][0] + 1
    folder = Path("/tmp/bench") / f"set-{source.stem}-{files}x{repeat}"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for n in range(files):
        path = folder / f"part-{n}.pcap"
        out.append(path)
        if path.exists():
            continue
        with open(path, "wb") as f:
            w = dpkt.pcap.Writer(f)
            for r in range(repeat):
                k = n * repeat + r + 1
                for ts, buf in frames:
                    w.writepkt(_moved(buf, k), ts + r * span)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cluster():
    dask = str(Path(sys.executable).parent / "dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for _ in range(2):
        procs.append(subprocess.Popen([dask, "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                                       "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    from distributed import Client
    with Client(address, timeout=30) as client:
        client.wait_for_workers(2, timeout=60)
    return address, procs


def measure_parts(parts) -> None:
    """What the client pays before any worker starts (planning: one pass over the frame headers) and what a
    shard sends back (pickled), per job."""
    import pickle
    from protodump.shards import Job, plan, run_shard
    t0 = time.perf_counter()
    shards = plan(parts)
    planned = time.perf_counter() - t0
    print(f"planning {len(shards)} shards: {planned:.2f} s")
    for name, job in (("stats", Job(stats=tuple(JOBS["stats"][2::2]))),
                      ("fields", Job(fields=tuple(JOBS["fields"][3::2])))):
        t0 = time.perf_counter()
        result = run_shard(shards[0], job)
        took = time.perf_counter() - t0
        t0 = time.perf_counter()
        size = len(pickle.dumps(result))
        print(f"one shard, {name}: {result.frames} frames decoded in {took:.2f} s; result {size / 1024:.0f} KiB "
              f"pickled in {(time.perf_counter() - t0) * 1000:.1f} ms")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, default=ROOT / "captures" / "iceball-enet-session.pcap")
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("-n", "--runs", type=int, default=1)
    args = ap.parse_args(argv)
    parts = [str(p) for p in build_set(args.file, args.files, args.repeat)]
    frames = sum(1 for p in parts for _ in dpkt.pcap.Reader(open(p, "rb")))
    print(f"set: {args.files} files x {args.repeat} rounds of {args.file.name}, {frames} frames; "
          f"{os.cpu_count()} cores")
    measure_parts(parts)
    address, procs = start_cluster()
    try:
        cmd = protodump_cmd()
        print("| job | one process | --dask local (start-up included) | --dask to running workers |")
        print("|---|---|---|---|")
        for name, job in JOBS.items():
            one, _, _, _ = time_cmd([*cmd, *job, *parts], args.runs)
            local, _, _, _ = time_cmd([*cmd, "--dask", "local", *job, *parts], args.runs)
            remote, _, _, _ = time_cmd([*cmd, "--dask", address, *job, *parts], args.runs)
            print(f"| {name} | {one:.2f} s | {local:.2f} s ({one / local:.2f}x) | {remote:.2f} s "
                  f"({one / remote:.2f}x) |")
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
