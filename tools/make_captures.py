#!/usr/bin/env python3
"""Build the project's blank test captures into captures/ (and their golden outputs into captures/golden/).

The datagrams come from the table encoder (PROTOCOL.encode) and are sent over real UDP sockets on loopback in a
private network namespace, recorded by tcpdump (tools/netns_record.py). Everything is seeded: the payloads are the
same on every run (timestamps, IP ids and checksums are whatever the kernel makes).

    python tools/make_captures.py            # re-record every capture, copy the real ones, rewrite the goldens
    python tools/make_captures.py --golden   # only rewrite captures/golden/*.txt and *.json
    python tools/make_captures.py --only blank-2015.pcap
"""
from __future__ import annotations

import argparse
import math
import random
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
GOLDEN = CAPTURES / "golden"
SHARED = Path("/work/shared/captures")
REAL_CAPTURES = ["blank-server-session.pcap"]        # copied as they are

sys.path.insert(0, str(ROOT / "tools"))
from protodump.dissectors.blank import PROTOCOL, TAG  # noqa: E402

HEADER = 16
CLIENT_PORT = 40123            # fixed, so that the captures do not depend on the ephemeral port
# Maximum payload lengths the real implementation pads to (NOTES.md).
PAD = {1: 32, 2: 78, 5: 110, 8: 44, 9: 24}
PAD_2015 = {1: 32, 2: 100, 5: 132, 8: 66}


# --- value helpers ---------------------------------------------------------------------------------------------

def packn(v: float) -> int:
    return int(round(max(-1.0, min(1.0, v)) * 32767))


def packu(v: float) -> int:
    return int(round(max(0.0, min(1.0, v)) * 65535))


def f32(v: float) -> float:
    """A float that survives a 32-bit round trip unchanged."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def quat(x: float, y: float, z: float, w: float) -> int:
    """blank's smallest-three quaternion (NOTES.md): normalise, negate if the largest is negative."""
    q = [x, y, z, w]
    n = math.sqrt(sum(c * c for c in q))
    q = [c / n for c in q]
    largest = max(range(4), key=lambda i: abs(q[i]))
    if q[largest] < 0:
        q = [-c for c in q]
    small = [q[i] for i in range(4) if i != largest]
    raw = largest << 62
    for shift, c in zip((40, 20, 0), small):
        raw |= (int(c * 524287 / 0.7072) + 524287) << shift
    return raw


def quat_axis(axis, angle: float) -> int:
    ax, ay, az = axis
    n = math.sqrt(ax * ax + ay * ay + az * az)
    s = math.sin(angle / 2) / n
    return quat(ax * s, ay * s, az * s, math.cos(angle / 2))


def state(rng: random.Random, chunk=(0, 0, 0)) -> dict:
    """A plausible current-revision entity state (42 bytes)."""
    return {
        "chunk_pos": chunk,
        "block_pos": tuple(packu(rng.uniform(0, 16) / 16) for _ in range(3)),
        "velocity": tuple(f32(rng.uniform(-5, 5)) for _ in range(3)),
        "orientation": quat_axis((rng.uniform(-1, 1), rng.uniform(0.1, 1), rng.uniform(-1, 1)),
                                 rng.uniform(-math.pi, math.pi)),
        "pitch": packn(rng.uniform(-math.pi / 2, math.pi / 2) / (math.pi / 2)),
        "yaw": packn(rng.uniform(-math.pi, math.pi) / math.pi),
    }


def state_2015(rng: random.Random, chunk=(0, 0, 0)) -> dict:
    """A 2015 entity state (64 bytes: vec3i, vec3, vec3, quat as 4 floats, vec3)."""
    angle = rng.uniform(-math.pi, math.pi)
    return {
        "chunk_pos": chunk,
        "position": tuple(f32(rng.uniform(0, 16)) for _ in range(3)),
        "velocity": tuple(f32(rng.uniform(-5, 5)) for _ in range(3)),
        "orientation": (0.0, f32(math.sin(angle / 2)), 0.0, f32(math.cos(angle / 2))),
        "angular_velocity": tuple(f32(rng.uniform(-1, 1)) for _ in range(3)),
    }


def chunk_content(rng: random.Random, blocks: int = 120, lit: int = 200) -> bytes:
    """20,484 bytes: 4096 blocks of (u16 type, u8 face, u8 turn), 4096 light bytes, 4 trailing bytes."""
    buf = bytearray(20484)
    for i in rng.sample(range(4096), blocks):
        struct.pack_into("<HBB", buf, 4 * i, rng.randint(1, 12), rng.randint(0, 5), rng.randint(0, 3))
    for i in rng.sample(range(4096), lit):
        buf[16384 + i] = rng.randint(1, 15)
    return bytes(buf)


class Session:
    """Sequence numbers, acks and ack history kept per direction, the way a real peer fills the header."""

    def __init__(self, revision=None, c2s_seq=0, s2c_seq=0):
        self.revision = revision
        self.next = {"c2s": c2s_seq, "s2c": s2c_seq}
        self.received = {"c2s": [], "s2c": []}   # what each side received (c2s: the server received)
        self.datagrams: list[tuple[str, bytes]] = []

    def header(self, direction, seq=None):
        other = "s2c" if direction == "c2s" else "c2s"
        if seq is None:
            seq = self.next[direction]
            self.next[direction] = (seq + 1) & 0xFFFF
        got = self.received[other]                    # what this sender received from the other side
        ack = got[-1] if got else 0
        history = 0
        for s in got:
            back = (ack - s) & 0xFFFF
            if 1 <= back <= 32:
                history |= 1 << (back - 1)
        return {"seq": seq, "ack": ack, "ack_history": history}

    def send(self, direction, type_, values=None, *, seq=None, pad=True, raw=None, revision=None):
        values = dict(values or {})
        hdr = self.header(direction, seq)
        values.update({k: v for k, v in hdr.items() if k not in values})
        values["type"] = type_
        rev = revision or self.revision
        pads = PAD_2015 if rev == "2015" else PAD
        pad_to = HEADER + pads[type_] if pad and type_ in pads else None
        data = PROTOCOL.encode(values, revision=rev, pad_to=pad_to) if raw is None else raw
        self.received[direction].append(values["seq"])
        self.datagrams.append((direction, data))
        return data

    def raw(self, direction, data: bytes):
        self.datagrams.append((direction, data))


def split_pieces(data: bytes, n: int) -> list[tuple[int, bytes]]:
    step = -(-len(data) // n)
    return [(i, data[i:i + step]) for i in range(0, len(data), step)]


# --- the captures ------------------------------------------------------------------------------------------------

def all_current() -> list:
    rng = random.Random(12354)
    s = Session(c2s_seq=0, s2c_seq=0)
    player = 1001
    s.send("c2s", 1, {"name": "alice"})
    s.send("s2c", 2, {"entity_id": player, "state": state(rng, (0, 0, 0)), "world_name": "default"})
    s.send("c2s", 0)
    s.send("s2c", 0)
    # a compressed chunk in 3 pieces, sent out of order (2, 0, 1)
    content = chunk_content(rng)
    packed = zlib.compress(content, 6)
    assert 3 * 100 < len(packed) <= 3 * 472, len(packed)
    s.send("s2c", 9, {"transmission_id": 1, "flags": 1, "coords": (0, -1, 2), "data_size": len(packed)})
    pieces = split_pieces(packed, 3)
    for index in (2, 0, 1):
        offset, piece = pieces[index]
        s.send("s2c", 10, {"transmission_id": 1, "offset": offset, "size": len(piece), "data": piece})
    # a small uncompressed transfer (flags 0) in two pieces
    small = bytes(rng.randrange(256) for _ in range(150))
    s.send("s2c", 9, {"transmission_id": 2, "flags": 0, "coords": (1, 0, -3), "data_size": len(small)})
    s.send("s2c", 10, {"transmission_id": 2, "offset": 0, "size": 100, "data": small[:100]})
    s.send("s2c", 10, {"transmission_id": 2, "offset": 100, "size": 50, "data": small[100:]})
    s.send("c2s", 4, {"state": state(rng), "movement": (packn(0.5), 0, packn(-1.0)), "actions": 0x05, "slot": 3})
    s.send("c2s", 4, {"state": state(rng), "movement": (0, packn(1.0), 0), "actions": 0x02, "slot": 9})
    s.send("s2c", 8, {"offending_seq": s.next["c2s"] - 1, "state": state(rng, (0, 0, 0))})
    s.send("s2c", 5, {"entity_id": 2001, "model_id": 7, "state": state(rng, (1, 0, -1)),
                      "bbox_min": (-0.5, -1.0, -0.5), "bbox_max": (0.5, 1.0, 0.5), "flags": 1, "name": "Steve"})
    s.send("s2c", 5, {"entity_id": 2002, "model_id": 3, "state": state(rng, (-1, 2, 0)),
                      "bbox_min": (-1.0, -1.0, -1.0), "bbox_max": (1.0, 1.0, 1.0), "flags": 0, "name": "Zombie Ω"})
    base = (10, -4, 7)
    entities = [{"entity_id": eid, "ustate": {**state(rng), "chunk_pos": rel}}
                for eid, rel in ((player, (0, 0, 0)), (2001, (-1, 2, -3)), (2002, (5, -6, 127)), (2003, (-128, 1, 0)))]
    s.send("s2c", 7, {"count": len(entities), "base": base, "entities": entities})
    s.send("s2c", 11, {"coords": (0, -1, 2), "count": 5, "blocks": [
        {"index": i, "data": (rng.randint(1, 12) | rng.randint(0, 5) << 16 | rng.randint(0, 3) << 24)}
        for i in (0, 17, 273, 2048, 4095)]})
    s.send("c2s", 12, {"msg_type": 1, "referral": 0, "text": "héllo wörld ✓ 日本語 🙂"})
    s.send("s2c", 12, {"msg_type": 1, "referral": player, "text": "<alice> héllo wörld ✓ 日本語 🙂"})
    s.send("s2c", 12, {"msg_type": 0, "referral": 0, "text": "Zombie Ω was slain"})
    s.send("s2c", 6, {"entity_id": 2002})
    s.send("c2s", 9, {"coords": (0, -1, 2)})          # the client re-requests a chunk: other fields ignored
    s.send("c2s", 0)
    s.send("c2s", 3)
    s.send("s2c", 3)
    return s.datagrams


def rev_2015() -> list:
    rng = random.Random(2015)
    s = Session(revision="2015", c2s_seq=10, s2c_seq=500)
    player = 7
    s.send("c2s", 1, {"name": "bob"})
    s.send("c2s", 4, {"state2015": state_2015(rng)})              # 64 bytes: only the 2015 revision
    s.send("s2c", 2, {"entity_id": player, "state2015": state_2015(rng), "world_name": "default"})
    s.send("c2s", 0)
    s.send("s2c", 0)
    s.send("s2c", 5, {"entity_id": 33, "skeleton_id": 2, "state2015": state_2015(rng, (1, 1, 0)),
                      "bbox_min": (-0.5, 0.0, -0.5), "bbox_max": (0.5, 1.8, 0.5), "flags": 1, "name": "guard"})
    s.send("s2c", 7, {"count": 2, "entities": [
        {"entity_id": player, "state2015": state_2015(rng)},
        {"entity_id": 33, "state2015": state_2015(rng, (1, 1, 0))}]})
    s.send("c2s", 4, {"state2015": state_2015(rng)})
    s.send("s2c", 8, {"offending_seq": s.next["c2s"] - 1, "state2015": state_2015(rng)})
    s.send("s2c", 6, {"entity_id": 33})
    s.send("c2s", 3)
    s.send("s2c", 3)
    return s.datagrams


# Client sequence numbers in blank-sequence.pcap: a wrap, 2 lost, a duplicate, an out-of-order arrival.
SEQUENCE_C2S = [65533, 65534, 65535, 0, 1, 4, 4, 6, 5, 7, 8]


def sequence() -> list:
    rng = random.Random(7)
    s = Session(c2s_seq=0, s2c_seq=300)
    s.send("c2s", 1, {"name": "wrap"}, seq=65532)
    s.send("s2c", 2, {"entity_id": 1, "state": state(rng), "world_name": "default"})
    for seq in SEQUENCE_C2S:
        s.send("c2s", 4, {"state": state(rng), "slot": seq % 10}, seq=seq)
        s.send("s2c", 0)
    return s.datagrams


def port_23456() -> list:
    rng = random.Random(23456)
    s = Session(c2s_seq=1, s2c_seq=1)
    s.send("c2s", 1, {"name": "carol"})
    s.send("s2c", 2, {"entity_id": 42, "state": state(rng), "world_name": "default"})
    s.send("c2s", 4, {"state": state(rng), "actions": 1, "slot": 2})
    s.send("s2c", 7, {"count": 1, "base": (0, 0, 0), "entities": [{"entity_id": 42, "ustate": state(rng)}]})
    s.send("s2c", 12, {"msg_type": 0, "text": "welcome"})
    s.send("c2s", 3)
    return s.datagrams


def bad() -> list:
    rng = random.Random(666)
    s = Session(c2s_seq=0, s2c_seq=0)
    login = s.send("c2s", 1, {"name": "mallory"})
    # truncated headers (the first datagram is the header cut at 0 bytes, i.e. empty)
    for cut in (0, 1, 4, 10, 15):
        s.raw("c2s", login[:cut])
    join = PROTOCOL.encode({"seq": 50, "type": 2, "entity_id": 9, "state": state(rng), "world_name": "default"},
                           pad_to=HEADER + 78)
    s.raw("s2c", join[:HEADER + 4 + 20])                      # cut inside the entity state
    s.raw("c2s", PROTOCOL.encode({"tag": 0xDEADBEEF, "seq": 60, "type": 0}))                    # bad tag
    s.raw("c2s", PROTOCOL.encode({"seq": 61, "type": 200}) + b"\x01\x02\x03\x04")               # unknown type
    two = [{"entity_id": i, "ustate": state(rng)} for i in (1, 2)]
    s.send("s2c", 7, {"count": 99, "base": (0, 0, 0), "entities": two})                        # count 99
    s.send("s2c", 11, {"coords": (0, 0, 0), "count": 50,
                       "blocks": [{"index": i, "data": 1} for i in range(3)]})                # count > data
    s.send("s2c", 10, {"transmission_id": 77, "offset": 0, "size": 5, "data": b"hello"})       # no Chunk Begin
    s.send("s2c", 9, {"transmission_id": 5, "flags": 0, "coords": (0, 0, 0), "data_size": 100})
    s.send("s2c", 10, {"transmission_id": 5, "offset": 80, "size": 50, "data": bytes(range(50))})  # beyond size
    s.send("s2c", 10, {"transmission_id": 5, "offset": 0, "size": 80, "data": bytes(80)})
    s.send("s2c", 10, {"transmission_id": 5, "offset": 0, "size": 200, "data": bytes(20)})   # size > data
    corrupt = bytearray(zlib.compress(chunk_content(rng, 50, 50)))
    for i in range(10, len(corrupt) - 4, 7):
        corrupt[i] ^= 0x5A
    s.send("s2c", 9, {"transmission_id": 6, "flags": 1, "coords": (0, 0, 1), "data_size": len(corrupt)})
    s.send("s2c", 10, {"transmission_id": 6, "offset": 0, "size": len(corrupt), "data": bytes(corrupt)})
    s.send("s2c", 9, {"transmission_id": 8, "flags": 1, "coords": (0, 0, 2), "data_size": 64})
    s.send("s2c", 10, {"transmission_id": 8, "offset": 0, "size": 64, "data": zlib.compress(b"x" * 100)[:10]
                       .ljust(64, b"\x00")})                                                   # truncated stream
    s.raw("c2s", login + b"\x01garbage\xff" * 3)                                              # trailing garbage
    s.send("c2s", 1, {"name": "x" * 40}, pad=False)                                            # name too long
    for n in (1, 3, 16, 17, 40, 100, 300, 600):                                                # random garbage
        data = bytes(rng.randrange(256) for _ in range(n))
        s.raw("c2s" if n % 2 else "s2c", data)
    s.raw("c2s", b"")                                                                          # empty datagram
    hdr = PROTOCOL.encode({"seq": 99, "type": 12})[:HEADER]
    s.raw("c2s", hdr)                                                                          # Message, no body
    s.raw("s2c", PROTOCOL.encode({"seq": 98, "type": 8, "padding": b"\xff\xee\xdd"}))          # padding not zero
    return s.datagrams


CAPTURE_BUILDERS = {
    "blank-all-current.pcap": (all_current, 12354),
    "blank-2015.pcap": (rev_2015, 12354),
    "blank-sequence.pcap": (sequence, 12354),
    "blank-port-23456.pcap": (port_23456, 23456),
    "blank-bad.pcap": (bad, 12354),
}


def record(name: str) -> None:
    from netns_record import available, record_udp
    reason = available()
    if reason:
        sys.exit(f"cannot record: {reason}")
    build, port = CAPTURE_BUILDERS[name]
    datagrams = build()
    record_udp(datagrams, str(CAPTURES / name), server_port=port, client_port=CLIENT_PORT, gap=0.001)
    print(f"wrote captures/{name} ({len(datagrams)} datagrams)")


# --- golden outputs ------------------------------------------------------------------------------------------------

PROTODUMP = [sys.executable, "-c", "from protodump.cli.main import main; main()"]


def golden_commands(capture: Path) -> dict[str, list[str]]:
    """The golden files of one capture and the protodump arguments that produce them (tests/test_golden.py)."""
    return {f"{capture.name}.txt": ["-V", str(capture)], f"{capture.name}.json": ["-T", "json", str(capture)]}


def write_goldens() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for capture in sorted(CAPTURES.glob("*.pcap")):
        for name, args in golden_commands(capture).items():
            # run from captures/ with a relative path so the output does not depend on the checkout's location
            rel = [a if a != str(capture) else capture.name for a in args]
            out = subprocess.run([*PROTODUMP, *rel], cwd=CAPTURES, capture_output=True, check=True).stdout
            (GOLDEN / name).write_bytes(out)
            print(f"wrote captures/golden/{name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--golden", action="store_true", help="only rewrite the golden outputs")
    parser.add_argument("--only", action="append", choices=sorted(CAPTURE_BUILDERS), help="record only these")
    args = parser.parse_args()
    CAPTURES.mkdir(exist_ok=True)
    if not args.golden:
        for name in args.only or CAPTURE_BUILDERS:
            record(name)
        if not args.only:
            for name in REAL_CAPTURES:
                (CAPTURES / name).unlink(missing_ok=True)
                shutil.copyfile(SHARED / name, CAPTURES / name)
                (CAPTURES / name).chmod(0o644)
                print(f"copied captures/{name}")
    write_goldens()


if __name__ == "__main__":
    main()
