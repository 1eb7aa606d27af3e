#!/usr/bin/env python3
"""Make the Rutentoy captures in captures/: sessions written by the field tables' encoder (no implementation of
Rutentoy exists) and sent over real kernel TCP on loopback in a private network namespace (tools/netns_record.py:
MTU 1500, segmentation offloads off, TCP_NODELAY), recorded by tcpdump. The lost/reordered capture is a recorded
one with segments dropped and swapped afterwards (this kernel has no netem); the lossy ones are sessions recorded
with a quarter of the segments dropped on input by nftables after tcpdump saw them (real retransmissions, SACKs,
keep-alives; each recording loses other segments); the SCTP capture is built with the SCTP frame encoder (this kernel
has no SCTP).

    python tools/make_rutentoy_captures.py [--golden] [NAME ...]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from itertools import zip_longest
from pathlib import Path

import numpy as np
import qoi
import xxhash

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from protodump.dissectors.rutentoy import PORT, PROTOCOL

CAPTURES = ROOT / "captures"

# --- PDUs from the tables ---------------------------------------------------------------------------------------


def pdu(role: str, values: dict, numbering: str = "heading", texture: bool = False) -> bytes:
    """One PDU: `values` are the table's fields (opcode included). texture=True: a server->client 04 texture."""
    return PROTOCOL.encode(values, f"{numbering}/{'c2s' if texture else role}")


def message(role: str, cookie: int, channel: int, text: str | bytes, numbering: str = "heading",
            final: bool = True) -> list[bytes]:
    """A message as 64-byte chunks (UTF-8 may split inside a code point), the last with the final bit."""
    raw = text.encode() if isinstance(text, str) else text
    pieces = [raw[i:i + 64] for i in range(0, len(raw), 64)] or [b""]
    op = 0x0B if numbering == "heading" else 0x0A
    return [pdu(role, {"opcode": op, "cookie": cookie, "channel": channel,
                       "final": int(final and i == len(pieces) - 1), "chunk": piece}, numbering)
            for i, piece in enumerate(pieces)]


def texture(role: str, oid: int, cookie: int, data: bytes, numbering: str = "heading") -> list[bytes]:
    """An image as 1024-byte chunks; the last uses fewer than 1024 bytes (an empty one if it divides evenly)."""
    pieces = [data[i:i + 1024] for i in range(0, len(data), 1024)]
    if not pieces or len(pieces[-1]) == 1024:
        pieces.append(b"")
    op = 0x04 if numbering == "heading" else 0x05
    return [pdu(role, {"opcode": op, "oid": oid, "cookie": cookie, "data_len": len(p), "data": p}, numbering,
                texture=role == "s2c")
            for p in pieces]


def image(side: int, seed: int, alpha: bool = True) -> bytes:
    """A QOI texture: a gradient with a little noise (so it compresses to several chunks)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side]
    pixels = np.stack([x * 255 // side, y * 255 // side, (x ^ y) % 256, np.full_like(x, 255)], axis=-1)
    pixels = (pixels + rng.integers(0, 3, pixels.shape)).clip(0, 255).astype(np.uint8)
    if not alpha:
        pixels = np.ascontiguousarray(pixels[..., :3])
    return qoi.encode(pixels)


def digest(data: bytes) -> str:
    return xxhash.xxh32_hexdigest(data)


def world_chunk(x: int, y: int, z: int, seed: int) -> bytes:
    """An 8x8x8 chunk: stone below, dirt and grass, a few flowers, one lit firepit."""
    rng = np.random.default_rng(seed)
    ids, lights = [0] * 512, [0] * 512
    for i in range(512):
        by = (i // 8) % 8
        ids[i] = 0x020 if by < 3 else 0x010 if by < 5 else 0x011 if by == 5 else 0
        if by == 6 and rng.random() < 0.2:
            ids[i] = int(rng.choice([0x040, 0x041, 0x042, 0x039]))
    ids[6 * 8 + 3] = 0x07D
    lights[6 * 8 + 3] = 12
    return pdu("s2c", {"opcode": 0x10, "chunk_x": x, "chunk_y": y, "chunk_z": z, "blocks": ids,
                       "lights": lights})


def move(role, oid, x, y, z, yaw=0.0, pitch=0.0, numbering="heading"):
    return pdu(role, {"opcode": 0x03 if numbering == "heading" else 0x02, "oid": oid,
                      "x": round(x * 256), "y": round(y * 256), "z": round(z * 256),
                      "yaw": round(yaw / 360 * 65536) % 65536, "pitch": round(pitch / 360 * 65536) % 65536},
               numbering)


# --- sessions (lists of (direction, bytes) sends) ------------------------------------------------------------------

def c2s(*pdus):
    return [("c2s", p) for p in pdus]


def s2c(*pdus):
    return [("s2c", p) for p in pdus]


def every_opcode() -> list:
    """A login and every opcode with a layout, in both directions where the spec allows; one PDU per send."""
    steps = []
    steps += c2s(*message("c2s", 1, 5, "LOGIN alice open sesame"))
    steps += c2s(*message("c2s", 2, 5, "HASTEX 0a1b2c3d"))
    steps += s2c(*message("s2c", 1, 5, "HAVETEX 1"))
    steps += s2c(world_chunk(0, -1, 2, 1))
    steps += s2c(pdu("s2c", {"opcode": 0x02, "oid": 0, "model": 0, "model_meta": 0}))
    steps += s2c(move("s2c", 0, 12.5, -3.25, 100.0, 90.0, -10.0))
    steps += s2c(pdu("s2c", {"opcode": 0x20, "permissions": 0x8013, "walk_speed": 0x0480, "jump_height": 0x0140}))
    steps += s2c(pdu("s2c", {"opcode": 0x01, "cookie": 0xDEADBEEF}))
    steps += c2s(pdu("c2s", {"opcode": 0x01, "cookie": 0xDEADBEEF}))
    steps += c2s(move("c2s", 0, 12.75, -3.25, 100.5, 359.99, 45.0))
    steps += s2c(pdu("s2c", {"opcode": 0x02, "oid": 7, "model": 1, "model_item": 0x811}))
    steps += s2c(pdu("s2c", {"opcode": 0x02, "oid": 8, "model": 0, "model_meta": 3}))
    steps += s2c(move("s2c", 7, -1000.5, 64.0, 0.00390625, 180.0, 0.0))
    steps += s2c(pdu("s2c", {"opcode": 0x05, "oid": 8, "meta_type": 0, "color_r": 255, "color_g": 128,
                             "color_b": 0, "color_glow": 40}))
    steps += s2c(pdu("s2c", {"opcode": 0x05, "oid": 8, "meta_type": 1, "animation": 6}))
    steps += s2c(pdu("s2c", {"opcode": 0x05, "oid": 8, "meta_type": 2, "item": 0x813, "slot": 5}))
    steps += c2s(pdu("c2s", {"opcode": 0x05, "oid": 0, "meta_type": 2, "item": 0x030, "slot": 0xB}))
    steps += c2s(pdu("c2s", {"opcode": 0x07, "action": 1, "interaction": 0xA, "oid": 8, "block_x": -5,
                             "block_y": 70, "block_z": 123456, "item": 0x811}))
    steps += c2s(pdu("c2s", {"opcode": 0x07, "action": 0, "interaction": 0xC, "oid": 0, "block_x": 3,
                             "block_y": -2, "block_z": 9, "item": 0x800}))
    steps += s2c(pdu("s2c", {"opcode": 0x08, "mode": 3, "cookie": 77}))
    steps += c2s(pdu("c2s", {"opcode": 0x09, "mode": 2, "send_cookie": 77, "recv_cookie": 0, "send_slot": 12,
                             "recv_slot": 3}))
    steps += c2s(pdu("c2s", {"opcode": 0x08, "mode": 0, "cookie": 77}))
    steps += c2s(pdu("c2s", {"opcode": 0x11, "chunk_x": -1048576, "chunk_y": 262143, "chunk_z": 5, "block_x": 15,
                             "block_y": 0, "block_z": 7, "block_nibble": 0, "block": 0x13}))
    steps += s2c(pdu("s2c", {"opcode": 0x11, "chunk_x": 1048575, "chunk_y": -262144, "chunk_z": -1,
                             "block_x": 1, "block_y": 2, "block_z": 3, "block_nibble": 0, "block": 0x7C}))
    effects = [
        {"mode": 0, "block_x": 10, "block_y": -20, "block_z": 30, "progress": 5},
        {"mode": 1, "weather": 0},
        {"mode": 1, "weather": 1, "day_time": 0x40000000},
        {"mode": 1, "weather": 2, "day_time": 0xC0000000},
        {"mode": 1, "weather": 3, "day_sky_r": 100, "day_sky_g": 150, "day_sky_b": 255, "night_sky_b": 40,
         "dusk_sky_r": 255, "dusk_sky_g": 120, "dusk_sky_a": 200},
        {"mode": 1, "weather": 4, "sunlight_r": 255, "sunlight_g": 250, "sunlight_b": 230, "artificial_r": 255,
         "ambient_b": 20},
        {"mode": 1, "weather": 5, "fog_r": 200, "fog_g": 200, "fog_b": 210, "density": 3, "interpolation": 25},
        {"mode": 2, "x": 256 * 5, "y": -256 * 3 - 128, "z": 64, "look_r": 255, "look_g": 100, "look_scale": 4},
        {"mode": 3, "x": 1, "y": 2, "z": 3, "look_r": 90, "look_g": 90, "look_b": 90, "look_scale": 1},
        {"mode": 4, "x": -1, "y": -2, "z": -3, "look_b": 255, "look_scale": 2},
    ]
    steps += s2c(*(pdu("s2c", {"opcode": 0x12, **e}) for e in effects))
    steps += s2c(pdu("s2c", {"opcode": 0x04, "oid": 7}))
    steps += s2c(*message("s2c", 9, 0, "bob: hello alice!"))
    steps += c2s(*message("c2s", 3, 0, "hi bob"))
    steps += s2c(*message("s2c", 10, 7, "alice has left"))
    steps += c2s(*message("c2s", 4, 5, "LEAVE going to bed"))
    steps += c2s(pdu("c2s", {"opcode": 0x00}))
    steps += s2c(pdu("s2c", {"opcode": 0x00}))
    return steps


def segmentation() -> list:
    """PDUs coalesced several to a send, split across sends, and larger than one segment (MTU 1500)."""
    steps = c2s(b"".join(message("c2s", 1, 5, "LOGIN bob hunter2")
                         + [move("c2s", 0, 1.0, 2.0, 3.0), move("c2s", 0, 1.5, 2.0, 3.0)]))
    chunks = b"".join(world_chunk(x, 0, 0, x) for x in range(5))          # 5165 bytes: 4 segments
    steps += s2c(chunks)
    whole = world_chunk(9, 9, 9, 9)
    steps += s2c(whole[:3], whole[3:500], whole[500:])                    # one PDU over three sends
    ping = pdu("s2c", {"opcode": 0x01, "cookie": 42})
    steps += s2c(ping[:1], ping[1:] + move("s2c", 3, 4.0, 5.0, 6.0)[:10])
    steps += s2c(move("s2c", 3, 4.0, 5.0, 6.0)[10:] + pdu("s2c", {"opcode": 0x04, "oid": 3}))
    msg = message("c2s", 2, 0, "a message split in the middle of its chunk, sent in two halves")
    steps += c2s(msg[0][:30], msg[0][30:])
    steps += c2s(b"".join(move("c2s", 0, i / 4, 0.0, 0.0, i * 10.0) for i in range(80)))   # 1680 bytes
    steps += s2c(*message("s2c", 1, 5, "LEAVE server restart"), pdu("s2c", {"opcode": 0x00}))
    return steps


def server_info() -> list:
    return (c2s(*message("c2s", 0x1000, 5, "INFO"))
            + s2c(*message("s2c", 0x2000, 5, "INFO 32;5;+01:00;Welcome to the Rutentoy test server — "
                                             "be nice, build things, and mind the lava;no extra;"))
            + [("close", "s2c")])


def login_texture() -> list:
    """Login with a client texture upload (server lacks it), then a server-to-client texture exchange."""
    mine = image(32, 1)
    theirs = image(16, 2, alpha=False)
    steps = c2s(*message("c2s", 1, 5, "LOGIN carol pass with spaces"))
    steps += c2s(*message("c2s", 2, 5, f"HASTEX {digest(mine)}"))
    steps += s2c(*message("s2c", 1, 5, "HAVETEX 0"))
    steps += c2s(*texture("c2s", 0, 0x7E57, mine))
    steps += s2c(world_chunk(0, 0, 0, 3), pdu("s2c", {"opcode": 0x02, "oid": 0, "model": 0}),
                 move("s2c", 0, 4.0, 8.0, 4.0))
    steps += s2c(pdu("s2c", {"opcode": 0x02, "oid": 5, "model": 0}))
    steps += s2c(*message("s2c", 2, 5, f"HASTEX {digest(theirs)}"))
    steps += c2s(*message("c2s", 3, 5, "HAVETEX 0"))
    steps += s2c(*texture("s2c", 5, 0xBEEF, theirs))                      # 04 = texture chunk here
    steps += s2c(pdu("s2c", {"opcode": 0x04, "oid": 5}))                  # and Object Delete again after
    steps += s2c(*message("s2c", 3, 5, f"HASTEX {digest(theirs)}"))
    steps += c2s(*message("c2s", 4, 5, "HAVETEX 1"))
    steps += s2c(pdu("s2c", {"opcode": 0x04, "oid": 6}))
    return steps


def slow_client() -> list:
    """A client on a slow link (recorded with a small receive buffer, read slowly): the server's world, 16 chunks
    in one send, then a large texture in one send."""
    big = image(128, 7)
    steps = c2s(*message("c2s", 1, 5, "LOGIN dave slow-link"))
    steps += s2c(*message("s2c", 2, 5, f"HASTEX {digest(big)}"))
    steps += c2s(*message("c2s", 3, 5, "HAVETEX 0"))
    steps += [("s2c", b"".join(world_chunk(x, 0, z, 8 * x + z) for x in range(4) for z in range(4)))]
    steps += [("s2c", b"".join(texture("s2c", 5, 0xB16, big)))]
    steps += s2c(pdu("s2c", {"opcode": 0x04, "oid": 6}))
    return steps


def messages() -> list:
    """Multi-chunk messages (UTF-8 split inside code points), two interleaved, every channel."""
    long_text = "Ünïcödé → " + "日本語のテキスト" * 6 + " 🎉🎉🎉 end"
    a = message("s2c", 100, 0, long_text)
    b = message("s2c", 101, 2, "Announcement: " + "x" * 150)
    steps = []
    for i in range(max(len(a), len(b))):                                  # interleaved chunk by chunk
        steps += s2c(*a[i:i + 1], *b[i:i + 1])
    for ch in (1, 3, 4, 6, 7, 42):
        steps += s2c(*message("s2c", 200 + ch, ch, f"channel {ch} text"))
    steps += s2c(*message("s2c", 300, 4, ""))                             # an empty Timer message clears it
    steps += c2s(b"".join(message("c2s", 5, 0, "client chat " * 20)))   # 4 chunks in one send
    steps += c2s(*message("c2s", 6, 6, "plugin: {\"bot\": true}"))
    return steps


def bad() -> list:
    """Bad input: oversized texture, a QOI that does not decode, a digest mismatch, unknown IDs, a message that
    never ends, then 0A GUI Items from the client (the client direction stops) and an unknown server opcode."""
    big = bytearray(image(16, 3))
    big[4:12] = (256).to_bytes(4, "big") * 2                              # claims 256x256
    broken = image(16, 4)[:-40] + bytes(8)                                # pixel stream cut short
    odd = bytearray(image(16, 5))
    odd[4:8] = (24).to_bytes(4, "big")                                    # 24 wide: not a power of two
    steps = c2s(*message("c2s", 1, 5, "LOGIN mallory x"))
    steps += c2s(*message("c2s", 2, 5, "HASTEX 00000000"))
    steps += s2c(*message("s2c", 1, 5, "HAVETEX 0"))
    steps += c2s(*texture("c2s", 0, 1, bytes(big)))
    steps += c2s(*texture("c2s", 0, 2, broken))
    steps += c2s(*texture("c2s", 0, 3, bytes(odd)))
    steps += c2s(*message("c2s", 3, 5, "INFO many;5;x;y;"))              # not a number
    chunk = world_chunk(1, 1, 1, 7)
    steps += s2c(chunk[:9 + 100] + bytes([0x7F]) + chunk[110:])           # an unknown block ID
    steps += s2c(pdu("s2c", {"opcode": 0x11, "block_nibble": 0xF, "block": 0xFF}))
    steps += c2s(pdu("c2s", {"opcode": 0x07, "interaction": 0xD}))
    steps += s2c(pdu("s2c", {"opcode": 0x05, "oid": 1, "meta_type": 9, "meta_data": 0x12345678}))
    steps += s2c(pdu("s2c", {"opcode": 0x05, "oid": 1, "meta_type": 2, "item": 0xABC, "slot": 0xE}))
    steps += c2s(pdu("c2s", {"opcode": 0x12, "mode": 7, "effect_data": bytes(16)}))   # server packet, from client
    endless = message("s2c", 0xE0D1E55, 0, "never ends " * 1700, final=False)   # > 16 KiB, no final chunk
    steps += s2c(b"".join(endless))
    steps += c2s(bytes([0x0A]) + bytes(20))                               # GUI Items: no layout
    steps += c2s(move("c2s", 0, 1.0, 1.0, 1.0))                           # shown undecoded
    steps += s2c(pdu("s2c", {"opcode": 0x01, "cookie": 5}))               # the server direction goes on
    steps += s2c(bytes([0x33, 1, 2, 3]))                                  # unknown opcode: stops it
    steps += s2c(pdu("s2c", {"opcode": 0x01, "cookie": 6}))
    return steps


def struct_numbering() -> list:
    """A session using the structs' opcode defaults (Move 02, Create 03, Texture 05, Metadata 06, Message 0a):
    recognised automatically (0a frames as Message only in that numbering)."""
    n = "struct"
    tex = image(8, 6)
    steps = c2s(*message("c2s", 1, 5, "LOGIN dave pw", n))
    steps += c2s(*message("c2s", 2, 5, f"HASTEX {digest(tex)}", n))
    steps += s2c(*message("s2c", 1, 5, "HAVETEX 0", n))
    steps += c2s(*texture("c2s", 0, 9, tex, n))
    steps += s2c(pdu("s2c", {"opcode": 0x03, "oid": 0, "model": 0}, n))
    steps += s2c(move("s2c", 0, 1.0, 2.0, 3.0, 45.0, 0.0, n))
    steps += s2c(pdu("s2c", {"opcode": 0x06, "oid": 0, "meta_type": 1, "animation": 1}, n))
    steps += s2c(pdu("s2c", {"opcode": 0x04, "oid": 0}, n))
    steps += c2s(move("c2s", 0, 1.0, 2.5, 3.0, 50.0, 5.0, n))
    return steps


SESSIONS = {
    "rutentoy-every-opcode.pcap": (every_opcode, 40001),
    "rutentoy-segmentation.pcap": (segmentation, 40002),
    "rutentoy-server-info.pcap": (server_info, 40003),
    "rutentoy-login-texture.pcap": (login_texture, 40004),
    "rutentoy-messages.pcap": (messages, 40005),
    "rutentoy-bad.pcap": (bad, 40006),
    "rutentoy-struct-numbering.pcap": (struct_numbering, 40007),
    "rutentoy-mptcp.pcap": (login_texture, 40011),
}


# Multipath TCP (RFC 8684, the kernel's in-kernel path manager): both ends in one namespace, so both announce
# 127.0.0.2 (ADD_ADDR) and both try to join it (MP_JOIN); the server's join is refused (nothing listens on the
# client's port: RST), the client's is accepted. The endpoint is a backup one, so the data stays on the first
# subflow and the Rutentoy stream is whole there.
# sessions recorded over a lossy link (the percentage of segments dropped: tools/netns_record.py), as the
# session's recovery shows it, or to a slow reader
LINKS = {"rutentoy-lossy.pcap": (every_opcode, 40001, dict(drop=25)),
         "rutentoy-lossy-close.pcap": (struct_numbering, 40007, dict(drop=25)),
         "rutentoy-lossy-v6.pcap": (server_info, 40003, dict(drop=20, server_addr="::1", linktype="cooked2")),
         # a slow client (a 4 KiB receive buffer read every 0.4 s): the window fills, zero windows and their
         # probes (tshark 4.0 calls them keep-alives), window updates, a retransmission in a full window, frames
         # that end one PDU and hold another behind TCP's analysis tags
         "rutentoy-slow-reader.pcap": (slow_client, 40012, dict(slow_reader=(4096, 20000, 0.4)))}

MPTCP = {"rutentoy-mptcp.pcap": ["limits set subflows 2 add_addr_accepted 2",
                                 "endpoint add 127.0.0.2 dev lo id 2 signal backup"]}


def record(name: str) -> None:
    from netns_record import record_tcp
    if name in LINKS:
        make, client_port, link = LINKS[name]
        record_tcp(make(), str(CAPTURES / name), server_port=PORT, client_port=client_port, timeout=120, **link)
        return
    make, client_port = SESSIONS[name]
    record_tcp(make(), str(CAPTURES / name), server_port=PORT, client_port=client_port, mptcp=MPTCP.get(name))


# --- the lost / reordered capture: a recording edited -------------------------------------------------------------

def recorded(make, client_port: int):
    """Record a session into memory: its frames [(ts, bytes)], link type, and the indexes of the frames
    carrying data (client->server, server->client)."""
    import dpkt
    from netns_record import record_tcp
    tmp = CAPTURES / f".tmp-{client_port}.pcap"
    record_tcp(make(), str(tmp), server_port=PORT, client_port=client_port)
    with open(tmp, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        frames, linktype = list(reader), reader.datalink()
    tmp.unlink()
    data = {True: [], False: []}
    for i, (_, buf) in enumerate(frames):
        tcp = dpkt.ethernet.Ethernet(buf).data.data
        if len(tcp.data):
            data[tcp.dport == PORT].append(i)
    return frames, linktype, data[True], data[False]


def write_edited(name: str, frames, linktype: int, order: list[int]) -> None:
    """The frames in `order` (dropped ones left out), with the original timestamps in sequence."""
    import dpkt
    times = sorted(ts for ts, _ in frames)
    with open(CAPTURES / name, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=linktype)
        for ts, i in zip(times, order):
            writer.writepkt(frames[i][1], ts)


def lost_reordered(name="rutentoy-lost-reordered.pcap") -> None:
    """The segmentation session recorded, then one client->server data segment dropped and two later
    server->client data segments swapped (the kernel has no netem)."""
    frames, linktype, client, server = recorded(segmentation, 40008)
    drop = client[1]                      # the second client data segment (moves) is lost
    a, b = server[2], server[3]           # two server segments of the 5-chunk burst arrive swapped
    order = [i for i in range(len(frames)) if i != drop]
    ia, ib = order.index(a), order.index(b)
    order[ia], order[ib] = order[ib], order[ia]
    write_edited(name, frames, linktype, order)


def midstream(name="rutentoy-midstream.pcap") -> None:
    """The login-texture session captured from its second texture chunk on: no handshake, no login, the image
    incomplete; the rest (a server-to-client texture exchange) decodes."""
    frames, linktype, client, _ = recorded(login_texture, 40010)
    write_edited(name, frames, linktype, list(range(client[3], len(frames))))


# --- SCTP: frames built by the encoder (this kernel has no SCTP) ---------------------------------------------------

def sctp(name="rutentoy-sctp.pcap") -> None:
    """A login with texture uploads both ways over one SCTP association: several DATA chunks per packet,
    several PDUs per DATA chunk, PDUs on two streams, a World Chunk fragmented over two DATA chunks."""
    from sctp_frames import BEGIN, END, Association, data
    a = Association(client=("10.0.0.1", 40009), server=("10.0.0.2", PORT))
    a.handshake()
    mine, theirs = image(16, 11), image(8, 12, alpha=False)
    for p in message("c2s", 1, 5, "LOGIN erin over sctp") + message("c2s", 2, 5, f"HASTEX {digest(mine)}"):
        a.send("c2s", [data(p, sid=0)])
    a.send("s2c", [data(message("s2c", 1, 5, "HAVETEX 0")[0], sid=0)])
    chunks = texture("c2s", 0, 0x51, mine)
    for i in range(0, len(chunks), 2):                                   # two DATA chunks per packet
        a.send("c2s", [data(p, sid=1) for p in chunks[i:i + 2]])
    a.sack("c2s")
    whole = world_chunk(2, 0, -2, 13)
    a.send("s2c", [data(whole[:600], sid=0, flags=BEGIN)])
    a.send("s2c", [data(whole[600:], sid=0, flags=END)])
    a.send("s2c", [data(pdu("s2c", {"opcode": 0x02, "oid": 0, "model": 0}) + move("s2c", 0, 2.0, 3.0, 4.0), sid=0),
                   data(pdu("s2c", {"opcode": 0x01, "cookie": 99}), sid=1)])
    a.send("c2s", [data(pdu("c2s", {"opcode": 0x01, "cookie": 99}), sid=1)])
    a.send("s2c", [data(p, sid=0) for p in message("s2c", 2, 5, f"HASTEX {digest(theirs)}")])
    a.send("c2s", [data(message("c2s", 3, 5, "HAVETEX 0")[0], sid=0)])
    a.send("s2c", [data(b"".join(texture("s2c", 7, 0x52, theirs)), sid=1)])
    a.send("s2c", [data(pdu("s2c", {"opcode": 0x04, "oid": 7}), sid=1)])
    long_a, long_b = message("s2c", 10, 0, "ßβ" * 70), message("s2c", 11, 7, "system " * 20)
    a.send("s2c", [data(p, sid=0) for pair in zip_longest(long_a, long_b) for p in pair if p is not None])
    a.sack("s2c")
    a.send("c2s", [data(b"".join(message("c2s", 4, 5, "LEAVE done")) + pdu("c2s", {"opcode": 0x00}), sid=0)])
    a.sack("c2s")
    a.shutdown()
    a.write(str(CAPTURES / name))


def golden(name: str) -> None:
    out = CAPTURES / "golden"
    with open(out / f"{name}.txt", "wb") as f:
        subprocess.run(["protodump", "-V", name], cwd=CAPTURES, stdout=f, check=True)
    with open(out / f"{name}.json", "wb") as f:
        subprocess.run(["protodump", "-T", "json", name], cwd=CAPTURES, stdout=f, check=True)


EDITED = {"rutentoy-lost-reordered.pcap": lost_reordered, "rutentoy-midstream.pcap": midstream,
          "rutentoy-sctp.pcap": sctp}
ALL = [*SESSIONS, *LINKS, *EDITED]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--golden", action="store_true", help="only rewrite the golden outputs")
    ap.add_argument("names", nargs="*", help=f"captures to make (default all): {', '.join(ALL)}")
    args = ap.parse_args(argv)
    for name in args.names or ALL:
        if not args.golden:
            if name in SESSIONS or name in LINKS:
                record(name)
            else:
                EDITED[name](name)
        golden(name)
        print(name)


if __name__ == "__main__":
    main()
