#!/usr/bin/env python3
"""Make Iceball captures over real loopback sockets (port 20737) and their goldens: TCP through
tools/netns_record.py, ENet through two libenet hosts (the pyenet wheel) in a private network namespace.

Packets are built as the Iceball implementation builds them (common.net_pack with the pack strings of
pkg/base/network.lua, files zlib-compressed and sent in blocks of at most 1024 bytes), independently of
protodump's tables, so the captures test the tables rather than echo them.

    python tools/make_iceball_captures.py            # record the captures into captures/, then the goldens
    python tools/make_iceball_captures.py --golden   # goldens only
"""
from __future__ import annotations

import json
import os
import struct
import time
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
PORT = 20737
CLIENT_PORT = 40737
NAMES = ("iceball-tcp-all.pcap", "iceball-tcp-bad.pcap", "iceball-enet-all.pcap", "iceball-tcp-port-30000.pcap",
         "iceball-enet-port-31000.pcap", "iceball-tcp-spec.pcap", "iceball-tcp-lossy.pcap",
         "iceball-tcp-slow-reader.pcap")
LOSSY_DROP = 25        # iceball-tcp-lossy: the percentage of segments dropped on input (tools/netns_record.py)
SLOW_READER = (2048, 4000, 0.25)    # iceball-tcp-slow-reader: the client's receive buffer, bytes per read, pause
OTHER_PORT, OTHER_ENET_PORT = 30000, 31000
CONNECT_DATA = 0x42454331

# Base-mod packet ids as implemented (KEEPALIVE inserted at 3).
IDS = {name: i + 1 for i, name in enumerate((
    "PING", "PONG", "KEEPALIVE", "PLR_POS", "PLR_ORIENT", "PLR_ADD", "PLR_ID", "PLR_RM", "BLK_ADD", "BLK_RM1",
    "BLK_RM3", "BLK_COLLAPSE", "CHAT_SEND", "CHAT_SEND_TEAM", "CHAT_ADD_TEXT", "CHAT_ADD_KILLFEED", "PLR_SPAWN",
    "PLR_OFFER", "ITEM_POS", "PLR_GUN_HIT", "PLR_DAMAGE", "PLR_RESTOCK", "ITEM_CARRIER", "PLR_TOOL",
    "PLR_BLK_COLOR", "PLR_BLK_COUNT", "PLR_GUN_TRACER", "NADE_THROW", "MAP_RCIRC", "PLR_GUN_RELOAD",
    "CHAT_SEND_SQUAD", "TEAM_SCORE", "BLK_DAMAGE", "PIANO", "NADE_PIN", "BUILD_BOX", "PLR_GUN_SHOT", "NEW_MAP",
    "FOG_COLOR"))}


def spec_lua(name: str, fmt: str = "", *values) -> bytes:
    """A base-mod packet as the spec numbers it (no KEEPALIVE: ids from 3 one lower), framed for TCP."""
    spec_id = IDS[name] if IDS[name] < 3 else IDS[name] - 1
    return raw_lua(bytes([spec_id]) + net_pack(fmt, *values))


def net_pack(fmt: str, *values) -> bytes:
    """Iceball's common.net_pack: b/B h/H i/I f little-endian, z a NUL-terminated string."""
    out = bytearray()
    for code, value in zip(fmt, values):
        if code == "z":
            out += value.encode() + b"\0"
        else:
            out += struct.pack("<" + code, value)
    return bytes(out)


def lua(name: str, fmt: str = "", *values) -> bytes:
    """A base-mod packet framed for TCP: 0x3F + len for 1..63 bytes, else 0x7F len.u16."""
    body = bytes([IDS[name]]) + net_pack(fmt, *values)
    return raw_lua(body)


def raw_lua(body: bytes) -> bytes:
    if 1 <= len(body) <= 63:
        return bytes([0x3F + len(body)]) + body
    return b"\x7f" + struct.pack("<H", len(body)) + body


def counted(code: int, text: bytes, prefix: bytes = b"") -> bytes:
    return bytes([code]) + prefix + bytes([len(text)]) + text + b"\0"


def file_transfer(content: bytes, *, block: int = 1024, compressed: bytes | None = None) -> list[bytes]:
    """0x31 clen ulen, every 0x33 block, 0x32: as the server sends a requested file."""
    data = zlib.compress(content, 9) if compressed is None else compressed
    out = [b"\x31" + struct.pack("<II", len(data), len(content))]
    for at in range(0, len(data), block):
        piece = data[at:at + block]
        out.append(b"\x33" + struct.pack("<IH", at, len(piece)) + piece)
    out.append(b"\x32")
    return out


# --- file contents ---------------------------------------------------------------------------------------------------

LUA_FILE = ("-- main_client.lua\n\tprint(\"héllo → iceball\")\r\nlocal t = { 1, 2, 3 }\n"
            + "".join(f"function f{i}() return {i} end\n" for i in range(150))).encode()
JSON_FILE = b'{"mode": "ctf", "teams": ["Blue Master Race", "Green Bastards"], "limits": {"score": 10}}\n'


def icemap(x: int, y: int, z: int) -> bytes:
    body = bytearray()
    for i in range(x * z):                 # one column span per cell: (n, s, e, a) + colours, roughly as real maps
        body += bytes([0, 20 + i % 7, 20 + i % 7, 0]) + bytes([i % 256, 40, 80, 1])
    section = struct.pack("<HHH", x, y, z) + bytes(body)
    return b"IceMap\x1a\x01" + b"MapData\xff" + struct.pack("<I", len(section)) + section + b"       \x00"


def tga(width: int, height: int) -> bytes:
    head = struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, width, height, 32, 0x28)
    return head + bytes((i * 7) % 256 for i in range(width * height * 4))


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes((x * 30 + y) % 256 for x in range(width * 3)) for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


# --- the sessions ----------------------------------------------------------------------------------------------------

def request(flags: int, name: str) -> tuple[str, bytes]:
    return ("c2s", counted(0x30, name.encode(), bytes([flags])))


def s2c(*packets: bytes) -> tuple[str, bytes]:
    return ("s2c", b"".join(packets))


def c2s(*packets: bytes) -> tuple[str, bytes]:
    return ("c2s", b"".join(packets))


def all_session() -> list:
    """Every system packet but AUTH_ACK (it has no layout: a stream cannot be framed past it) and every base-mod
    packet in the directions the game sends it; every file type protodump looks inside; aborts both ways."""
    steps = [
        s2c(counted(0x0F, b"pkg/base")),
        c2s(b"\x10" + bytes(32) + struct.pack("<I", 1) + bytes([6]) + b"player\0"),
        request(3, "pkg/base/main_client.lua"), s2c(*file_transfer(LUA_FILE)),
        request(1, "*MODCFG"), s2c(*file_transfer(JSON_FILE)),
        request(4, "*MAP"), s2c(*file_transfer(icemap(64, 32, 64))),
        request(8, "pkg/base/gfx/font.tga"), s2c(*file_transfer(tga(16, 8))),
        request(12, "pkg/base/gfx/logo.png"), s2c(*file_transfer(png(8, 4))),
        request(11, "*FASTLOAD"), s2c(*file_transfer(bytes(range(256)) * 40)[:2], b"\x35"),   # server aborts
        request(3, "pkg/base/big.lua"), s2c(*file_transfer(LUA_FILE * 3, block=512)[:2]),
        c2s(b"\x34"),                                                                          # client aborts
        c2s(lua("PLR_OFFER", "bbz", -1, 1, "tcpbot"), lua("KEEPALIVE", "B", 0)),
        s2c(lua("FOG_COLOR", "BBB", 192, 238, 255),
            lua("PLR_ADD", "BBBBhhhzz", 1, 0, 1, 1, 5, 2, -1, "tcpbot", "alpha"),
            lua("PLR_SPAWN", "BfffBB", 1, 256.5, 30.0, 128.25, 64, 0),
            lua("PLR_ID", "B", 1), lua("PLR_TOOL", "BB", 1, 2), lua("PLR_BLK_COLOR", "BBBB", 1, 127, 10, 200),
            lua("ITEM_POS", "HhhhB", 1, 87, 76, 364, 1), lua("ITEM_CARRIER", "HB", 3, 1),
            lua("TEAM_SCORE", "bh", 0, 3), lua("TEAM_SCORE", "bh", 1, -2),
            lua("CHAT_ADD_TEXT", "Iz", 0xFF800000, "* Player tcpbot has joined the Blue Master Race team")),
        c2s(lua("CHAT_SEND", "z", "hello over tcp"), lua("CHAT_SEND_TEAM", "z", "team only"),
            lua("CHAT_SEND_SQUAD", "z", "squad ünïcode ✓")),
        s2c(lua("CHAT_ADD_TEXT", "Iz", 0xFFFFFFFF, "tcpbot (Blue Master Race): hello over tcp"),
            lua("CHAT_ADD_KILLFEED", "Iz", 0xFFFF0000, "tcpbot killed himself"),
            lua("CHAT_ADD_TEXT", "Iz", 0xFFDDDDFF, "a long server message " * 12)),          # 0x7F framing
        c2s(lua("PING", "H", 4660), lua("PONG", "H", 4661),
            lua("PLR_POS", "Bffffff", 0, 257.0, 30.5, 256.5, 1.0, 0.0, -0.5),
            lua("PLR_ORIENT", "BbbB", 0, -64, 32, 0x41)),
        s2c(lua("PING", "H", 100), lua("PLR_POS", "Bffffff", 2, 10.0, 20.0, 30.0, 0.0, 0.0, 0.0),
            lua("PLR_ORIENT", "BbbB", 2, 127, -128, 0x9A)),
        c2s(lua("BLK_ADD", "HHHBBBB", 10, 20, 30, 255, 128, 0, 1), lua("BLK_RM1", "HHH", 11, 21, 31),
            lua("BLK_RM3", "HHH", 12, 22, 32), lua("BLK_COLLAPSE", "HHH", 13, 23, 33),
            lua("BLK_DAMAGE", "HHHH", 14, 24, 34, 50)),
        s2c(lua("BLK_ADD", "HHHBBBB", 10, 20, 30, 255, 128, 0, 1), lua("BLK_RM1", "HHH", 11, 21, 31),
            lua("BLK_DAMAGE", "HHHH", 14, 24, 34, 50)),
        c2s(lua("PLR_GUN_HIT", "BB", 2, 1), lua("PLR_TOOL", "BB", 0, 3), lua("PLR_BLK_COLOR", "BBBB", 0, 1, 2, 3),
            lua("NADE_THROW", "hhhhhhH", 8224, 960, 8192, 256, -128, 512, 300), lua("PLR_GUN_RELOAD"),
            lua("NADE_PIN"), lua("PLR_GUN_SHOT", "BB", 0, 1),
            lua("BUILD_BOX", "BhhhhhhBBBB", 1, 1, 2, 3, 10, 12, 14, 200, 100, 50, 1)),
        s2c(lua("PLR_DAMAGE", "BB", 2, 70), lua("PLR_RESTOCK", "B", 1), lua("PLR_BLK_COUNT", "BH", 1, 300),
            lua("PLR_GUN_TRACER", "B", 2), lua("NADE_THROW", "BhhhhhhH", 2, 8224, 960, 8192, 256, -128, 512, 300),
            lua("MAP_RCIRC"), lua("PLR_GUN_RELOAD", "B", 2), lua("PIANO", "B", 2), lua("NADE_PIN", "B", 2),
            lua("BUILD_BOX", "BhhhhhhBBBB", 3, 1, 2, 3, 10, 12, 14, 200, 100, 50, 1),
            lua("NEW_MAP", "z", "*MAP"), lua("PLR_RM", "B", 2)),
        c2s(counted(0x17, b"bye")),
    ]
    return steps


def shuffled_transfer(content: bytes) -> list[bytes]:
    """A transfer whose blocks come out of order, one again later with other bytes, and one overlapping an
    arrived block (other bytes there) and one still to come (right bytes there): the first copy of a byte wins,
    so the file still inflates."""
    data = zlib.compress(content, 9)
    start, *blocks, end = file_transfer(content, block=16)
    damaged = blocks[1][:7] + bytes(len(blocks[1]) - 7)                       # offset 16, after the real one
    overlap = b"\x33" + struct.pack("<IH", 24, 16) + bytes(8) + data[32:40]   # 24..32 lose, 32..40 come first
    rest = [b for i, b in enumerate(blocks) if i != 1][::-1]
    return [start, blocks[1], damaged, overlap, *rest, end]


def bad_session() -> list:
    """Bad input, each an expert item, the stream still framed: unknown Lua ids, trailing bytes, a block past
    clen, a file that does not inflate, a transfer nobody asked for, blocks and ends with no transfer, an
    over-long block; then an unknown system id, after which that direction cannot be framed."""
    bad_zlib = b"\x78\x9c" + bytes(range(40))
    return [
        s2c(counted(0x0F, b"pkg/base")),
        c2s(raw_lua(bytes([45, 1, 2, 3])), raw_lua(bytes([0])), raw_lua(bytes([IDS["PLR_ID"], 1, 9, 9]))),
        s2c(raw_lua(bytes([IDS["CHAT_ADD_TEXT"], 1, 2])),                      # truncated: colour cut short
            raw_lua(bytes([IDS["PLR_ORIENT"], 1]))),
        request(3, "past.lua"),
        s2c(b"\x31" + struct.pack("<II", 100, 400), b"\x33" + struct.pack("<IH", 90, 20) + bytes(20), b"\x32"),
        request(1, "corrupt.json"), s2c(*file_transfer(b"", compressed=bad_zlib)),
        s2c(*file_transfer(JSON_FILE)),                                         # no request
        s2c(b"\x33" + struct.pack("<IH", 0, 4) + b"abcd", b"\x32", b"\x35"),   # no transfer active
        request(1, "shuffled.json"), s2c(*shuffled_transfer(JSON_FILE * 3)),
        request(3, "huge.lua"), s2c(b"\x31" + struct.pack("<II", 2000, 4000),
                                     b"\x33" + struct.pack("<IH", 0, 1500) + bytes(1500), b"\x32"),
        c2s(b"\x34", lua("CHAT_SEND_TEAM", "z", "still framed")),
        s2c(b"\x20\x01\x02\x03", lua("PLR_ID", "B", 1)),                       # unknown system id: stops
    ]


# --- over ENet -------------------------------------------------------------------------------------------------------

def enet_session() -> list[tuple[str, int, bytes, bool]]:
    """(sender, channel, message, reliable): system packets on channel 1 (reliable), base-mod packets on
    channel 0 with no framing byte (the client's keep-alive and positions unreliable); a message larger than
    the MTU (ENet fragments it); three files, one of them large."""
    def body(name, fmt="", *values):
        return bytes([IDS[name]]) + net_pack(fmt, *values)
    steps = [("client", 0, body("KEEPALIVE", "B", 0), False),
             ("server", 1, counted(0x0F, b"pkg/base"), True),
             ("client", 1, counted(0x30, b"pkg/base/main_client.lua", b"\x03"), True),
             *(("server", 1, p, True) for p in file_transfer(LUA_FILE)),
             ("client", 1, counted(0x30, b"*MAP", b"\x04"), True),
             *(("server", 1, p, True) for p in file_transfer(icemap(96, 64, 96))),
             ("client", 1, counted(0x30, b"pkg/base/gfx/font.tga", b"\x08"), True),
             *(("server", 1, p, True) for p in file_transfer(tga(32, 16))),
             ("client", 0, body("PLR_OFFER", "bbz", -1, 1, "enetbot"), True),
             ("server", 0, body("PLR_ADD", "BBBBhhhzz", 1, 1, 1, 1, 0, 0, 0, "enetbot", ""), True),
             ("server", 0, body("PLR_SPAWN", "BfffBB", 1, 100.5, 40.0, 200.25, 192, 0), True),
             ("server", 0, body("PLR_ID", "B", 1), True),
             ("client", 0, body("CHAT_SEND_TEAM", "z", "team only"), True),
             ("server", 0, body("CHAT_ADD_TEXT", "Iz", 0xFF00C000, "enetbot: team only"), True),
             ("server", 0, body("CHAT_ADD_TEXT", "Iz", 0xFFDDDDFF, "a message longer than one datagram " * 60),
              True),
             ("client", 0, body("PLR_POS", "Bffffff", 0, 100.5, 40.0, 200.5, 0.0, 0.0, 1.0), False),
             ("client", 0, body("PLR_ORIENT", "BbbB", 0, 64, -10, 0x01), False),
             ("client", 0, body("NADE_THROW", "hhhhhhH", 3216, 1280, 6416, 100, -50, 300, 250), True),
             ("server", 0, body("NADE_THROW", "BhhhhhhH", 1, 3216, 1280, 6416, 100, -50, 300, 250), True),
             ("client", 0, body("BLK_ADD", "HHHBBBB", 100, 41, 200, 0, 0, 255, 1), True),
             ("server", 0, body("BLK_ADD", "HHHBBBB", 100, 41, 200, 0, 0, 255, 1), True),
             ("server", 0, body("PLR_BLK_COUNT", "BH", 1, 24), True),
             ("client", 1, counted(0x17, b"bye"), True)]
    return steps


def enet_other_port_session() -> list[tuple[str, int, bytes, bool]]:
    """ENet on a port nothing registers: found by ENet's heuristic, handed to Iceball by the connect data."""
    return [("server", 1, counted(0x0F, b"pkg/base"), True),
            ("client", 0, bytes([IDS["CHAT_SEND_TEAM"]]) + b"on port 31000\0", True),
            ("client", 1, counted(0x30, b"*MODCFG", b"\x01"), True),
            *(("server", 1, p, True) for p in file_transfer(JSON_FILE))]


def enet_traffic(steps, port: int = PORT) -> None:
    """Both hosts in this process, serviced in turn; every message is received before the next is sent."""
    import enet
    server = enet.Host(enet.Address(b"127.0.0.1", port), 4, 2, 0, 0)
    client = enet.Host(None, 1, 2, 0, 0)
    for host in (server, client):
        host.compress_with_range_coder()
    peers, received = {}, {"server": 0, "client": 0}

    def pump(rounds=1):
        for _ in range(rounds):
            for name, host in (("server", server), ("client", client)):
                event = host.service(2)
                while event is not None and event.type != enet.EVENT_TYPE_NONE:
                    if event.type == enet.EVENT_TYPE_CONNECT:
                        peers[name] = event.peer
                    elif event.type == enet.EVENT_TYPE_RECEIVE:
                        received[name] += 1
                    event = host.check_events()

    def until(done, limit=5.0):
        deadline = time.monotonic() + limit
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError("ENet exchange timed out")
            pump()
    client.connect(enet.Address(b"127.0.0.1", port), 2, CONNECT_DATA)
    until(lambda: len(peers) == 2)
    for sender, channel, message, reliable in steps:
        other = "client" if sender == "server" else "server"
        want = received[other] + 1
        peers[sender].send(channel, enet.Packet(message, enet.PACKET_FLAG_RELIABLE if reliable else 0))
        until(lambda: received[other] >= want)
        pump(3)
    peers["client"].disconnect(0)
    pump(20)


def record_enet(name: str, other_port: bool = False) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    import netns_record
    prefix = netns_record._unshare_prefix()
    if prefix is None:
        raise SystemExit("cannot create a network namespace (unshare -n)")
    spec = {"out": str(CAPTURES / name), "mtu": None, "offloads_off": True, "linktype": "ethernet", "nano": False,
            "proto": "udp", "other_port": other_port}
    subprocess.run([*prefix, sys.executable, os.path.abspath(__file__), "--inner"], input=json.dumps(spec).encode(),
                   check=True, timeout=120)


def inner(spec: dict) -> None:
    """Inside the namespace: lo up, tcpdump on, the ENet session, tcpdump off."""
    sys.path.insert(0, str(ROOT / "tools"))
    import netns_record
    with netns_record.recording(spec):
        if spec["other_port"]:
            enet_traffic(enet_other_port_session(), OTHER_ENET_PORT)
        else:
            enet_traffic(enet_session())


def other_port_session() -> list:
    """A short session on a port nothing registers: found by its first packet (BASE_DIR)."""
    return [s2c(counted(0x0F, b"pkg/base")), request(1, "*MODCFG"), s2c(*file_transfer(JSON_FILE)),
            c2s(lua("PLR_OFFER", "bbz", 1, 2, "elsewhere")), c2s(lua("CHAT_SEND_TEAM", "z", "on port 30000"))]


def spec_session() -> list:
    """A client and server following the spec document (decode with -o iceball.numbering:spec): its ids and
    its layouts (11.5 fixed-point positions, unsigned angles, one-byte block counts, no grenade thrower)."""
    return [s2c(counted(0x0F, b"pkg/base")),
            c2s(spec_lua("PLR_OFFER", "bBz", 0, 2, "specbot"), spec_lua("PING", "H", 7)),
            s2c(spec_lua("PONG", "H", 7), spec_lua("PLR_ADD", "BBBBhhhzz", 3, 0, 2, 1, 0, 0, 0, "specbot", ""),
                spec_lua("PLR_ID", "B", 3), spec_lua("PLR_SPAWN", "BfffBB", 3, 64.5, 20.0, 64.5, 128, 0),
                spec_lua("TEAM_SCORE", "BH", 1, 40000), spec_lua("PLR_BLK_COUNT", "BB", 3, 25)),
            c2s(spec_lua("PLR_POS", "Bhhh", 0, 2064, 640, 2064), spec_lua("PLR_ORIENT", "BBBB", 0, 200, 100, 0x05),
                spec_lua("CHAT_SEND_TEAM", "z", "spec team chat"), spec_lua("PLR_GUN_RELOAD", "B", 0),
                spec_lua("NADE_THROW", "hhhhhhH", 2064, 640, 2064, 256, 0, -256, 200),
                spec_lua("BLK_DAMAGE", "HHHH", 1, 2, 3, 4))]


def record(name: str, steps: list, port: int = PORT, drop: int = 0, slow_reader=None) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    from netns_record import available, record_tcp
    why = available()
    if why:
        raise SystemExit(f"cannot record: {why}")
    record_tcp(steps, str(CAPTURES / name), server_port=port, client_port=CLIENT_PORT, drop=drop, timeout=120,
               slow_reader=slow_reader)


def write_goldens() -> None:
    for name in NAMES:
        for suffix, args in ((".txt", ["-V"]), (".json", ["-T", "json"])):
            out = subprocess.run([sys.executable, "-c", "from protodump.cli.main import main; main()", *args, name],
                                 cwd=CAPTURES, capture_output=True, check=True).stdout
            (CAPTURES / "golden" / f"{name}{suffix}").write_bytes(out)


def main() -> None:
    if "--inner" in sys.argv:
        inner(json.load(sys.stdin))
        return
    if "--golden" not in sys.argv:
        record(NAMES[0], all_session())
        record(NAMES[1], bad_session())
        record_enet(NAMES[2])
        record(NAMES[3], other_port_session(), OTHER_PORT)
        record_enet(NAMES[4], other_port=True)
        record(NAMES[5], spec_session())
        record(NAMES[6], all_session(), drop=LOSSY_DROP)     # a lossy link: each recording loses other segments
        # a slow client: the window fills, zero windows, window updates, a retransmission with its RTO
        record(NAMES[7], all_session(), slow_reader=SLOW_READER)
    write_goldens()


if __name__ == "__main__":
    main()
