#!/usr/bin/env python3
"""Benchmark protodump against tshark + the generated Lua plugin on a large blank capture.

    python tools/bench.py                      # build /tmp/bench/blank-real.pcap once, then time everything
    python tools/bench.py --source synthetic   # the synthetic session instead (random values every packet)
    python tools/bench.py -n 5 --packets 200000 --capture /tmp/big.pcap
    python tools/bench.py --only json,summary  # a subset of the pairs
    python tools/bench.py --file captures/iceball-enet-session.pcap --repeat 20   # any capture, replayed K times
    python tools/bench.py --big 200000 -n 1    # memory and time of every mode on a many-conversation replay
    python tools/bench.py --big 200000 --kind enet-fragments --only summary,json    # ... on hostile input
    python tools/bench.py --jobs 20000         # -j 1 against -j 2, every mode, many conversations and one
    python tools/bench.py --throughput 100000 # frames/s of io,phs, conv, io,stat, types, fields per family

--big N: a capture of N frames made by tools/replay.py (every protocol family, at least 1,000 conversations
each, on fresh addresses; or a hostile --kind) is run in every output mode (summary, -V, -T json, -T fields,
-q -z conv/io statistics, -w) by protodump, tshark + the plugin, and plain tshark (standard statistics only),
each one after the other; max RSS (wait4's ru_maxrss) and wall time are printed with the ratios.

The default capture is REAL traffic: the real server session (captures/blank-server-session.pcap, 1,342
datagrams) replayed until the count is reached, each round's sequence numbers, acks and chunk transmission ids
moved on so that sequence analysis sees a clean session and every chunk transfer is a new, valid one.

The synthetic capture imitates a real session (shared/captures/blank-server-session.pcap): a client on 35367 sending
Player Update every 50 ms, the server on 12354 answering with mostly Player Correction, Entity Update (1-12
entities), zlib-compressed chunk transfers (Chunk Begin + Chunk Data pieces of at most 472 bytes), and now and
then Spawn/Despawn Entity, Message and Ping. Frames are Ethernet/IPv4/UDP on 127.0.0.1, written with dpkt.

Each command runs N times (stdout to /dev/null); the best wall-clock time is kept. Targets (issue 10), printed beside
each mode: on blank, `-T json` at least 4x faster than tshark + plugin, the summary no slower; on a TCP family
(Rutentoy, Iceball over TCP, Freeblox over WebSocket), `-T json` 2x, `-V` and the summary 1.5x.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parent.parent
LUA = ROOT / "lua" / "protodump.lua"
DEFAULT_CAPTURE = {"real": Path("/tmp/bench/blank-real.pcap"), "synthetic": Path("/tmp/bench/blank-synthetic.pcap")}
CLIENT_PORT, SERVER_PORT = 35367, 12354
CHUNK_PIECE = 472          # the largest Chunk Data block seen in the real capture
GENERATOR_VERSION = 3      # bump when the capture recipe changes: the cached file is rebuilt


# --- capture ------------------------------------------------------------------------------------------------------

def _frame(payload: bytes, sport: int, dport: int, ip_id: int) -> bytes:
    udp = dpkt.udp.UDP(sport=sport, dport=dport, data=payload)
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(src=socket.inet_aton("127.0.0.1"), dst=socket.inet_aton("127.0.0.1"), p=dpkt.ip.IP_PROTO_UDP,
                    ttl=64, id=ip_id, df=1, data=udp)
    ip.len = len(ip)
    eth = dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def _chunk_payloads(rng: random.Random, n: int) -> list[bytes]:
    """n zlib-compressed chunks that unpack to 20,484 bytes (4096 blocks of 4 bytes, 4096 light bytes, 4 bytes):
    from nearly empty air (tens of bytes compressed) to noisy terrain (a few kilobytes, several pieces)."""
    out = []
    for i in range(n):
        blocks = bytearray(4096 * 4)
        light = bytearray(4096)
        height = rng.randint(0, 16) if i % 4 else 0          # a quarter are empty air
        noise = rng.choice((0.0, 0.02, 0.1, 0.3))
        for idx in range(4096):
            y = (idx >> 4) & 15
            if y < height or rng.random() < noise:
                kind = rng.choice((1, 1, 1, 2, 3, 4, 7)) if noise else 1
                struct.pack_into("<HBB", blocks, idx * 4, kind, rng.randrange(6) if noise else 0, 0)
            else:
                light[idx] = 15
        out.append(zlib.compress(bytes(blocks) + bytes(light) + b"\0\0\0\0", 6))
    return out


def _entity_state(rng: random.Random, relative: bool = False) -> dict:
    return {
        "chunk_pos": tuple(rng.randint(-1, 1) for _ in range(3)) if relative
        else tuple(rng.randint(-20, 20) for _ in range(3)),
        "block_pos": tuple(rng.randrange(65536) for _ in range(3)),
        "velocity": tuple(round(rng.uniform(-5, 5), 3) for _ in range(3)),
        "orientation": rng.getrandbits(64),
        "pitch": rng.randint(-32767, 32767),
        "yaw": rng.randint(-32767, 32767),
    }


def session(count: int, seed: int = 12354):
    """Yield (ts_seconds, from_client, payload) for `count` datagrams of a blank session."""
    from protodump.dissectors.blank import PROTOCOL

    rng = random.Random(seed)
    chunks = _chunk_payloads(rng, 48)
    seq = {True: 0, False: 0}           # next seq per direction (client, server)
    last_rx = {True: 0, False: 0}       # last seq received by this side (its ack)
    tid = 0
    entities = list(range(2, 14))
    texts = ["hello", "player \"pybot\" joined", "anyone near spawn?", "lag", "brb", "gg " * 20]
    t = 1_700_000_000.0
    produced = 0

    def pkt(from_client: bool, values: dict, pad_to: int | None = None) -> bytes:
        s = seq[from_client]
        seq[from_client] = (s + 1) & 0xFFFF
        last_rx[not from_client] = s
        # a lossless session acks everything: the history is all ones, as in the real server session (where an
        # (ack, history) pair repeats for 82% of the datagrams); random bitmaps would make every packet unique
        values = {"seq": s, "ack": last_rx[from_client], "ack_history": 0xFFFFFFFF, **values}
        return PROTOCOL.encode(values, pad_to=pad_to)

    def header_only(from_client: bool, type_: int) -> bytes:
        s = seq[from_client]
        seq[from_client] = (s + 1) & 0xFFFF
        last_rx[not from_client] = s
        out = bytearray()
        PROTOCOL.header.encode({"seq": s, "ack": last_rx[from_client], "ack_history": 0xFFFFFFFF,
                                "type": type_}, out)
        return bytes(out)

    def emit(from_client, payload):
        nonlocal t, produced
        t += rng.uniform(0.0002, 0.004)
        produced += 1
        return (t, from_client, payload)

    # Opening: Login, Message, Ping, Join (as the real session).
    yield emit(True, pkt(True, {"type": 1, "name": "pybot"}, pad_to=48))
    yield emit(False, pkt(False, {"type": 12, "msg_type": 0, "referral": 0, "text": "player \"pybot\" joined"}))
    yield emit(False, pkt(False, {"type": 0}))
    yield emit(False, pkt(False, {"type": 2, "entity_id": 1, "state": _entity_state(rng), "world_name": "default"},
                          pad_to=94))
    pending: list[bytes] = []           # chunk transfer pieces not sent yet
    while produced < count:
        # One 50 ms client tick.
        t += 0.05 - 0.004 * 4
        yield emit(True, pkt(True, {"type": 4, "state": _entity_state(rng), "movement": (rng.randint(-1, 1), 0, 1),
                                    "actions": rng.choice((0, 0, 0, 1, 2)), "slot": rng.randrange(9)}))
        # Server: about 4 corrections, 2-3 entity updates, a chunk transfer step, rarely others.
        for _ in range(rng.choice((3, 4, 4, 5))):
            yield emit(False, pkt(False, {"type": 8, "offending_seq": last_rx[False], "state": _entity_state(rng)}))
        for _ in range(rng.choice((2, 3, 3, 4))):
            n = rng.choice((12, 12, 12, 12, 8, 8, 1, 1, rng.randint(1, 12)))
            ents = [{"entity_id": rng.choice(entities), "ustate": _entity_state(rng, relative=True)}
                    for _ in range(n)]
            yield emit(False, pkt(False, {"type": 7, "count": n, "base": tuple(rng.randint(-20, 20) for _ in range(3)),
                                          "entities": ents}))
        if not pending:
            tid += 1
            data = rng.choice(chunks)
            yield emit(False, pkt(False, {"type": 9, "transmission_id": tid, "flags": 1,
                                          "coords": tuple(rng.randint(-8, 8) for _ in range(3)),
                                          "data_size": len(data)}))
            pending = [(tid, off, data[off:off + CHUNK_PIECE]) for off in range(0, len(data), CHUNK_PIECE)]
        for _ in range(min(len(pending), rng.choice((1, 1, 2)))):
            ptid, off, piece = pending.pop(0)
            yield emit(False, header_only(False, 10) + struct.pack("<III", ptid, off, len(piece)) + piece)
        r = rng.random()
        if r < 0.02:
            yield emit(False, pkt(False, {"type": 12, "msg_type": 1, "referral": 1, "text": rng.choice(texts)}))
        elif r < 0.05:
            eid = rng.randint(14, 10_000)
            yield emit(False, pkt(False, {"type": 5, "entity_id": eid, "model_id": rng.randrange(4),
                                          "state": _entity_state(rng), "bbox_min": (-0.4, 0.0, -0.4),
                                          "bbox_max": (0.4, 1.8, 0.4), "flags": 1, "name": f"mob{eid}"},
                                  pad_to=126))
        elif r < 0.07:
            yield emit(False, pkt(False, {"type": 6, "entity_id": rng.randint(14, 10_000)}))
        elif r < 0.08:
            yield emit(False, pkt(False, {"type": 0}))


REAL_SESSION = ROOT / "captures" / "blank-server-session.pcap"


def replayed_session(count: int):
    """Yield (ts, frame) for `count` frames of the real session, replayed with moved-on seq/ack/transmission ids."""
    frames = []
    for ts, buf in dpkt.pcap.Reader(open(REAL_SESSION, "rb")):
        frames.append((ts, buf))
    payload_at = 42                          # Ethernet + IPv4 (no options) + UDP, as in the recording
    per_round = {True: 0, False: 0}          # datagrams per direction in one round (from the client: True)
    for _, buf in frames:
        per_round[struct.unpack_from("!H", buf, 34)[0] != SERVER_PORT] += 1
    span = frames[-1][0] - frames[0][0] + 0.05
    n = rnd = 0
    while True:
        for ts, buf in frames:
            if n == count:
                return
            data = bytearray(buf)
            from_client = struct.unpack_from("!H", data, 34)[0] != SERVER_PORT
            seq, ack = struct.unpack_from("<HH", data, payload_at + 4)
            seq = (seq + rnd * per_round[from_client]) & 0xFFFF
            ack = (ack + rnd * per_round[not from_client]) & 0xFFFF
            struct.pack_into("<HH", data, payload_at + 4, seq, ack)
            if data[payload_at + 12] in (9, 10):  # Chunk Begin / Chunk Data: a new transmission id each round
                tid = struct.unpack_from("<I", data, payload_at + 16)[0]
                struct.pack_into("<I", data, payload_at + 16, (tid + rnd * 1000) & 0xFFFFFFFF)
            yield ts + rnd * span, bytes(data)
            n += 1
        rnd += 1


def build_capture(path: Path, count: int, source: str = "real") -> None:
    if source == "real":
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
            for ts, frame in replayed_session(count):
                w.writepkt(frame, ts=ts)
            w.close()
        os.replace(tmp, path)
        stamp(path).write_text(f"{GENERATOR_VERSION} {count} real\n")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    n = 0
    with open(tmp, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, from_client, payload in session(count):
            sport, dport = (CLIENT_PORT, SERVER_PORT) if from_client else (SERVER_PORT, CLIENT_PORT)
            w.writepkt(_frame(payload, sport, dport, n & 0xFFFF), ts=ts)
            n += 1
        w.close()
    os.replace(tmp, path)
    stamp(path).write_text(f"{GENERATOR_VERSION} {count} synthetic\n")


def stamp(path: Path) -> Path:
    return path.with_name(path.name + ".recipe")


def ensure_capture(path: Path, count: int, rebuild: bool, source: str = "real") -> None:
    want = f"{GENERATOR_VERSION} {count} {source}"
    if not rebuild and path.exists() and stamp(path).exists() and stamp(path).read_text().strip() == want:
        print(f"capture: {path} (cached)")
        return
    t0 = time.perf_counter()
    build_capture(path, count, source)
    print(f"capture: {path} built in {time.perf_counter() - t0:.1f} s")


def capture_stats(path: Path) -> tuple[int, int, dict[int, int]]:
    """(datagrams, bytes, {blank type: count}) read back with dpkt."""
    n, size, types = 0, 0, {}
    with open(path, "rb") as f:
        for _ts, buf in dpkt.pcap.Reader(f):
            n += 1
            size += len(buf)
            t = buf[14 + 20 + 8 + 12] if len(buf) > 14 + 20 + 8 + 12 else -1
            types[t] = types.get(t, 0) + 1
    return n, size, types


# The issues' speed targets against tshark + plugin (issue 10): blank -T json 4x ("keep their margins"), its summary
# not slower; the TCP families -T json 2x, -V 1.5x, summary 1.5x. Other captures: none named.
BLANK_TARGETS = {"json": 4.0, "summary": 1.0}
TCP_TARGETS = {"json": 2.0, "verbose": 1.5, "summary": 1.5}


def _reader(f):
    """A dpkt reader of an open pcap or pcapng file (its magic read, then the file rewound for the reader)."""
    pcapng = f.read(4) == b"\x0a\x0d\x0d\x0a"
    f.seek(0)
    return dpkt.pcapng.Reader(f) if pcapng else dpkt.pcap.Reader(f)


def _targets(path: Path) -> dict[str, float]:
    """The targets of the capture's family: TCP's when any of its first frames is an IPv4 or IPv6 TCP segment,
    blank's for the blank captures (the default one included), else none."""
    with open(path, "rb") as f:
        reader = _reader(f)
        for i, (_ts, buf) in enumerate(reader):
            if i == 100:
                break
            ip = dpkt.ethernet.Ethernet(buf).data if reader.datalink() == dpkt.pcap.DLT_EN10MB else None
            if isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) and isinstance(ip.data, dpkt.tcp.TCP):
                return TCP_TARGETS
    return BLANK_TARGETS if path.name.startswith("blank") else {}


def repeat_capture(path: Path, times: int, out: Path | None = None) -> Path:
    """The frames of `path` (pcap or pcapng) K times over, each round later than the last, as a pcap in /tmp
    (or `out`)."""
    if times <= 1:
        return path
    out = out or Path("/tmp/bench") / f"{path.stem}-x{times}.pcap"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "rb") as f:
        reader = _reader(f)
        frames, linktype = list(reader), reader.datalink()
    span = (frames[-1][0] - frames[0][0]) + 1 if frames else 1
    with open(out, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=linktype)
        for k in range(times):
            for ts, buf in frames:
                w.writepkt(_moved(buf, k) if linktype == 1 else buf, ts + k * span)
    return out


def _moved(frame: bytes, k: int) -> bytes:
    """An Ethernet/IPv4 frame with both addresses' last two bytes moved by k: each round is a conversation (and TCP
    connection) of its own instead of a replay of the first one's sequence numbers. (Moving the last byte alone
    wrapped after 250 rounds: tshark then saw every later round as retransmissions and dissected no game layer.)"""
    if k == 0 or len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return frame
    b = bytearray(frame)
    for at in (29, 33):
        b[at - 1] = (b[at - 1] + (b[at] + k) // 250) % 256
        b[at] = (b[at] + k) % 250 + 1
    return bytes(b)


# --- timing -------------------------------------------------------------------------------------------------------

def compile_package() -> None:
    """protodump's modules to bytecode before timing, as an installed package has them: under
    PYTHONDONTWRITEBYTECODE (or a read-only tree) every run would otherwise compile ~150 modules again, about
    half of its start-up, which tshark never pays."""
    import compileall
    import re
    compileall.compile_dir(str(ROOT), quiet=1, rx=re.compile(r"/(\.git|tests|tools|lua|captures|docs)/"))


def compiled_hot_path(mode: str) -> str:
    """Build (or check) the compiled hot path the timed protodump runs will load; says which path is timed. An
    installed wheel carries it (setup.py): nothing to build then; an editable install builds it into the cache."""
    if mode == "no":
        os.environ["PROTODUMP_PURE"] = "1"
        return "protodump: pure Python (--compiled no)"
    os.environ.pop("PROTODUMP_PURE", None)
    env = {**os.environ, "PROTODUMP_PURE": "1"}
    built = subprocess.run([sys.executable, "-m", "protodump.compiled", "build"], env=env, cwd=ROOT,
                           capture_output=True, text=True)
    status = subprocess.run([sys.executable, "-m", "protodump.compiled", "status"], cwd=ROOT, capture_output=True,
                            text=True).stdout.splitlines()
    where = sorted({" ".join(line.split()[1:-1]) for line in status if line.startswith("compiled")})
    done = sum(line.startswith("compiled") for line in status)
    if built.returncode or done < len(status):
        why = (built.stderr.strip().splitlines() or [f"{len(status) - done} hot modules not compiled"])[-1]
        if mode == "yes":
            raise SystemExit(f"--compiled yes: {why[-400:]}")
        return f"protodump: pure Python, or partly (no compiled hot path: {why})"
    return f"protodump: compiled hot path, {done} hot modules from {', '.join(where)}"


def protodump_cmd() -> list[str]:
    """The console script beside this interpreter (not a pyenv shim: its start-up would be timed too)."""
    exe = Path(sys.executable).parent / "protodump"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("protodump")
    return [found] if found else [sys.executable, "-c", "from protodump.cli.main import main; main()"]


PAIRS = {   # name: (protodump args, tshark args)
    "json": (["-T", "json"], ["-T", "json"]),
    "verbose": (["-V"], ["-V"]),
    "summary": ([], []),
}


def time_cmd(argv: list[str], runs: int) -> tuple[float, list[float], int, float]:
    """(best wall time, every wall time, exit code, best CPU time (user + system, from wait4)). On a loaded machine
    the CPU time is the steadier figure: other jobs stretch the wall clock, much less a process's own work."""
    times, cpus, rc = [], [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        times.append(time.perf_counter() - t0)
        cpus.append(usage.ru_utime + usage.ru_stime)
        rc = rc or proc.returncode
        if proc.returncode:
            sys.stderr.write(f"  ! {' '.join(argv)} exited {proc.returncode}: {err.decode(errors='replace')[-400:]}\n")
    return min(times), times, rc, min(cpus)


# --- big captures: every mode, max RSS --------------------------------------------------------------------------

BIG_MODES = {   # name: (arguments for both tools, plain tshark too: a standard statistic)
    "summary": ([], False),
    "verbose": (["-V"], False),
    "json": (["-T", "json"], False),
    "fields": (["-T", "fields", "-e", "frame.number", "-e", "ip.src", "-e", "blank.seq", "-e", "enet.command.type",
                "-e", "rutentoy.opcode"], False),
    "conv": (["-q", "-z", "conv,udp", "-z", "conv,tcp"], True),
    "iostat": (["-q", "-z", "io,stat,1"], True),
    "phs": (["-q", "-z", "io,phs"], True),
    "write": (["-w", "{out}"], True),
}


def run_measured(argv: list[str]) -> tuple[float, int, int]:
    """(wall seconds, max RSS in kB, exit code) of one command, stdout to /dev/null."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, usage.ru_maxrss, proc.returncode


def big(args) -> int:
    sys.path.insert(0, str(ROOT / "tools"))
    import replay
    path = Path(f"/tmp/bench/{args.kind}-{args.big}.pcap")
    want = f"replay {args.kind} {args.big}"
    if not (path.exists() and stamp(path).exists() and stamp(path).read_text().strip() == want):
        t0 = time.perf_counter()
        n = replay.write(path, args.kind, args.big)
        stamp(path).write_text(want + "\n")
        print(f"capture: {path}: {n:,} frames built in {time.perf_counter() - t0:.1f} s")
    n, size, _ = capture_stats(path)
    print(f"{n:,} frames, {size / 1e6:.1f} MB ({args.kind}); one run each\n")
    tools = {"protodump": protodump_cmd(), "tshark+lua": [args.tshark, "-X", f"lua_script:{args.lua}", "-r"],
             "tshark": [args.tshark, "-r"]}
    out = "/tmp/bench/written.pcap"
    rows = []
    for name in args.only.split(","):
        mode_args, plain_too = BIG_MODES[name]
        mode_args = [a.replace("{out}", out) for a in mode_args]
        row = [name]
        for tool, cmd in tools.items():
            if (tool == "tshark" and not plain_too) or tool in args.skip.split(","):
                row.append(None)
                continue
            argv = [*cmd, str(path), *mode_args] if tool != "protodump" else [*cmd, *mode_args, str(path)]
            print(f"[{name}] {tool} ...", end="", flush=True)
            wall, rss, rc = run_measured(argv)
            print(f" {wall:.1f} s, {rss / 1024:.0f} MB" + (f" (exit {rc})" if rc else ""), flush=True)
            row.append((wall, rss))
        rows.append(row)
    print(f"\n{'mode':<9} {'protodump':>18} {'tshark + plugin':>18} {'plain tshark':>18}   ratios (time)")
    for name, *cells in rows:
        text = [f"{c[0]:6.1f} s {c[1] / 1024:5.0f} MB" if c else f"{'-':>15}" for c in cells]
        pd = cells[0]
        ratios = "  ".join(f"{label} {c[0] / pd[0]:.2f}x" for label, c in zip(("tshark+lua/pd", "tshark/pd"),
                                                                               cells[1:]) if c and pd)
        print(f"{name:<9} {text[0]:>18} {text[1]:>18} {text[2]:>18}   {ratios}")
    worst = max(c[1] for _, *cells in rows for c in cells[:1] if c)
    print(f"\nprotodump max RSS over the modes: {worst / 1024:.0f} MB (target < 150 MB); "
          f"{n / min(c[0] for _, *cells in rows for c in cells[:1] if c):,.0f} frames/s at best")
    return 0


# --- throughput: the asked-little modes, frames per CPU second per family ---------------------------------------

THROUGHPUT_FIELDS = {   # family (tools/replay.py): (a game field for -T fields, the <proto>,types statistic)
    "blank": ("blank.seq", "blank"), "enet": ("iceball.lua_id", "iceball"),
    "iceball-tcp": ("iceball.lua_id", "iceball"), "rutentoy": ("rutentoy.opcode", "rutentoy"),
    "freeblox": ("freeblox.id", "freeblox"),
}


def throughput(args) -> int:
    """Issue 15's throughput: on an N-frame replay of each family (tools/replay.py --families F, many
    conversations), one process, start-up included, the CPU time (user + system, best of -n) of the modes that
    ask little (-T fields of two fields, <proto>,types, io,phs, conv, io,stat) and plain tshark's io,phs; frames
    per CPU second and max RSS. Targets: io,phs, conv and io,stat at 100k frames/s, fields and types at 30k."""
    sys.path.insert(0, str(ROOT / "tools"))
    import replay
    pd = [*protodump_cmd(), "--jobs", "1"]
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("| family | `-T fields` | `<proto>,types` | `io,phs` (plain tshark) | `conv,udp` / `conv,tcp` | `io,stat,1` |")
    print("|---|---|---|---|---|---|")
    for family, (field, proto) in THROUGHPUT_FIELDS.items():
        path = Path(f"/tmp/bench/{family}-{args.throughput}.pcap")
        if not path.exists():
            replay.write(path, "mix", args.throughput, families=[family])
        n = capture_stats(path)[0]

        def cell(argv: list[str]) -> str:
            cpus = []
            for _ in range(args.runs):
                proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
                _, _status, usage = os.wait4(proc.pid, 0)
                cpus.append((usage.ru_utime + usage.ru_stime, usage.ru_maxrss))
            cpu, rss = min(cpus)
            return f"{cpu:.2f} s ({n / cpu / 1000:.0f}k, {rss / 1024:.0f} MB)"
        f = str(path)
        print(f"| {family} | {cell([*pd, '-T', 'fields', '-e', 'frame.number', '-e', field, f])} "
              f"| {cell([*pd, '-q', '-z', f'{proto},types', f])} "
              f"| {cell([*pd, '-q', '-z', 'io,phs', f])} ({cell([args.tshark, '-n', '-q', '-z', 'io,phs', '-r', f])}) "
              f"| {cell([*pd, '-q', '-z', 'conv,udp', f])} / {cell([*pd, '-q', '-z', 'conv,tcp', f])} "
              f"| {cell([*pd, '-q', '-z', 'io,stat,1', f])} |", flush=True)
    return 0


# --- -j: one process against two -------------------------------------------------------------------------------

JOBS_MODES = {   # name: protodump arguments
    "summary": [],
    "verbose": ["-V"],
    "json": ["-T", "json"],
    "ek": ["-T", "ek"],
    "psml": ["-T", "psml"],
    "fields": ["-T", "fields", "-e", "frame.number", "-e", "tcp.stream", "-e", "udp.stream", "-e", "blank.seq"],
    "hex": ["-x"],
    "filter": ["-Y", "tcp.len > 0 || blank.type == 3 || enet", "-V"],
    "stats": ["-q", "-z", "conv,tcp", "-z", "conv,udp", "-z", "io,phs", "-z", "expert", "-z", "io,stat,1"],
    "write": ["-Y", "tcp || enet", "-w", "/tmp/bench/jobs-written.pcapng"],
}


def jobs(args) -> int:
    """-j 1 against -j 2 in every mode (best of -n runs, output to /dev/null): on a replay of many conversations
    (tools/replay.py mix, N frames) and on one conversation (the real blank session replayed to N datagrams: -j 2
    must see there is nothing to share out and not fork)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import replay
    many = Path(f"/tmp/bench/jobs-mix-{args.jobs}.pcap")
    if not many.exists():
        replay.write(many, "mix", args.jobs, conversations=max(10, args.jobs // 400), live=20)
    one = Path(f"/tmp/bench/jobs-blank-{args.jobs}.pcap")
    ensure_capture(one, args.jobs, False, "real")
    pd = protodump_cmd()
    only = args.only.split(",") if args.only != ",".join(PAIRS) else list(JOBS_MODES)
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    rows = []
    for label, path in (("many conversations", many), ("one conversation", one)):
        n, size, _ = capture_stats(path)
        print(f"{label}: {path} ({n:,} frames, {size / 1e6:.1f} MB)")
        for name in only:
            times, cpus = {}, {}
            for j in (1, 2):
                argv = [*pd, "-j", str(j), *JOBS_MODES[name], str(path)]
                best = min((_timed_jobs(argv) for _ in range(args.runs)), key=lambda r: r[0])
                times[j], cpus[j] = best
            idle = cpus[2][1] or cpus[2][0]
            print(f"  {name:<8} -j 1 {times[1]:6.2f} s   -j 2 {times[2]:6.2f} s   {times[1] / times[2]:.2f}x   "
                  f"cpu -j 1 {cpus[1][0]:.2f} s, -j 2 {cpus[2][0]:.2f} s; two idle cores: about {idle:.2f} s, "
                  f"{cpus[1][0] / idle:.2f}x{cpus[2][2]}", flush=True)
            rows.append((label, name, times[1], times[2], cpus[1][0], cpus[2][0], idle))
    print("\n| capture | mode | -j 1 wall | -j 2 wall | cpu -j 1 | cpu -j 2 | -j 2 on two idle cores | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for label, name, t1, t2, c1, c2, idle in rows:
        print(f"| {label} | {name} | {t1:.2f} s | {t2:.2f} s | {c1:.2f} s | {c2:.2f} s | {idle:.2f} s | "
              f"**{c1 / idle:.2f}x** |")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


def _timed_jobs(argv: list[str]) -> tuple[float, tuple[float, float | None, str]]:
    """(wall, (cpu of the whole run, the run's critical path in cpu seconds or None, its parts in words)) of one
    protodump run.

    The critical path is what two idle cores would take: the parent's work before the workers start (start-up and
    the plan's first look), then the slower worker, or the rest of all the work (the parent's plan and merge, which
    run beside the workers, and the workers') shared by two cores if that is more. PROTODUMP_JOBS_VERBOSE prints
    the figures. On a shared machine the kernel's autogroup scheduling gives one session's processes one share of
    the CPU however many there are, so the wall time of -j 2 there says little; the CPU accounting does not
    depend on it (though two busy cores each run a little slower than one: shared caches)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "PROTODUMP_JOBS_VERBOSE": "1"})
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    cpu = usage.ru_utime + usage.ru_stime
    path, parts = None, ""
    for line in err.splitlines():
        if line.startswith("protodump: -j cpu:"):
            # before the workers X s, planned Y s, parent Z s, workers A B ... s
            nums = [float(x) for x in line.replace(",", " ").split() if x.replace(".", "").isdigit()]
            before, planned, parent, workers = nums[0], nums[1], nums[2], nums[3:]
            path = before + max(max(workers), (parent - before + sum(workers)) / 2)
            parts = (f" (before the workers {before:.2f} s, then the plan {planned - before:.2f} s and the merge "
                     f"{parent - planned:.2f} s beside workers of {' + '.join(f'{w:.2f}' for w in workers)} s)")
    return wall, (cpu, path, parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=("real", "synthetic"), default="real",
                    help="replay the real server session (default) or generate a synthetic one")
    ap.add_argument("--capture", type=Path, help="capture path (built once, then reused)")
    ap.add_argument("--packets", type=int, default=100_000, help="datagrams in the capture (default 100,000)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the capture even if cached")
    ap.add_argument("-n", "--runs", type=int, default=3, help="runs per command; the best is kept (default 3)")
    ap.add_argument("--only", default=",".join(PAIRS), help=f"comma-separated pairs among {','.join(PAIRS)}")
    ap.add_argument("--tshark", default=shutil.which("tshark") or "tshark")
    ap.add_argument("--lua", type=Path, default=LUA)
    ap.add_argument("--file", type=Path, help="time this capture (any protocol) instead of a blank one")
    ap.add_argument("--repeat", type=int, default=1, help="with --file: replay its frames K times, one after another")
    ap.add_argument("--big", type=int, help="frames of a many-conversation replay (tools/replay.py): every mode, "
                    "max RSS")
    ap.add_argument("--kind", default="mix", help="with --big: mix, unfinished, enet-fragments, opened-once")
    ap.add_argument("--skip", default="", help="with --big: tools not to run (tshark+lua, tshark)")
    ap.add_argument("--throughput", type=int, metavar="N", help="frames per CPU second of the modes that ask "
                    "little (-T fields, types, io,phs, conv, io,stat), on an N-frame replay of each family")
    ap.add_argument("--jobs", type=int, metavar="N", help="-j 1 against -j 2 in every mode, on N frames of many "
                    "conversations and N of one conversation (--only: a subset of the modes)")
    ap.add_argument("--compiled", choices=("auto", "yes", "no"), default="auto",
                    help="protodump's compiled hot path (protodump/compiled.py): an installed wheel carries it; "
                         "auto (yes: or fail) builds it into the cache when missing and Cython >= 3 is installed, "
                         "no times the pure-Python modules (PROTODUMP_PURE=1)")
    args = ap.parse_args(argv)
    compile_package()
    print(compiled_hot_path(args.compiled))
    if args.jobs:
        return jobs(args)
    if args.throughput:
        return throughput(args)
    if args.big:
        if args.only == ",".join(PAIRS):
            args.only = ",".join(BIG_MODES)
        return big(args)

    if args.file:
        args.capture = repeat_capture(args.file, args.repeat)
        n, size, _ = capture_stats(args.capture)
        print(f"{n:,} frames, {size / 1e6:.1f} MB: {args.file.name} x {args.repeat}")
    else:
        args.capture = args.capture or DEFAULT_CAPTURE[args.source]
        ensure_capture(args.capture, args.packets, args.rebuild, args.source)
        n, size, types = capture_stats(args.capture)
        from protodump.dissectors.blank import PACKET_NAMES
        mix = ", ".join(f"{PACKET_NAMES.get(k, k)} {v / n:.1%}"
                        for k, v in sorted(types.items(), key=lambda kv: -kv[1]))
        print(f"{n:,} frames, {size / 1e6:.1f} MB: {mix}")
    tshark_ver = subprocess.run([args.tshark, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    print(f"{tshark_ver}; python {sys.version.split()[0]}; best of {args.runs}\n")

    pd, ts = protodump_cmd(), [args.tshark, "-X", f"lua_script:{args.lua}"]
    rows, cpu_rows = [], []
    for name in args.only.split(","):
        p_args, t_args = PAIRS[name]
        # one process, as tshark (a file of 4 MB or more would be split over every core: api/jobs.py)
        p_argv, t_argv = [*pd, "--jobs", "1", *p_args, str(args.capture)], [*ts, "-r", str(args.capture), *t_args]
        print(f"[{name}] protodump ...", end="", flush=True)
        p_best, p_all, p_rc, p_cpu = time_cmd(p_argv, args.runs)
        print(f" {p_best:.2f}s; tshark ...", end="", flush=True)
        t_best, t_all, t_rc, t_cpu = time_cmd(t_argv, args.runs)
        print(f" {t_best:.2f}s", flush=True)
        rows.append((name, p_best, t_best, p_rc or t_rc, p_all, t_all))
        cpu_rows.append((name, p_cpu, t_cpu))

    print()
    head = f"{'mode':<9} {'protodump s':>12} {'tshark+lua s':>13} {'tshark/pd':>10} {'pd pkt/s':>10} " \
           f"{'tshark pkt/s':>13}  target"
    print(head)
    print("-" * len(head))
    targets = _targets(args.capture)
    failed = False
    for name, p, t, rc, _pa, _ta in rows:
        ratio = t / p
        goal = targets.get(name)
        verdict = "" if goal is None else (f">= {goal:g}x " + ("ok" if ratio >= goal else "MISSED"))
        failed |= goal is not None and ratio < goal
        print(f"{name:<9} {p:>12.2f} {t:>13.2f} {ratio:>9.2f}x {n / p:>10,.0f} {n / t:>13,.0f}  {verdict}"
              + ("  (a command failed)" if rc else ""))
    print("\nall runs (s): " + "; ".join(f"{name}: pd {' '.join(f'{x:.2f}' for x in pa)} / tshark "
                                          f"{' '.join(f'{x:.2f}' for x in ta)}" for name, _p, _t, _rc, pa, ta in rows))
    print(f"CPU time, best run (user + system; load average {os.getloadavg()[0]:.1f}): " +
          "; ".join(f"{name}: pd {p:.2f} s / tshark {t:.2f} s = {t / p:.2f}x" for name, p, t in cpu_rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
