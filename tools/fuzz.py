#!/usr/bin/env python3
"""Mutation fuzzing of both halves: protodump and tshark + the generated plugin, on the bundled captures.

Each case takes one bundled capture of a family, mutates it at the payload level (the game bytes inside UDP, TCP
and SCTP; link/IP/UDP/TCP/SCTP headers are rewritten consistent afterwards: lengths, checksums, and TCP sequence
numbers shifted when a payload grows or shrinks, so the game dissectors are reached) or at the packet level
(duplicated, reordered, dropped frames), with random preferences, then runs protodump (summary, -V, -T json) and
tshark + plugin (-T json) on it and counts per family: crashes (a Python traceback or a signal), hangs (a
timeout), Lua errors, caught dissector errors ("Dissector error" experts on either side) and game-layer parity
(the frames whose game layers are equal in both JSON outputs). Every case is reproducible from (seed, index);
a failing case is shrunk to a few packets by the minimiser.

    python tools/fuzz.py --seed 1 --cases 200                    # every family, 200 cases each
    python tools/fuzz.py --family rutentoy --seed 7 --cases 50 --save tests/tmp/fuzz   # keep failing inputs
    python tools/fuzz.py --replay rutentoy:7:12 --minimise out.pcap   # shrink one failing case

Hand-written: the mutation operators are specific to packet payloads (no fuzzing library keeps TCP/SCTP
streams consistent); the header rewriting is dpkt's (lengths and checksums recomputed when zeroed).
"""
from __future__ import annotations

import argparse
import io
import json
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
PLUGIN = ROOT / "lua" / "protodump.lua"
PROTODUMP = [sys.executable, "-c", "from protodump.cli.main import main; main()"]
LUA_ERROR = re.compile(r"_ws\.lua\.error|Lua Error")
DISSECTOR_ERROR = re.compile(r"Dissector error")

# family -> (capture globs, game layers compared, preference sets tried: same syntax on both sides)
FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    "blank": (("blank-*.pcap",), ("blank",), ((), ("-o", "blank.revision:2015"), ("-o", "blank.revision:current"))),
    "enet-iceball": (("enet-*.pcap", "iceball-enet-*.pcap"), ("enet", "iceball"),
                     ((), ("-o", "enet.checksum:on"), ("-o", "enet.handoff:port"))),
    "iceball-tcp": (("iceball-tcp-*.pcap",), ("iceball",), ((), ("-o", "iceball.numbering:spec"))),
    "rutentoy": (("rutentoy-*.pcap",), ("rutentoy",), ((),)),
    "freeblox": (("freeblox-*.pcap", "websocket-bad.pcap"), ("freeblox",), ((), ("-o", "freeblox.ws_port:8765"))),
}
INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x00\x00", b"\xff\xff", b"\x7f\xff", b"\x80\x00",
               b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00",
               b"\x00\x00\x80\x7f", b"\x00\x00\xc0\x7f", b"\x00\x00\x00\x80"]     # floats: inf, NaN, -0.0


# --- frames: the L4 payload out and back in, headers made consistent ----------------------------------------------

def read_frames(path: Path) -> list[tuple[float, bytes]]:
    with open(path, "rb") as f:
        return [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]


def write_frames(path: Path, frames) -> None:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, buf in frames:
            w.writepkt(buf, ts=ts)


def l4_of(frame: bytes):
    """(ethernet, ip, l4) of an Ethernet/IPv4|IPv6/UDP|TCP|SCTP frame, else None."""
    try:
        eth = dpkt.ethernet.Ethernet(frame)
    except (dpkt.UnpackError, struct.error, IndexError):
        return None
    ip = eth.data
    if not isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)):
        return None
    l4 = ip.data
    if not isinstance(l4, (dpkt.udp.UDP, dpkt.tcp.TCP, dpkt.sctp.SCTP)):
        return None
    return eth, ip, l4


def rebuild(eth, ip, l4) -> bytes:
    """The frame with lengths and checksums recomputed (dpkt fills zeroed ones)."""
    if isinstance(l4, dpkt.udp.UDP):
        l4.ulen = len(l4)
    l4.sum = 0
    if isinstance(ip, dpkt.ip.IP):
        ip.len = len(ip)
        ip.sum = 0
    else:
        ip.plen = len(l4)
    ip.data = l4
    eth.data = ip
    return bytes(eth)


def sctp_chunks(raw: bytes) -> list[tuple[int, int, bytes]]:
    """(type, flags, value) of each chunk of an SCTP packet's bytes (walked by hand: padding kept out)."""
    out, pos = [], 12
    while pos + 4 <= len(raw):
        kind, flags, length = struct.unpack_from("!BBH", raw, pos)
        if length < 4:
            break
        out.append((kind, flags, raw[pos + 4:pos + length]))
        pos += (length + 3) & ~3
    return out


def sctp_packet(common: bytes, chunks: list[tuple[int, int, bytes]]) -> bytes:
    from sctp_frames import crc32c
    body = bytearray(common[:8] + bytes(4))
    for kind, flags, value in chunks:
        body += struct.pack("!BBH", kind, flags, 4 + len(value)) + value + bytes(-len(value) % 4)
    struct.pack_into("<I", body, 8, crc32c(bytes(body)))
    return bytes(body)


def _first_data(raw: bytes) -> int | None:
    return next((k for k, (kind, _, value) in enumerate(sctp_chunks(raw)) if kind == 0 and len(value) > 12), None)


def payload_of(frame: bytes) -> bytes | None:
    parts = l4_of(frame)
    if parts is None:
        return None
    l4 = parts[2]
    if isinstance(l4, dpkt.sctp.SCTP):
        raw = _raw_l4(parts[1])
        k = _first_data(raw)
        return sctp_chunks(raw)[k][2][12:] if k is not None else None
    return bytes(l4.data) or None


def _raw_l4(ip) -> bytes:
    """The transport bytes as captured (dpkt would re-serialise SCTP chunks without their padding)."""
    raw = bytes(ip)
    return raw[ip.hl * 4:] if isinstance(ip, dpkt.ip.IP) else raw[40:]


def with_payload(frame: bytes, payload: bytes) -> tuple[bytes, int]:
    """The frame carrying `payload` instead of its own, and the change in length (TCP sequence shift)."""
    eth, ip, l4 = l4_of(frame)
    if isinstance(l4, dpkt.sctp.SCTP):
        raw = _raw_l4(ip)
        chunks = sctp_chunks(raw)
        k = _first_data(raw)
        kind, flags, value = chunks[k]
        chunks[k] = (kind, flags, value[:12] + payload)
        ip.data = sctp_packet(raw, chunks)
        if isinstance(ip, dpkt.ip.IP):
            ip.len = ip.hl * 4 + len(ip.data)
            ip.sum = 0
        else:
            ip.plen = len(ip.data)
        eth.data = ip
        return bytes(eth), 0                    # SCTP DATA chunks are framed by TSN, not by byte offset
    delta = len(payload) - len(l4.data)
    l4.data = payload
    return rebuild(eth, ip, l4), delta


def shift_tcp(frames: list[tuple[float, bytes]], index: int, delta: int) -> None:
    """After frame `index` of a TCP flow changed length by delta: later seqs of that direction and the acks of the
    other direction move by delta, so the stream stays consistent."""
    parts = l4_of(frames[index][1])
    if not delta or parts is None or not isinstance(parts[2], dpkt.tcp.TCP):
        return
    _, ip0, t0 = parts
    flow = (ip0.src, t0.sport, ip0.dst, t0.dport)
    for i in range(index + 1, len(frames)):
        ts, frame = frames[i]
        p = l4_of(frame)
        if p is None or not isinstance(p[2], dpkt.tcp.TCP):
            continue
        eth, ip, t = p
        here = (ip.src, t.sport, ip.dst, t.dport)
        if here == flow:
            t.seq = (t.seq + delta) & 0xFFFFFFFF
        elif here == (flow[2], flow[3], flow[0], flow[1]) and t.flags & dpkt.tcp.TH_ACK:
            t.ack = (t.ack + delta) & 0xFFFFFFFF
        else:
            continue
        frames[i] = (ts, rebuild(eth, ip, t))


def tcp_session(steps, server_port: int, client_port: int = 40999, mss: int = 1448, start: float = 1.0e9):
    """Ethernet/IPv4/TCP frames of one connection carrying `steps` ((\"c2s\"|\"s2c\", bytes), as
    tools/netns_record.record_tcp takes them): handshake, data in MSS-sized segments, each acknowledged, FINs.
    For inputs too large to record through the kernel quickly (the hostile captures)."""
    ends = {"c2s": (b"\x0a\0\0\x01", client_port, b"\x0a\0\0\x02", server_port)}
    ends["s2c"] = (ends["c2s"][2], server_port, ends["c2s"][0], client_port)
    seq = {"c2s": 1000, "s2c": 5000}
    ts = [start]

    def seg(side, flags, data=b""):
        src, sport, dst, dport = ends[side]
        other = "s2c" if side == "c2s" else "c2s"
        t = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq[side], ack=seq[other] if flags & dpkt.tcp.TH_ACK else 0,
                         flags=flags, win=65535, data=data)
        ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, ttl=64, df=1, data=t)
        eth = dpkt.ethernet.Ethernet(src=b"\x02" + bytes(5), dst=b"\x02" + bytes(4) + b"\x01",
                                     type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
        ts[0] += 0.0001
        seq[side] = (seq[side] + len(data) + (1 if flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN) else 0)) & 0xFFFFFFFF
        return (ts[0], rebuild(eth, ip, t))

    A, S, F, P = dpkt.tcp.TH_ACK, dpkt.tcp.TH_SYN, dpkt.tcp.TH_FIN, dpkt.tcp.TH_PUSH
    yield seg("c2s", S)
    yield seg("s2c", S | A)
    yield seg("c2s", A)
    for side, data in steps:
        for at in range(0, len(data), mss):
            yield seg(side, A | P, data[at:at + mss])
        yield seg("s2c" if side == "c2s" else "c2s", A)
    yield seg("c2s", F | A)
    yield seg("s2c", F | A)
    yield seg("c2s", A)


# --- mutation operators ---------------------------------------------------------------------------------------------

def op_bitflip(rng, data, _other):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    return bytes(data)


def op_interesting(rng, data, _other):
    value = rng.choice(INTERESTING)
    at = rng.randrange(len(data))
    return data[:at] + value + data[at + len(value):]


def op_truncate(rng, data, _other):
    return data[:rng.randrange(len(data))]


def op_splice(rng, data, other):
    at, start = rng.randrange(len(data) + 1), rng.randrange(len(other))
    return data[:at] + other[start:start + rng.randint(1, 64)] + data[at:]


def op_byte_run(rng, data, _other):
    at = rng.randrange(len(data) + 1)
    return data[:at] + bytes([rng.randrange(256)]) * rng.choice([1, 7, 64, 300]) + data[at:]


PAYLOAD_OPS = {"bitflip": op_bitflip, "interesting": op_interesting, "truncate": op_truncate, "splice": op_splice,
               "byte_run": op_byte_run}
PACKET_OPS = ("duplicate", "reorder", "drop")


@dataclass
class Case:
    family: str
    seed: int
    index: int
    capture: str = ""
    prefs: tuple = ()
    ops: list = field(default_factory=list)


def mutate(frames: list[tuple[float, bytes]], rng: random.Random, case: Case) -> list[tuple[float, bytes]]:
    frames = list(frames)
    carrying = [i for i, (_, f) in enumerate(frames) if payload_of(f)]
    if not carrying:
        return frames
    for _ in range(rng.choice([1, 1, 2, 3])):
        if rng.random() < 0.8:
            name = rng.choice(sorted(PAYLOAD_OPS))
            i = rng.choice(carrying)
            other = payload_of(frames[rng.choice(carrying)][1]) or b"\0"
            ts, frame = frames[i]
            data = payload_of(frame)
            if not data:
                continue
            new, delta = with_payload(frame, PAYLOAD_OPS[name](rng, data, other))
            frames[i] = (ts, new)
            shift_tcp(frames, i, delta)
            case.ops.append(f"{name}@{i + 1}")
        else:
            name = rng.choice(PACKET_OPS)
            i = rng.randrange(len(frames))
            if name == "duplicate":
                frames.insert(i + 1, frames[i])
            elif name == "reorder" and i + 1 < len(frames):
                frames[i], frames[i + 1] = (frames[i][0], frames[i + 1][1]), (frames[i + 1][0], frames[i][1])
            elif name == "drop" and len(frames) > 1:
                del frames[i]
            case.ops.append(f"{name}@{i + 1}")
            carrying = [k for k, (_, f) in enumerate(frames) if payload_of(f)] or carrying[:0]
            if not carrying:
                break
    return frames


def make_case(family: str, seed: int, index: int) -> tuple[Case, list[tuple[float, bytes]]]:
    """Case `index` of a seed: everything drawn from one Random seeded by (family, seed, index)."""
    rng = random.Random(f"{family}:{seed}:{index}")
    globs, _, prefs = FAMILIES[family]
    captures = sorted({p for g in globs for p in CAPTURES.glob(g)})
    capture = rng.choice(captures)
    case = Case(family, seed, index, capture.name, rng.choice(prefs))
    return case, mutate(read_frames(capture), rng, case)


# --- running both halves ----------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    crash: str = ""
    hang: str = ""
    lua_errors: int = 0
    dissector_errors: int = 0
    frames: int = 0
    differ: list = field(default_factory=list)


def _run(argv, timeout):
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def game_layers(text: str, names) -> list[list]:
    """Per frame: the game layers (key, raw JSON value) in order; duplicate keys kept."""
    packets = json.loads(text, object_pairs_hook=lambda kv: kv)
    out = []
    for p in packets:
        layers = dict(p)["_source"]
        layers = dict(layers)["layers"]
        out.append([(k, json.dumps(v)) for k, v in layers if k in names])
    return out


def websocket_divergent(text: str) -> set[int]:
    """Frames where tshark 4.0's ws dissector hands the message on differently by design (tests/conftest.py)."""
    packets = json.loads(text, object_pairs_hook=lambda kv: kv)
    return {i for i, p in enumerate(packets) if "websocket.fragments" in json.dumps(p)}


def run_case(path: Path, prefs: tuple, names, timeout: float = 60) -> Outcome:
    out = Outcome()
    for mode in (("-V",), ()):
        proc = _run([*PROTODUMP, *prefs, *mode, "-r", str(path)], timeout)
        if proc is None:
            out.hang = f"protodump {' '.join(mode) or 'summary'}"
            return out
        if proc.returncode < 0 or b"Traceback" in proc.stderr:
            out.crash = proc.stderr.decode("utf-8", "replace")[-2000:]
            return out
    ours = _run([*PROTODUMP, *prefs, "-T", "json", "-r", str(path)], timeout)
    theirs = _run([shutil.which("tshark") or "tshark", "-X", f"lua_script:{PLUGIN}", *prefs, "-T", "json", "-r",
                   str(path)], timeout)
    if ours is None or theirs is None:
        out.hang = "protodump -T json" if ours is None else "tshark"
        return out
    if ours.returncode < 0 or b"Traceback" in ours.stderr:
        out.crash = ours.stderr.decode("utf-8", "replace")[-2000:]
        return out
    a, b = ours.stdout.decode("utf-8", "replace"), theirs.stdout.decode("utf-8", "replace")
    out.lua_errors = len(LUA_ERROR.findall(b))
    out.dissector_errors = len(DISSECTOR_ERROR.findall(a)) + len(DISSECTOR_ERROR.findall(b))
    try:
        mine, tshark = game_layers(a, names), game_layers(b, names)
    except (json.JSONDecodeError, KeyError, TypeError):
        out.crash = "invalid JSON"
        return out
    skip = websocket_divergent(a)
    out.frames = max(len(mine), len(tshark))
    for i in range(out.frames):
        x = mine[i] if i < len(mine) else None
        y = tshark[i] if i < len(tshark) else None
        if i not in skip and x != y:
            out.differ.append(i + 1)
    return out


def failing(o: Outcome) -> bool:
    return bool(o.crash or o.hang or o.lua_errors or o.dissector_errors or o.differ)


# --- the minimiser ---------------------------------------------------------------------------------------------------

def scratch_dir() -> Path:
    """Where cases are written: inside the tree (tshark runs unprivileged and must read them); made on first use,
    since a clean checkout has no tests/tmp."""
    path = ROOT / "tests" / "tmp"
    path.mkdir(parents=True, exist_ok=True)
    return path


def minimise(frames, prefs, names, keep=None, timeout: float = 60):
    """Delta debugging over frames: drop chunks of frames while the case still fails the same way."""
    def still(fs):
        with tempfile.NamedTemporaryFile(suffix=".pcap", dir=scratch_dir()) as tmp:
            write_frames(Path(tmp.name), fs)
            o = run_case(Path(tmp.name), prefs, names, timeout)
        return failing(o) if keep is None else keep(o)
    n = 2
    while len(frames) >= 2:
        size = max(1, len(frames) // n)
        for start in range(0, len(frames), size):
            trial = frames[:start] + frames[start + size:]
            if trial and still(trial):
                frames, n = trial, max(n - 1, 2)
                break
        else:
            if size == 1:
                break
            n = min(len(frames), n * 2)
    return frames


# --- the campaign ----------------------------------------------------------------------------------------------------

def campaign(families, seed: int, cases: int, save: Path | None = None, log=print) -> dict:
    totals = {}
    for family in families:
        names = FAMILIES[family][1]
        t = totals[family] = {"cases": 0, "crashes": 0, "hangs": 0, "lua_errors": 0, "dissector_errors": 0,
                              "frames": 0, "differ": 0, "failing": []}
        for index in range(cases):
            case, frames = make_case(family, seed, index)
            with tempfile.NamedTemporaryFile(suffix=".pcap", dir=scratch_dir()) as tmp:
                write_frames(Path(tmp.name), frames)
                o = run_case(Path(tmp.name), case.prefs, names)
                if failing(o) and save is not None:
                    save.mkdir(parents=True, exist_ok=True)
                    shutil.copy(tmp.name, save / f"{family}-{seed}-{index}.pcap")
            t["cases"] += 1
            t["crashes"] += bool(o.crash)
            t["hangs"] += bool(o.hang)
            t["lua_errors"] += o.lua_errors
            t["dissector_errors"] += o.dissector_errors
            t["frames"] += o.frames
            t["differ"] += len(o.differ)
            if failing(o):
                t["failing"].append(f"{family}:{seed}:{index} {case.capture} {' '.join(case.prefs)} "
                                    f"{','.join(case.ops)} frames {o.differ[:5]}{' ' + o.hang if o.hang else ''}"
                                    f"{' crash' if o.crash else ''}")
        log(summary_line(family, t))
    return totals


def summary_line(family: str, t: dict) -> str:
    parity = 100.0 * (t["frames"] - t["differ"]) / t["frames"] if t["frames"] else 100.0
    return (f"{family:13} cases {t['cases']:5}  frames {t['frames']:7}  crashes {t['crashes']}  hangs {t['hangs']}  "
            f"Lua errors {t['lua_errors']}  dissector errors {t['dissector_errors']}  parity {parity:.2f} %")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=50, help="cases per family")
    ap.add_argument("--save", type=Path, help="copy failing inputs here")
    ap.add_argument("--show", action="store_true", help="list the failing cases")
    ap.add_argument("--replay", help="FAMILY:SEED:INDEX: rebuild one case")
    ap.add_argument("--minimise", type=Path, help="with --replay: shrink it and write the result here")
    args = ap.parse_args(argv)
    if args.replay:
        family, seed, index = args.replay.split(":")
        case, frames = make_case(family, int(seed), int(index))
        print(case)
        if args.minimise:
            frames = minimise(frames, case.prefs, FAMILIES[family][1])
            write_frames(args.minimise, frames)
            print(f"{len(frames)} frames -> {args.minimise}")
        return 0
    started = time.monotonic()
    totals = campaign(args.family or list(FAMILIES), args.seed, args.cases, args.save)
    if args.show:
        for t in totals.values():
            for line in t["failing"]:
                print(" ", line)
    print(f"{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
