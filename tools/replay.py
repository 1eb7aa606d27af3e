#!/usr/bin/env python3
"""Big many-conversation captures, made reproducibly from the bundled real captures (for tools/bench.py and the
memory tests; the files stay out of git: /tmp/bench by default).

    python tools/replay.py --frames 1000000 -o /tmp/bench/mix-1m.pcap             # every family mixed
    python tools/replay.py --kind enet-fragments --frames 200000 -o /tmp/bench/frag.pcap
    python tools/replay.py --kind unfinished --frames 200000 -o /tmp/bench/unfinished.pcap
    python tools/replay.py --kind opened-once --frames 200000 -o /tmp/bench/once.pcap

Kinds:
  mix            every protocol family (blank, ENet/Iceball, Iceball over TCP, Rutentoy over TCP, Freeblox over
                 WebSocket) shares the frames equally; each family's share is replayed as at least
                 --conversations conversations, each on fresh addresses. A conversation longer than its share
                 replays its first frames and its last few (the goodbye: ENet DISCONNECT, TCP FIN).
  unfinished     the same conversations cut before their end: transfers, messages and textures that never
                 complete, ENet fragments never all sent, connections never closed.
  enet-fragments one ENet peer pair per --conversations, each sending SEND_FRAGMENT commands whose start
                 sequence numbers all differ and never complete (fragment 0 of a 1,000-fragment message).
  opened-once    every conversation is the first frame of a template: a flood of conversations seen once.

Fresh addresses without breaking checksums: the template's client address gains an offset and the server's
loses the same one (16-bit one's-complement words), so the IPv4 header, UDP and TCP checksums stay valid.
Conversations of a family start staggered (about --live of them under way at once) and all are merged by time.
"""
from __future__ import annotations

import argparse
import heapq
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
FAMILIES = {     # family: templates (cycled, one per conversation)
    "blank": ("blank-server-session.pcap",),
    "enet": ("iceball-enet-session.pcap",),
    "iceball-tcp": ("iceball-tcp-session.pcap",),
    "rutentoy": ("rutentoy-login-texture.pcap", "rutentoy-messages.pcap", "rutentoy-segmentation.pcap"),
    "freeblox": ("freeblox-session.pcap",),
}
GOODBYE = 6              # frames of a template's end kept when it is cut to its share (DISCONNECT, FIN/ACK)
IP_SRC, IP_DST = 26, 30  # IPv4 addresses in an Ethernet frame


def _template(name: str) -> tuple[list[tuple[float, bytes]], tuple[bytes, int]]:
    """The frames of one capture (times relative to its first) and its client endpoint (the first sender)."""
    with open(CAPTURES / name, "rb") as f:
        frames = list(dpkt.pcap.Reader(f))
    t0 = frames[0][0]
    first = frames[0][1]
    client = (first[IP_SRC:IP_SRC + 4], struct.unpack_from("!H", first, 34)[0])
    return [(ts - t0, buf) for ts, buf in frames], client


def _ones_add(word: int, delta: int) -> int:
    s = word + delta
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    while s < 0:
        s += 0xFFFF
    return s


def _shift_address(addr: bytes, hi: int, lo: int) -> bytes:
    w0, w1 = struct.unpack("!HH", addr)
    return struct.pack("!HH", _ones_add(w0, hi), _ones_add(w1, lo))


def _moved(buf: bytes, client: tuple[bytes, int], k: int) -> bytes:
    """The frame with the client's address +k and the server's -k (one's complement words: checksums hold)."""
    if len(buf) < 38 or buf[12:14] != b"\x08\x00":
        return buf
    hi, lo = 1 + (k >> 14), 1 + (k & 0x3FFF)
    b = bytearray(buf)
    from_client = (buf[IP_SRC:IP_SRC + 4], struct.unpack_from("!H", buf, 34)[0]) == client
    src, dst = (1, -1) if from_client else (-1, 1)
    b[IP_SRC:IP_SRC + 4] = _shift_address(buf[IP_SRC:IP_SRC + 4], src * hi, src * lo)
    b[IP_DST:IP_DST + 4] = _shift_address(buf[IP_DST:IP_DST + 4], dst * hi, dst * lo)
    return bytes(b)


def _window(frames: list, share: int, goodbye: bool) -> list:
    if len(frames) <= share:
        return frames
    if not goodbye:
        return frames[:share]
    return frames[:max(share - GOODBYE, 1)] + frames[-GOODBYE:]


def _family_plan(frames: int, conversations: int, families: list[str], kind: str):
    """Per family: (templates, frames per conversation, conversations)."""
    plan = {}
    per_family = frames // len(families)
    for fam in families:
        temps = [_template(name) for name in FAMILIES[fam]]
        longest = max(len(t[0]) for t in temps)
        if kind == "opened-once":
            length = 1
        elif kind == "unfinished":
            length = max(2, min(per_family // conversations, int(longest * 0.6)))
        else:
            length = min(longest, max(2, per_family // conversations))
        count = max(conversations, -(-per_family // max(length, 1)) * 11 // 10)   # some spare: N frames made
        plan[fam] = (temps, length, count)
    return plan


def conversation_frames(kind: str, frames: int, conversations: int, live: int, families: list[str],
                        start: float = 1_700_000_000.0) -> Iterator[tuple[float, bytes]]:
    """(ts, frame) in time order; stops after `frames`."""
    if kind == "enet-fragments":
        yield from _enet_fragments(frames, conversations, start)
        return
    plan = _family_plan(frames, conversations, families, kind)
    heap: list = []
    serial = 0
    for f_index, fam in enumerate(families):
        temps, length, count = plan[fam]
        span = max(t[0][-1][0] for t in temps) + 1.0
        stagger = span / live if kind != "opened-once" else 0.001
        for c in range(count):
            frames_c, client = temps[c % len(temps)]
            window = _window(frames_c, length, kind == "mix")
            k = f_index * 250_000 + c + 1           # families on disjoint address offsets
            heap.append((start + c * stagger + f_index * 0.0001, serial, k, client, iter(window)))
            serial += 1
    # each entry is (time of its next frame, ..., remaining frames); entries start lazily by their start time
    heap.sort(key=lambda e: e[:2])
    pending, heap = heap, []
    at = 0
    made = 0
    while made < frames and (heap or at < len(pending)):
        while at < len(pending) and (not heap or pending[at][0] <= heap[0][0]):
            t0, s, k, client, it = pending[at]
            at += 1
            first = next(it, None)
            if first is not None:
                heapq.heappush(heap, (t0 + first[0], s, k, client, it, t0, first[1]))
        ts, s, k, client, it, t0, buf = heapq.heappop(heap)
        yield ts, _moved(buf, client, k)
        made += 1
        nxt = next(it, None)
        if nxt is not None:
            heapq.heappush(heap, (t0 + nxt[0], s, k, client, it, t0, nxt[1]))


def _enet_fragments(frames: int, conversations: int, start: float) -> Iterator[tuple[float, bytes]]:
    """SEND_FRAGMENT commands that never complete: every datagram starts a new message (a new start sequence
    number) of 1,000 fragments of 1,000 bytes and sends only its fragment 0."""
    per = max(1, frames // conversations)
    body = bytes(range(256)) * 4
    for n in range(frames):
        c, i = n % conversations, n // conversations
        seq = (i + 1) & 0xFFFF
        command = struct.pack("!BBH", 0x88, 0, seq) + struct.pack("!HHIIII", seq, len(body[:1000]), 1000, 0,
                                                                   1000 * 1000, 0) + body[:1000]
        payload = struct.pack("!H", 0x0000 | (c & 0xFFF)) + command
        k = c + 1
        src, dst = f"10.{(k >> 8) & 255}.{k & 255}.1", f"10.{(k >> 8) & 255}.{k & 255}.2"
        yield start + n * 0.001, _udp_frame(payload, src, dst, 40_000 + c % 20_000, 20737, n)
    del per


def _udp_frame(payload: bytes, src: str, dst: str, sport: int, dport: int, ip_id: int) -> bytes:
    import socket
    udp = dpkt.udp.UDP(sport=sport, dport=dport, data=payload)
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_UDP, ttl=64,
                    id=ip_id & 0xFFFF, data=udp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))


def write(path: Path, kind: str = "mix", frames: int = 200_000, conversations: int = 1000, live: int = 50,
          families: list[str] | None = None) -> int:
    """Write the capture to `path` (through a temporary file); returns the frames written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    n = 0
    with open(tmp, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB, nano=False)
        for ts, buf in conversation_frames(kind, frames, conversations, live, families or list(FAMILIES)):
            w.writepkt(buf, ts=ts)
            n += 1
    tmp.replace(path)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--kind", choices=("mix", "unfinished", "enet-fragments", "opened-once"), default="mix")
    ap.add_argument("--frames", type=int, default=200_000)
    ap.add_argument("--conversations", type=int, default=1000, help="at least this many per family (default 1000)")
    ap.add_argument("--live", type=int, default=50, help="conversations of a family under way at once (about)")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"a subset of {','.join(FAMILIES)}")
    args = ap.parse_args(argv)
    n = write(args.output, args.kind, args.frames, args.conversations, args.live, args.families.split(","))
    print(f"{args.output}: {n:,} frames ({args.kind})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
