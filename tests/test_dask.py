"""--dask for real: Dask's own `dask scheduler` and two `dask worker` processes on 127.0.0.1 (free ports, bounded
waits, always torn down); statistics and -T fields from the cluster against the local run of the same set."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CAPTURES_DIR, PROTODUMP

distributed = pytest.importorskip("distributed")

DASK = str(Path(sys.executable).parent / "dask")
if not Path(DASK).exists():
    DASK = shutil.which("dask")

SET = ["blank-2015.pcap", "blank-sequence.pcap", "blank-server-session.pcap", "iceball-enet-session.pcap",
       "iceball-tcp-session.pcap", "rutentoy-login-texture.pcap", "freeblox-session.pcap"]
STATS = ["io,phs", "conv,udp", "conv,tcp", "endpoints,ip", "io,stat,60", "expert", "blank,types", "blank,seq",
         "iceball,types", "enet,types", "enet,peers", "iceball,files", "rutentoy,objects", "freeblox,assets", "players",
         "icmp,srt", "sctp,stat"]
FIELDS = ["-T", "fields", "-E", "header=y", "-e", "frame.number", "-e", "frame.len", "-e", "ip.src",
          "-e", "udp.srcport", "-e", "blank.seq", "-e", "blank.type", "-e", "iceball.id", "-e", "enet.command.type"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(*args, timeout=240):
    return subprocess.run([*PROTODUMP, *map(str, args)], cwd=CAPTURES_DIR, capture_output=True, text=True,
                          timeout=timeout)


class Cluster:
    """A scheduler and workers started with Dask's CLI; workers without a nanny, so a killed one stays dead."""

    def __init__(self, workers=2):
        if DASK is None:
            pytest.skip("the dask command is not installed")
        self.procs = []
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
        self.procs.append(subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                            "--no-dashboard"], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, env=env))
        for _ in range(workers):
            self.procs.append(subprocess.Popen([DASK, "worker", self.address, "--host", "127.0.0.1",
                                                "--nthreads", "1", "--no-nanny", "--no-dashboard"],
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        self.client = distributed.Client(self.address, timeout=30)
        self.client.wait_for_workers(workers, timeout=60)

    def close(self):
        try:
            self.client.close()
        finally:
            for p in reversed(self.procs):
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in self.procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def local_stats():
    return {z: run("-q", "-z", z, *SET) for z in STATS}


@pytest.mark.parametrize("stat", STATS)
def test_statistics_from_the_cluster_equal_the_local_run(cluster, local_stats, stat):
    got = run("--dask", cluster.address, "-q", "-z", stat, *SET)
    want = local_stats[stat]
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert len(got.stdout.splitlines()) > 5


def test_fields_and_filter_from_the_cluster(cluster):
    for extra in ((), ("-Y", "blank || iceball"), ("-c", "700")):
        want = run(*FIELDS, *extra, *SET)
        got = run("--dask", cluster.address, *FIELDS, *extra, *SET)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want.stdout
        assert len(got.stdout.splitlines()) > 500


def test_local_cluster_and_one_file():
    one = "iceball-enet-session.pcap"
    args = ("-z", "io,phs", "-z", "iceball,types", *FIELDS)
    assert run("--dask", *args, one).stdout == run(*args, one).stdout
    got = run("--dask", "local", "-q", "-z", "conv,udp", "-z", "blank,seq", *SET[:3])
    assert got.returncode == 0, got.stderr
    assert got.stdout == run("-q", "-z", "conv,udp", "-z", "blank,seq", *SET[:3]).stdout


def test_unreachable_scheduler_is_one_line():
    started = time.monotonic()
    got = run("--dask", f"tcp://127.0.0.1:{free_port()}", "-q", "-z", "io,phs", SET[0], timeout=60)
    assert got.returncode == 2
    assert len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert "cannot reach the Dask scheduler" in got.stderr
    assert time.monotonic() - started < 30


def _big_set(folder: Path, files=2, rounds=25) -> list[Path]:
    """Files of the real blank session replayed `rounds` times each, every file on client ports of its own."""
    import dpkt
    with open(CAPTURES_DIR / "blank-server-session.pcap", "rb") as f:
        frames = list(dpkt.pcap.Reader(f))
    span = frames[-1][0] - frames[0][0] + 1
    out = []
    for k in range(files):
        path = folder / f"big-{k}.pcap"
        with open(path, "wb") as f:
            w = dpkt.pcap.Writer(f)
            for r in range(rounds):
                port = (40000 + k * 100 + r).to_bytes(2, "big")
                for ts, data in frames:
                    data = bytearray(data)
                    if data[34:36] == (35367).to_bytes(2, "big"):
                        data[34:36] = port
                    if data[36:38] == (35367).to_bytes(2, "big"):
                        data[36:38] = port
                    w.writepkt(bytes(data), ts + r * span)
        out.append(path)
    return out


def test_a_worker_that_dies_fails_the_run_naming_the_shard(tmp_path):
    files = _big_set(tmp_path)
    c = Cluster()
    try:
        proc = subprocess.Popen([*PROTODUMP, "--dask", c.address, "-q", "-z", "io,phs", *map(str, files)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pids = c.client.run(os.getpid)
        victim = None
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline and proc.poll() is None:
            for worker, keys in c.client.processing().items():
                if any("shard" in str(k) for k in keys):
                    victim = worker
            time.sleep(0.05)
        assert victim is not None, "no worker took a shard"
        os.kill(pids[victim], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, err
        assert "shard" in err and "big-" in err, err
        assert "died" in err or "KilledWorker" in err, err
        assert "Traceback" not in err
        assert out == ""
    finally:
        if proc.poll() is None:
            proc.kill()
        c.close()


def test_interleaved_files_keep_first_seen_order(cluster, tmp_path):
    """Three files of equal traffic at the same instants (ties everywhere): every table's order is the set's."""
    files = _big_set(tmp_path, files=3, rounds=1)
    for stat in ("conv,udp", "endpoints,udp", "io,phs", "expert", "blank,types", "blank,seq", "io,stat,2"):
        want = run("-q", "-z", stat, *files)
        got = run("--dask", cluster.address, "-q", "-z", stat, *files)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want.stdout, stat
    fields = ("-T", "fields", "-e", "frame.number", "-e", "udp.srcport", "-e", "blank.seq")
    assert run("--dask", cluster.address, *fields, *files).stdout == run(*fields, *files).stdout


def test_echo_times_and_sctp_chunks_from_the_cluster(cluster, tmp_path):
    """A set of ICMP and ICMPv6 echoes (answered, lost, answered twice, answered before the request), SCTP and
    TCP: the cluster's icmp,srt, icmpv6,srt and sctp,stat are the local run's."""
    from scapy.all import wrpcap
    from test_stats_taps import _pings
    wrpcap(str(tmp_path / "ping.pcap"), _pings(False, 5, 60))
    wrpcap(str(tmp_path / "ping6.pcap"), _pings(True, 6, 40))
    files = [tmp_path / "ping.pcap", tmp_path / "ping6.pcap", CAPTURES_DIR / "rutentoy-sctp.pcap",
             CAPTURES_DIR / "rutentoy-login-texture.pcap"]
    for stat in ("icmp,srt", "icmpv6,srt", "sctp,stat"):
        want = run("-q", "-z", stat, *files)
        got = run("--dask", cluster.address, "-q", "-z", stat, *files)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want.stdout, stat
        assert "Requests" in got.stdout or "|29778|" in got.stdout


@pytest.mark.parametrize("stat, why", [("plen,tree", "cannot be merged across shards"),
                                       ("proto,colinfo,udp,udp.port", "writes the Info column")])
def test_statistics_that_cannot_run_on_shards_are_refused_before_any_work(cluster, stat, why):
    got = run("--dask", cluster.address, "-q", "-z", stat, *SET[:3], timeout=120)
    assert got.returncode == 2 and got.stdout == ""
    assert f"-z {stat}: " in got.stderr and why in got.stderr and "without --dask" in got.stderr


def test_one_file_splits_into_conversations(cluster, tmp_path):
    """One file of three conversations: on two workers it is cut into shards of whole conversations, and the
    statistics and fields are still the local run's."""
    from protodump.capture.files import open_capture
    from protodump.planning import conversation
    from protodump.shards import plan
    (one,) = _big_set(tmp_path, files=1, rounds=3)
    frames = list(open_capture(one))
    shards = plan(one, split=2)
    assert len(shards) == 2
    picked = sorted(i for s in shards for i in s.picks[0])
    assert picked == list(range(len(frames)))               # every frame once
    keys = [{conversation(frames[i]) for i in s.picks[0]} - {None} for s in shards]
    assert keys[0] and keys[1] and not keys[0] & keys[1]     # whole conversations
    for stat in ("conv,udp", "io,phs", "expert", "blank,types", "blank,seq", "io,stat,1"):
        want = run("-q", "-z", stat, one)
        got = run("--dask", cluster.address, "-q", "-z", stat, one)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want.stdout, stat
    fields = ("-T", "fields", "-e", "frame.number", "-e", "udp.srcport", "-e", "blank.seq", "-e", "blank.type")
    assert run("--dask", cluster.address, *fields, one).stdout == run(*fields, one).stdout


def test_unreadable_files_of_a_set_on_the_cluster(cluster, tmp_path):
    data = (CAPTURES_DIR / "blank-server-session.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:len(data) // 2 + 7])
    junk = tmp_path / "junk.pcap"
    junk.write_text("not a capture\n")
    got = run("--dask", cluster.address, "-T", "fields", "-e", "frame.number", cut, junk, SET[0])
    want = run("-T", "fields", "-e", "frame.number", cut, junk, SET[0])
    assert got.returncode == want.returncode == 2
    assert got.stdout == want.stdout and len(got.stdout.split()) == 814 + 12
    assert sorted(got.stderr.splitlines()) == sorted(want.stderr.splitlines())
    assert len(got.stderr.splitlines()) == 2


def test_shards_in_threads_of_one_worker_merge_the_same():
    """`dask worker --nthreads N` runs N shards in one process at once: the first-seen bookkeeping is per thread."""
    from concurrent.futures import ThreadPoolExecutor

    from protodump.shards import Job, merge_lines, plan, run_shard
    from protodump.tap_merge import merge_taps
    files = [CAPTURES_DIR / f for f in SET]
    job = Job(stats=("io,phs", "conv,tcp", "conv,udp", "expert", "endpoints,ip", "blank,types"),
              fields=("frame.number", "ip.src", "blank.seq"))
    shards = plan(files)
    assert len(shards) >= 4
    one_by_one = [run_shard(s, job) for s in shards]
    with ThreadPoolExecutor(4) as pool:
        at_once = list(pool.map(lambda s: run_shard(s, job), shards))
    assert merge_taps(job.stats, at_once) == merge_taps(job.stats, one_by_one)
    assert merge_lines(at_once) == merge_lines(one_by_one)


def test_dask_followed_by_a_file_is_a_clear_usage_error():
    got = run("-q", "-z", "io,phs", "--dask", SET[0], timeout=60)
    assert got.returncode == 2
    assert f"--dask local {SET[0]}" in got.stderr


IO_FUNCTIONS = "io,stat,2,COUNT(blank.seq)blank,SUM(udp.length)udp,MIN(udp.length),MAX(frame.time_delta)," \
               "AVG(udp.length),LOAD(frame.time_delta),MIN(frame.time_delta)udp,AVG(frame.time_delta),,udp"
NAMED = ("-Y", "udp.length || frame.time_delta || blank.seq")      # tshark fills a function's field only then


def test_io_stat_functions_merge_as_the_local_run(cluster, tmp_path):
    """COUNT SUM MIN MAX AVG LOAD columns, computed per shard and merged (api/shards.py, IoFunction.merge), equal
    the local run: over the files of a set and over one file cut into conversations, on the cluster and with
    -j 2 (the same merge). MIN is the subtle one: it starts from the interval's first frame, whichever shard had
    it."""
    files = _big_set(tmp_path, files=2, rounds=2)
    (tmp_path / "one").mkdir()
    (one,) = _big_set(tmp_path / "one", files=1, rounds=3)
    for interval in ("2", "0.5", "0"):
        z = IO_FUNCTIONS.replace("io,stat,2,", f"io,stat,{interval},")
        for inputs in (files, [one]):
            want = run("-q", *NAMED, "-z", z, *inputs)
            assert want.returncode == 0, want.stderr
            assert "| MIN |" in want.stdout and want.stdout.count("|") > 60
            got = run("--dask", cluster.address, "-q", *NAMED, "-z", z, *inputs)
            assert got.returncode == 0, got.stderr
            assert got.stdout == want.stdout, (interval, inputs)
        jobs = run("-j", "2", "-q", *NAMED, "-z", z, one)        # -j: the same merge
        assert jobs.returncode == 0 and jobs.stderr == "", jobs.stderr
        assert jobs.stdout == run("-q", *NAMED, "-z", z, one).stdout, interval
    # the times these columns read: each shard's frames know the set's first frame and their previous frame
    times = ("-T", "fields", "-e", "frame.number", "-e", "frame.time_delta", "-e", "frame.time_relative")
    for inputs in (files, [one]):
        assert run("--dask", cluster.address, *times, *inputs).stdout == run(*times, *inputs).stdout
