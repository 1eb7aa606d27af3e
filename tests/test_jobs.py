"""-j N: a capture decoded by several processes prints exactly what one process prints (api/jobs.py).

Real processes throughout: the CLI run as a subprocess, its workers forked, one of them killed with SIGKILL.
Two captures: the bundled captures merged in time order into one file (every protocol, 37 conversations, TCP
ports reused after FIN both ways, SCTP, bad packets), and a replay of many interleaved conversations
(tools/replay.py).
PROTODUMP_JOBS_VERBOSE makes the run say how it was shared out, so each test knows it ran on several processes."""
from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CAPTURES_DIR, PROTODUMP

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import replay  # noqa: E402

ENV = {**os.environ, "PROTODUMP_JOBS_VERBOSE": "1"}


def run(*args, jobs=2, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([*PROTODUMP, "--jobs", str(jobs), *map(str, args)], capture_output=True, timeout=300,
                          env=ENV, stdin=stdin)


def same(*args, split=True, env=ENV):
    """-j 2 and -j 1: the same bytes on stdout and stderr, the same exit code; -j 2 ran on two processes (EK and
    PDML: on one, api.jobs.unsplittable's fake items)."""
    if split and any(a in ("ek", "pdml") for a in args):
        split = False
    one = run(*args, jobs=1)
    two = subprocess.run([*PROTODUMP, "--jobs", "2", *map(str, args)], capture_output=True, timeout=300, env=env)
    said = two.stderr.decode()
    assert split is None or ("shard 1:" in said) == split, said
    lines = [line for line in said.splitlines(keepends=True)
             if not line.startswith(("protodump: -j 2:", "protodump: -j cpu:"))]
    assert two.stdout == one.stdout
    assert "".join(lines) == one.stderr.decode()
    assert two.returncode == one.returncode
    return one


@pytest.fixture(scope="module")
def bundled(tmp_path_factory) -> Path:
    """The bundled captures but the two long sessions (replayed in `many`), merged in time order as one pcapng."""
    path = tmp_path_factory.mktemp("jobs") / "all.pcapng"
    files = sorted(str(p) for p in CAPTURES_DIR.glob("*.pcap") if "-session" not in p.name or "tcp" in p.name)
    subprocess.run([*PROTODUMP, "-w", str(path), *files], check=True, timeout=120)
    return path


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """Interleaved conversations of every family (tools/replay.py)."""
    path = tmp_path_factory.mktemp("jobs") / "many.pcap"
    replay.write(path, "mix", 1500, conversations=12, live=6)
    return path


MODES = [(), ("-V",), ("-x",), ("-T", "json"), ("-T", "ek"), ("-T", "psml"), ("-T", "jsonraw"),
         ("-T", "json", "-x", "-j", "ip tcp udp blank"), ("-O", "tcp,enet"),
         ("-T", "fields", "-e", "frame.number", "-e", "tcp.stream", "-e", "udp.stream", "-e",
          "frame.time_delta_displayed", "-e", "frame.time_delta", "-e", "_ws.col.Time", "-E", "header=y")]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: " ".join(m) or "summary")
def test_every_mode_is_byte_identical_on_the_bundled_captures(bundled, mode):
    out = same(*mode, bundled)
    assert len(out.stdout) > 10_000


def test_minus_j_with_a_number_is_the_process_count(bundled):
    """tshark's -j takes protocols; a number is a process count (-T json -j "ip udp" still filters)."""
    one = subprocess.run([*PROTODUMP, "-j", "1", "-T", "json", bundled], capture_output=True, timeout=300)
    two = subprocess.run([*PROTODUMP, "-j", "2", "-T", "json", bundled], capture_output=True, timeout=300, env=ENV)
    assert "shard 1:" in two.stderr.decode() and two.stdout == one.stdout


@pytest.mark.parametrize("mode", [(), ("-V",), ("-T", "json"), ("-T", "ek"), ("-T", "psml")],
                         ids=lambda m: " ".join(m) or "summary")
def test_every_mode_is_byte_identical_on_many_conversations(many, mode):
    same(*mode, many)


@pytest.fixture(scope="module")
def quoted(many, tmp_path_factory) -> Path:
    """`many` with an ICMP error after every fifth TCP segment or UDP datagram with payload, quoting it (up to
    548 bytes, as Linux does)."""
    import dpkt
    path = tmp_path_factory.mktemp("jobs") / "quoted.pcap"
    with open(many, "rb") as f, open(path, "wb") as out:
        w, n = dpkt.pcap.Writer(out), 0
        for ts, buf in dpkt.pcap.Reader(f):
            w.writepkt(buf, ts)
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, (dpkt.tcp.TCP, dpkt.udp.UDP)) and ip.data.data:
                n += 1
                if n % 5 == 0:
                    udp = isinstance(ip.data, dpkt.udp.UDP)
                    error = dpkt.icmp.ICMP(type=3, code=3 if udp else 4,
                                           data=dpkt.icmp.ICMP.Unreach(mtu=0 if udp else 1400, data=bytes(ip)[:548]))
                    outer = dpkt.ip.IP(src=bytes([10, 9, 9, 9]), dst=ip.src, p=1, ttl=64, data=error)
                    outer.len = 20 + len(bytes(error))
                    w.writepkt(bytes(dpkt.ethernet.Ethernet(src=eth.dst, dst=eth.src, data=outer)), ts + 0.0001)
    return path


@pytest.mark.parametrize("mode", [(), ("-V",), ("-T", "json")], ids=lambda m: " ".join(m) or "summary")
def test_an_icmp_error_goes_with_the_conversation_it_quotes(quoted, mode):
    """The worker that holds a conversation decodes the errors quoting it: one process finds the quoted
    segment's connection there (its completeness, window scale and times; the next segment's time since the
    previous one) and hands a quoted datagram to the conversation's dissector."""
    same(*mode, quoted)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the default -j is one process on one core")
def test_without_j_the_standard_layers_alone_run_in_one_process(tmp_path):
    """Without -j a file over 4 MB is shared out, but not a run of the standard layers alone (-q with their
    statistics): planning a frame costs about what decoding it does. Its output is -j 2's."""
    from protodump.jobs import AUTO_MIN_BYTES
    path = tmp_path / "big.pcap"
    replay.write(path, "mix", 11000, conversations=12, live=6)
    assert path.stat().st_size > AUTO_MIN_BYTES

    def default(*args) -> subprocess.CompletedProcess:
        return subprocess.run([*PROTODUMP, *args, str(path)], capture_output=True, timeout=300, env=ENV, check=True)
    alone = default("-q", "-z", "conv,tcp", "-z", "endpoints,ip")
    assert b"shard" not in alone.stderr and alone.stdout.count(b"<->") > 20
    assert alone.stdout == run("-q", "-z", "conv,tcp", "-z", "endpoints,ip", path).stdout
    assert b"shard 1:" in default("-T", "fields", "-e", "enet.command.type").stderr     # game layers: shared out
    # a few fields the fused machine makes (output/fields_fused.py): one process, the -j 2 lines
    fused = default("-T", "fields", "-e", "frame.number", "-e", "rutentoy.opcode")
    assert b"shard" not in fused.stderr and fused.stdout.count(b"\n") == 11000
    assert fused.stdout == run("-T", "fields", "-e", "frame.number", "-e", "rutentoy.opcode", path).stdout


@pytest.mark.parametrize("mode", [("-T", "json"), ("-T", "jsonraw"), ("-T", "json", "-x", "-Y", "udp || tcp.len > 0")],
                         ids=lambda m: " ".join(m))
def test_fake_items_are_counted_in_frame_order(many, mode):
    """wslua's `_ws.lua.fake` items follow the heuristic lists' order, which every earlier frame moves: each worker
    reports its frames' lookups, the parent replays them in frame order and patches the frames whose count differs
    (output/lua_fakes.py). Three workers on small chunks see other orders than one process on some frames."""
    one = run(*mode, many, jobs=1)
    three = subprocess.run([*PROTODUMP, "--jobs", "3", *mode, str(many)], capture_output=True, timeout=300,
                           env={**ENV, "PROTODUMP_JOBS_PLAN": "64,64"})
    said = three.stderr.decode()
    assert "shard 2:" in said and three.stdout == one.stdout and b'"_ws.lua.fake' in one.stdout
    recounted = re.search(r"-j 3: (\d+) frames' fake items recounted", said)
    assert recounted and (int(recounted.group(1)) > 0 or "-Y" in mode), said


@pytest.mark.parametrize("mode", [(), ("-V",), ("-T", "json"), ("-t", "dd"), ("-T", "ek"),
                                  ("-T", "fields", "-e", "frame.number", "-e", "frame.time_delta_displayed")],
                         ids=lambda m: " ".join(m) or "summary")
def test_a_display_filter_keeps_the_displayed_frames_chain(bundled, mode):
    """frame.time_delta_displayed / -t dd run across shards: the previous displayed frame may be another's."""
    out = same("-Y", "tcp.len > 0 || blank.type == 3 || enet", *mode, bundled)
    assert out.stdout


def test_stream_numbers_agree(bundled):
    """tcp.stream and udp.stream are numbered in frame order over every conversation; the bundled set reuses
    TCP ports after FIN both ways, so a connection is freed and numbered again as in one process."""
    out = same("-T", "fields", "-e", "tcp.stream", "-e", "udp.stream", bundled).stdout.decode()
    tcp = {int(line.split("\t")[0]) for line in out.splitlines() if line.split("\t")[0]}
    udp = {int(line.split("\t")[1]) for line in out.splitlines() if line.split("\t")[1]}
    assert tcp == set(range(len(tcp))) and len(tcp) > 10
    assert udp == set(range(len(udp))) and len(udp) > 5


def test_count_stops_at_the_same_frame(many):
    for n in (1, 37, 700):
        out = same("-c", n, "-T", "fields", "-e", "frame.number", many, split=None if n < 100 else True)
        assert out.stdout.decode().split() == [str(i) for i in range(1, n + 1)]
    same("-c", 400, "-Y", "tcp", "-V", many)


@pytest.mark.parametrize("stats", [("conv,tcp", "conv,udp", "endpoints,ip", "io,phs", "expert"),
                                   ("blank,types", "enet,peers", "iceball,files", "rutentoy,objects",
                                    "freeblox,assets", "players")])
def test_statistics_are_merged(bundled, stats):
    same("-q", *[a for s in stats for a in ("-z", s)], bundled)


@pytest.fixture(scope="module")
def pings_and_bundled(bundled, tmp_path_factory) -> Path:
    """`bundled` (its SCTP association among many conversations) with ICMP and ICMPv6 echoes merged in: answered,
    unanswered, answered twice, a reply before its request (tests/test_stats_taps.py's pings)."""
    from scapy.all import wrpcap
    from test_stats_taps import _pings
    folder = tmp_path_factory.mktemp("jobs")
    wrpcap(str(folder / "ping.pcap"), _pings(False, 5, 60))
    wrpcap(str(folder / "ping6.pcap"), _pings(True, 6, 40))
    path = folder / "pings.pcapng"
    subprocess.run([*PROTODUMP, "-w", str(path), str(bundled), str(folder / "ping.pcap"), str(folder / "ping6.pcap")],
                   check=True, timeout=120, capture_output=True)
    return path


def test_echo_times_sctp_chunks_and_hosts_are_merged(pings_and_bundled):
    """The echoes have no conversation (the first shard takes them, requests and replies together); SCTP's
    directions merge in the order of their first frames."""
    out = same("-q", "-z", "icmp,srt", "-z", "icmpv6,srt", "-z", "sctp,stat", "-z", "hosts", pings_and_bundled)
    text = out.stdout.decode()
    assert "60        48        12" in text and "40        35        5" in text and "|29778|" in text


def test_io_stat_is_merged(many):
    """(On the replay: the bundled captures span months, too many intervals for io,stat.)"""
    same("-z", "io,stat,0.5", "-z", "io,stat,1,tcp,udp", "-z", "conv,tcp", "-T", "fields", "-e", "frame.number",
         many)


def test_io_stat_avg_width_follows_the_running_mean_across_shards(tmp_path):
    """An AVG column is as wide as the largest running mean of any interval, frame by frame (tshark's max_vals):
    here the first datagram's length (4 digits), not the final mean (2 digits). Each conversation is a shard of
    its own and both share the interval, so the merge replays their values in frame order (IoFunction.merge)."""
    import dpkt
    path = tmp_path / "avg.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for n in range(30):
            payload = b"x" * (1000 if n == 0 else 8)
            w.writepkt(replay._udp_frame(payload, "10.0.0.1", "10.0.0.2", 41000 + n % 2, 42000, n), 
                       ts=1000 + n / 100)
    out = same("-q", "-Y", "udp.length", "-z", "io,stat,1,AVG(udp.length)", path)
    assert b"| 0.000 <> 0.290 |   49 |" in out.stdout, out.stdout.decode()


def test_a_worker_keeps_fewer_chunks_ready_once_the_plan_is_done():
    """While the parent plans it merges nothing, so a worker may run far ahead; once the plan has ended (its end
    marker read), the worker keeps only a few chunks ready: they reach the parent still in the cache."""
    from protodump import jobs_pipes as pipes
    sender = pipes.Sender(os.open(os.devnull, os.O_WRONLY))
    r, w = os.pipe()
    try:
        assert sender.queue.maxsize == pipes.QUEUE_PLANNING > pipes.QUEUE_CHUNKS
        os.write(w, struct.pack("<q", 32) + struct.pack("<4q", 1, 24, 0, -1) + struct.pack("<q", 0))
        chunks = list(pipes.plan_chunks(r, sender.planned))
        assert [list(c) for c in chunks] == [[1, 24, 0, -1]]
        assert sender.queue.maxsize == pipes.QUEUE_CHUNKS
    finally:
        sender.close()
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("mode", ["wb", "ab"])
def test_output_to_a_file_and_to_a_file_opened_for_appending(many, tmp_path, mode):
    """The merge moves the workers' bytes to the output with splice(2); a file opened with O_APPEND takes no splice
    on Linux (EINVAL), so those bytes are read and written instead: the same file either way."""
    want = run("-T", "json", many, jobs=1).stdout
    out = tmp_path / "out.json"
    out.write_bytes(b"before\n")
    with open(out, mode) as f:
        got = subprocess.run([*PROTODUMP, "-j", "2", "-T", "json", str(many)], stdout=f, stderr=subprocess.PIPE,
                             timeout=300, env=ENV)
    assert got.returncode == 0 and b"shard 1:" in got.stderr
    assert out.read_bytes() == (b"before\n" if mode == "ab" else b"") + want


def test_write_gives_the_same_file(bundled, tmp_path):
    for jobs in (1, 2):
        done = run("-Y", "tcp || enet", "-w", tmp_path / f"out{jobs}.pcapng", bundled, jobs=jobs)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "out1.pcapng").read_bytes() == (tmp_path / "out2.pcapng").read_bytes()
    assert (tmp_path / "out1.pcapng").stat().st_size > 100_000


def test_a_cut_file_prints_what_was_read_then_the_offset(many, tmp_path):
    cut = tmp_path / "cut.pcap"
    data = many.read_bytes()
    cut.write_bytes(data[:len(data) * 2 // 3])
    out = same("-T", "json", cut)
    assert out.returncode == 1 and b"offset" in out.stderr
    same("-q", "-z", "conv,udp", cut)


def test_time_that_runs_back_is_read_by_one_process(tmp_path):
    """Files one after another whose clocks differ: one process frees an ended conversation only once the
    conversations ended before it (in frame order) are due, which a worker cannot know: one process reads it."""
    path = tmp_path / "cat.pcapng"
    files = [CAPTURES_DIR / f for f in ("freeblox-session.pcap", "rutentoy-sctp.pcap", "iceball-tcp-all.pcap",
                                        "freeblox-plain.pcap")]
    subprocess.run([*PROTODUMP, "--concatenate", "-w", str(path), *map(str, files)], check=True, timeout=120)
    out = run("-V", path)
    assert "one process (time runs back at frame" in out.stderr.decode()
    assert out.stdout == run("-V", path, jobs=1).stdout


def test_one_conversation_is_not_forked():
    """Nothing to share out: one process, no planning beyond the pass that found it."""
    out = run(CAPTURES_DIR / "blank-server-session.pcap")
    assert "one process" in out.stderr.decode()
    assert out.stdout == run(CAPTURES_DIR / "blank-server-session.pcap", jobs=1).stdout


@pytest.mark.parametrize("args", [("-2",), ("-z", "follow,tcp,ascii,0"), ("-l",)])
def test_modes_that_cannot_be_split_run_in_one_process(bundled, args):
    out = run(*args, bundled)
    assert out.returncode == 0 and "-j 2" not in out.stderr.decode()
    assert out.stdout == run(*args, bundled, jobs=1).stdout


def test_standard_input_runs_in_one_process(bundled):
    with open(bundled, "rb") as f:
        out = run("-r", "-", stdin=f)
    assert out.returncode == 0 and "-j 2" not in out.stderr.decode() and out.stdout.count(b"\n") > 1000


def test_a_killed_worker_fails_the_run_naming_its_shard(tmp_path):
    path = tmp_path / "big.pcap"
    replay.write(path, "mix", 6000, conversations=20, live=10)
    proc = subprocess.Popen([*PROTODUMP, "-j", "2", "-V", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=ENV)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 60
    kids = []
    while time.monotonic() < deadline and len(kids) < 2:
        kids = children.read_text().split() if children.exists() else []
        time.sleep(0.02)
    assert len(kids) == 2, "the run did not start two workers"
    os.kill(int(kids[1]), signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 2
    assert "shard 1" in err and "killed by signal 9" in err and "incomplete" in err, err


def test_shards_for_dask_number_streams_as_one_process(bundled):
    """--dask and the data frames run the same shards (api/shards.py run_shard): tcp.stream and udp.stream come
    from the planning pass there too, no longer counted per shard."""
    from protodump.shards import Job, merge_lines, plan, run_local
    fields = ("frame.number", "tcp.stream", "udp.stream")
    shards = plan([str(bundled)], split=3)
    assert len(shards) == 3
    lines = merge_lines(run_local(shards, Job(fields=fields)))
    want = run("-T", "fields", *[a for f in fields for a in ("-e", f)], bundled, jobs=1).stdout.decode()
    assert "".join(line + "\n" for line in lines) == want


def test_check_runs_captures_at_once_and_reports_in_order(tmp_path):
    """`protodump check -j 2`: each capture checked in a process of its own, the report as one process's; a
    changed golden is found either way."""
    names = ["blank-bad.pcap", "enet-rangecoder.pcap", "freeblox-fragments.pcap", "rutentoy-sctp.pcap",
             "iceball-tcp-bad.pcap", "websocket-bad.pcap"]
    golden = tmp_path / "golden"
    golden.mkdir()
    for name in names:
        for suffix in (".txt", ".json"):
            (golden / f"{name}{suffix}").write_bytes((CAPTURES_DIR / "golden" / f"{name}{suffix}").read_bytes())
    text = golden / "enet-rangecoder.pcap.txt"
    text.write_text(text.read_text().replace("Frame 3:", "Frame three:", 1))
    files = [str(CAPTURES_DIR / n) for n in names]
    one, two = (subprocess.run([*PROTODUMP, "check", "-j", str(j), "--golden", str(golden), *files],
                               capture_output=True, timeout=300) for j in (1, 2))
    assert two.stdout == one.stdout and two.returncode == one.returncode == 1
    assert b"CHANGED  " in one.stdout and one.stdout.count(b"\nOK ") + one.stdout.startswith(b"OK ") == 5


# --- the plan streamed to the workers: small chunks (PROTODUMP_JOBS_PLAN=LOOK,CHUNK), so a worker starts on the first
# frames while the parent plans the rest, and seeks to each of its frames

STREAMED = {**ENV, "PROTODUMP_JOBS_PLAN": "64,50"}


def same_streamed(*args, split=True):
    """As `same`, the -j 2 run planned 64 frames before forking, then 50 at a time."""
    return same(*args, split=split, env=STREAMED)


@pytest.mark.parametrize("mode", [(), ("-V",), ("-T", "json"), ("-x",), ("-Y", "tcp.len > 0 || enet", "-t", "dd"),
                                  ("-c", "777", "-T", "ek"), ("-q", "-z", "conv,udp", "-z", "io,phs"),
                                  ("-T", "fields", "-e", "frame.number", "-e", "tcp.stream", "-e", "udp.stream")],
                         ids=lambda m: " ".join(m) or "summary")
def test_a_streamed_plan_gives_the_same_output(many, mode):
    same_streamed(*mode, many)


def test_a_streamed_plan_of_the_bundled_captures(bundled):
    same_streamed("-V", bundled)
    same_streamed("-T", "fields", "-e", "frame.number", "-e", "tcp.stream", "-e", "udp.stream", "-e",
                  "frame.interface_id", "-e", "frame.time_delta", bundled)


def test_a_streamed_plan_of_a_gzip_file_reads_it_through(many, tmp_path):
    """A gzip file cannot be sought: each worker reads it through and takes its own frames."""
    import gzip
    packed = tmp_path / "many.pcap.gz"
    packed.write_bytes(gzip.compress(many.read_bytes()))
    same_streamed("-T", "json", packed)
    cut = tmp_path / "cut.pcap.gz"
    cut.write_bytes(gzip.compress(many.read_bytes())[:packed.stat().st_size * 2 // 3])
    assert same_streamed("-V", cut).returncode == 1


def _pcapng_block(kind: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)


def _pcapng_option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


@pytest.fixture(scope="module")
def sections(many, tmp_path_factory) -> Path:
    """The replay as a pcapng of three sections, each with its own three interfaces (microsecond, nanosecond and
    millisecond stamps, names), packets on all of them with comments and flags, a simple packet block, and
    blocks a reader skips (name resolution, interface statistics, custom) between them."""
    from protodump.capture.files import open_capture
    frames = list(open_capture(str(many)))
    out = b""
    resols = (6, 9, 3)
    third = len(frames) // 3
    for section in range(3):
        out += _pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
                             + _pcapng_option(1, f"section {section}".encode()) + _pcapng_option(0, b""))
        for i, resol in enumerate(resols):
            out += _pcapng_block(1, struct.pack("<HHI", 1, 0, 0) + _pcapng_option(2, f"eth{section}{i}".encode())
                                 + _pcapng_option(9, bytes([resol])) + _pcapng_option(0, b""))
        for n, frame in enumerate(frames[section * third:(section + 1) * third if section < 2 else None]):
            iface = n % 3
            ticks = frame.ts_ns // 10 ** (9 - resols[iface])
            opts = b""
            if n % 7 == 0:
                opts += _pcapng_option(1, f"comment {section}/{n}".encode())
            if n % 11 == 0:
                opts += _pcapng_option(2, struct.pack("<I", 1 + n % 2))
            data = frame.data
            if n == 0 and section == 0:          # a simple packet block (interface 0, no time: first)
                out += _pcapng_block(3, struct.pack("<I", len(data)) + data)
                continue
            out += _pcapng_block(6, struct.pack("<IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(data),
                                                frame.length) + data + b"\0" * (-len(data) % 4)
                                 + (opts + _pcapng_option(0, b"") if opts else b""))
            if n % 50 == 25:
                out += _pcapng_block(4, struct.pack("<HH", 0, 0))                      # name resolution
                out += _pcapng_block(5, struct.pack("<III", iface, 0, 0))              # interface statistics
                out += _pcapng_block(0x00000BAD, struct.pack("<I", 32473) + b"opaque")  # custom
    path = tmp_path_factory.mktemp("jobs") / "sections.pcapng"
    path.write_bytes(out)
    return path


@pytest.mark.parametrize("mode", [("-V",), ("-T", "json"),
                                  ("-T", "fields", "-e", "frame.number", "-e", "frame.interface_id", "-e",
                                   "frame.interface_name", "-e", "frame.section_number", "-e", "frame.comment",
                                   "-e", "frame.p2p_dir", "-e", "frame.time_epoch", "-e", "udp.stream")],
                         ids=lambda m: " ".join(m))
def test_workers_seek_to_pcapng_frames_of_several_sections_and_interfaces(sections, mode):
    """A worker seeking to its packet blocks still reads every section header and interface description before
    them (given to each worker in file order by the plan), so interfaces, time stamp resolutions, sections and
    comments come out as one process reads them."""
    out = same_streamed(*mode, sections)
    assert b"comment 2/7" in out.stdout or "fields" not in mode
    if "fields" in mode:
        rows = [line.split("\t") for line in out.stdout.decode().splitlines()]
        assert {r[3] for r in rows} == {"1", "2", "3"} and {r[1] for r in rows} == {str(i) for i in range(9)}
    same(*mode, sections)


def test_time_that_runs_back_after_the_look_stops_the_workers(bundled, many, tmp_path):
    """Found while the workers already run (the bundled captures, then the replay, which is older): they are
    stopped, nothing is written, and one process reads the file."""
    path = tmp_path / "cat.pcapng"
    subprocess.run([*PROTODUMP, "--concatenate", "-w", str(path), str(bundled), str(many)], check=True, timeout=120)
    out = subprocess.run([*PROTODUMP, "--jobs", "2", "-V", str(path)], capture_output=True, timeout=300, env=STREAMED)
    said = out.stderr.decode()
    assert "one process (time runs back at frame" in said and int(said.split("frame ")[1].split(")")[0]) > 64
    for jobs in (1, 2):                        # -w: the file is opened by the run that reads
        subprocess.run([*PROTODUMP, "--jobs", str(jobs), "-Y", "tcp || enet", "-w", tmp_path / f"out{jobs}.pcapng",
                        path], check=True, timeout=300, env=STREAMED)
    assert (tmp_path / "out1.pcapng").read_bytes() == (tmp_path / "out2.pcapng").read_bytes()
    assert out.stdout == run("-V", path, jobs=1).stdout


def test_the_workers_share_the_byte_budgets(bundled):
    """-j N: each worker holds 1/N of the reassembly (and state) budget, so all of them hold no more than one
    process would; the expert note still names the budget as set. (The output is -j 1's as long as no budget
    is reached: here one process stays under 20,000 bytes of pending reassembly, a worker's half does not.)"""
    budget = ("-o", "protodump.reassembly_budget:20000", "-V")
    one, two = run(*budget, bundled, jobs=1), run(*budget, bundled, jobs=2)
    assert "shard 1:" in two.stderr.decode()
    assert b"exceeds the budget" not in one.stdout
    assert two.stdout.count(b"Pending reassembly exceeds the budget of 20000 bytes (protodump.reassembly_budget)") > 5
    same("-o", "protodump.reassembly_budget:40000", "-o", "protodump.state_budget:2000000", "-V", bundled)


def test_a_budget_share_says_the_whole():
    from protodump.reassembly.budget import Budget
    budget = Budget(1000)
    budget.share(3)
    assert budget.limit == 333 and budget.configured() == 1000
    assert not budget.take(334) and budget.take(333)


def test_a_capture_that_starts_with_one_conversation_is_still_shared_out(many, tmp_path):
    """One conversation for its first frames, then many: the plan looks on (up to a twentieth of the file) before
    it says one process."""
    import dpkt
    from protodump.capture.files import open_capture
    path = tmp_path / "late.pcap"
    first = [f for _, f in zip(range(40), open_capture(str(CAPTURES_DIR / "blank-server-session.pcap")))]
    rest = list(open_capture(str(many)))
    with open(path, "wb") as out:
        writer = dpkt.pcap.Writer(out, linktype=dpkt.pcap.DLT_EN10MB)
        for i, frame in enumerate(first):         # just before the replay's first frame
            writer.writepkt(frame.data, ts=rest[0].ts_ns / 1e9 - 1 + i / 1000)
        for frame in rest:
            writer.writepkt(frame.data, ts=frame.ts_ns / 1e9)
    env = {**ENV, "PROTODUMP_JOBS_PLAN": "32,50"}
    out = same("-T", "fields", "-e", "frame.number", "-e", "udp.stream", "-e", "tcp.stream", path, env=env)
    assert len(out.stdout.splitlines()) == 40 + len(rest)
