"""The Freeblox sessions that tools/make_freeblox_captures.py records (seeded: the same messages every run).

Each session: (steps, options) with steps [(side, kind, value)] as make_freeblox_captures.record takes them.
The messages are built by the Freeblox table's own encoder; the assets are real files of their formats (PNG,
QOI, glTF binary) except the JPEG, which is a header only (SOI, JFIF, SOF0, EOI: enough to show its size).
"""
from __future__ import annotations

import json
import random
import struct
import uuid
import zlib

import numpy
import qoi

from protodump.dissectors.freeblox import PROTOCOL

RNG = random.Random(5)


def uid() -> str:
    return str(uuid.UUID(int=RNG.getrandbits(128), version=4))


def msg(side: str, **values) -> tuple:
    return (side, "send", ("hex", PROTOCOL.encode(values).hex()))


def raw(side: str, data: bytes) -> tuple:
    return (side, "send", ("hex", data.hex()))


def png(width: int, height: int, noisy: bool) -> bytes:
    """A real RGB PNG; noisy pixels do not compress (a message over 100 KB)."""
    rows = b"".join(b"\0" + (RNG.randbytes(width * 3) if noisy else bytes([y % 256, 128, 64]) * width)
                    for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


def qoi_image(width: int, height: int) -> bytes:
    pixels = numpy.zeros((height, width, 4), dtype=numpy.uint8)
    pixels[:, :, 0] = numpy.arange(width, dtype=numpy.uint8)[None, :] * 8
    pixels[:, :, 3] = 255
    return qoi.encode(pixels)


def jpeg_header(width: int, height: int) -> bytes:
    app0 = b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"
    sof0 = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", len(app0) + 2) + app0
            + b"\xff\xc0" + struct.pack(">H", len(sof0) + 2) + sof0 + b"\xff\xd9")


def glb() -> bytes:
    doc = json.dumps({"asset": {"version": "2.0"}, "meshes": [{"name": "crate"}]}).encode()
    doc += b" " * (-len(doc) % 4)
    body = struct.pack("<I4s", len(doc), b"JSON") + doc
    return b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body


ALICE, BOB, CAROL = uid(), uid(), uid()
WORLD, BASEPLATE, CRATE, CHARACTER = uid(), uid(), uid(), uid()


def game(big: bool = True) -> list:
    """Every packet type, in the order a session has them."""
    steps = [
        msg("c2s", id=0, player_uuid=ALICE, session_token="sess-7f3a9c", client_version=3),
        msg("s2c", id=1), msg("c2s", id=1),
        msg("s2c", id=2, world_name="Tutorial Island"),
        msg("s2c", id=3, asset_path=f"assets/{uid()}", asset_name="grass", asset_type="Texture",
            buffer=png(16, 16, False)),
    ]
    if big:
        steps.append(msg("s2c", id=3, asset_path=f"assets/{uid()}", asset_name="noise", asset_type="Texture",
                         buffer=png(200, 180, True)))
    steps += [
        msg("s2c", id=3, asset_path=f"assets/{uid()}", asset_name="sky", asset_type="CubeTexture",
            buffer=qoi_image(32, 32)),
        msg("s2c", id=3, asset_path=f"assets/{uid()}", asset_name="photo", asset_type="Texture",
            buffer=jpeg_header(640, 480)),
        msg("s2c", id=3, asset_path=f"assets/{uid()}", asset_name="crate", asset_type="Mesh", buffer=glb()),
        msg("s2c", id=4, object_uuid=BASEPLATE, parent_uuid=WORLD, object_type="Part",
            data=json.dumps({"name": "Baseplate", "position": [0, -1, 0], "anchored": True, "color": None,
                             "tags": ["floor"], "size": {"x": 512, "y": 1.5, "z": 512}})),
        msg("s2c", id=4, object_uuid=CRATE, parent_uuid=BASEPLATE, object_type="Model",
            data='{"name": "Crate \\u00e9", "mass": -2.5e-1}'),
        msg("s2c", id=6, object_uuid=CRATE, event="Touched", event_data=json.dumps({"by": ALICE})),
        msg("s2c", id=8, object_uuid=CRATE, position=(1.5, 2.0, -3.25), rotation=(0.0, 0.70710677, 0.0, 0.70710677),
            linear_velocity=(0.0, -9.75, 0.0), angular_velocity=(0.5, 0.0, 0.0)),
        msg("s2c", id=7, world_name="Tutorial Island"),
        msg("s2c", id=10, count=3, players=[{"player_uuid": u, "player_name": n}
                                            for u, n in ((ALICE, "alice"), (BOB, "bob"), (CAROL, "carol"))]),
        msg("s2c", id=11, player_uuid=ALICE, player_name="alice"),
        msg("s2c", id=13, player_uuid=ALICE, player_name="alice", position=(0.0, 5.0, 0.0),
            rotation=(0.0, 0.0, 0.0, 1.0), character_uuid=CHARACTER,
            data=json.dumps({"shirt": "red", "hat": None, "scale": 1.0})),
        msg("c2s", id=14, player_uuid=ALICE, linear_velocity=(4.0, 0.0, 0.0), look_at=(1.0, 0.0, 0.0), jump=1),
        msg("c2s", id=15, player_uuid=ALICE, chat_type="global", message="hi"),
        msg("s2c", id=9, player_uuid=BOB, chat_type="global", message="hello alice ✌"),
        msg("c2s", id=16, player_uuid=ALICE, object_uuid=CRATE, event="Click", event_data='{"button": 0}'),
        msg("s2c", id=5, object_uuid=CRATE),
        msg("s2c", id=12, player_uuid=BOB, player_name="bob", reason="left the game"),
        msg("s2c", id=17, error_type="SessionExpired"),
    ]
    return steps


def bad() -> list:
    """Bad input on a well-formed connection: every check fires once, decoding goes on."""
    return [
        msg("c2s", id=0, player_uuid=ALICE, session_token="tok", client_version=3),
        msg("s2c", id=4, object_uuid=CRATE, parent_uuid="not-a-uuid", object_type="Part", data='{"a": [1, 2,}'),
        raw("s2c", b"\x0b" + ALICE.encode() + b"\0al\xffice\0"),              # PLAYER_JOIN, invalid UTF-8
        msg("s2c", id=3, asset_path="x", asset_name="beep", asset_type="Sound", buffer=b"RIFF...."),
        raw("s2c", b"\x12hello\0"),                                           # id 18
        raw("s2c", b"\xc8"),                                                  # id 200
        msg("s2c", id=15, player_uuid=BOB, chat_type="global", message="wrong way"),   # a client packet
        raw("s2c", b"\x02no terminator"),
        msg("s2c", id=10, count=5, players=[{"player_uuid": BOB, "player_name": "bob"}]),
        raw("s2c", b"\x0a\x01\0\0\0nocolon\0"),
        raw("s2c", b"\x0e" + ALICE.encode() + b"\0" + b"\0" * 10),           # PLAYER_MOVEMENT cut short
        msg("c2s", id=1),
    ]


def burst(steps: list) -> list:
    """The session as a server streams it: after the AUTH, each side's run of messages sent back to back (several
    messages per TCP segment, compressed with one context per direction)."""
    out, run = [steps[0]], []
    for side, _, value in steps[1:]:
        if run and run[0][0] != side:
            out.append((run[0][0], "burst", [v for _, v in run]))
            run = []
        run.append((side, value))
    return out + [(run[0][0], "burst", [v for _, v in run])]


def fragmented(side: str, values: dict, cuts: tuple, pings: tuple = (), empty_last: bool = False) -> tuple:
    """One message sent as several frames (cut at `cuts`), a ping between fragments after each index in `pings`
    (control frames between fragments), optionally ending with an empty final frame."""
    data = PROTOCOL.encode(values)
    bounds = (0, *cuts, len(data))
    parts = [data[a:b] for a, b in zip(bounds, bounds[1:])] + ([b""] if empty_last else [])
    steps = []
    for i, part in enumerate(parts):
        steps.append(("hex", part.hex()))
        if i in pings:       # each ping its own payload: websockets refuses two pings waiting with the same one
            steps.append(("ping", RNG.randbytes(4).hex()))
    return (side, "interleaved", steps)


def fragments_session() -> list:
    """Fragmented messages in both directions, among whole ones: control frames between fragments, an empty
    final fragment, a large fragmented asset; the messages after them show the inflate context kept in step."""
    steps = game(big=False)[:4]
    steps += [
        fragmented("c2s", dict(id=15, player_uuid=ALICE, chat_type="team", message="three frames"), (5, 30)),
        fragmented("s2c", dict(id=9, player_uuid=BOB, chat_type="global", message="ping between " * 4), (3, 40),
                   pings=(0, 1)),
        fragmented("s2c", dict(id=3, asset_path=f"assets/{uid()}", asset_name="tiles", asset_type="Texture",
                               buffer=png(64, 48, True)), (100, 4000, 9000), pings=(1,), empty_last=True),
        fragmented("c2s", dict(id=16, player_uuid=ALICE, object_uuid=CRATE, event="Click",
                               event_data='{"button": 1}'), (1,), empty_last=True),
    ]
    steps += game(big=False)[4:12]
    steps += [fragmented("s2c", dict(id=11, player_uuid=CAROL, player_name="carol"), (20,), pings=(0,)),
              msg("s2c", id=9, player_uuid=CAROL, chat_type="global", message="carol here, after the fragments"),
              ("c2s", "ping", "6c617374"), ("c2s", "close", (1000, "bye"))]
    return steps


def sessions() -> dict:
    chat = PROTOCOL.encode(dict(id=15, player_uuid=ALICE, chat_type="team", message="fragmented hello"))
    fragmented = ("c2s", "send", ("frags", [("hex", part.hex()) for part in (chat[:10], chat[10:30], chat[30:])]))
    full = game()
    out = {
        "freeblox-session.pcap": (full + [("c2s", "ping", "70696e67"), ("c2s", "close", (1000, "bye"))],
                                  dict(deflate=True)),
        "freeblox-plain.pcap": (game(big=True) + [fragmented, ("s2c", "ping", ""),
                                                  ("s2c", "close", (1001, "going away"))], dict(deflate=False)),
        "freeblox-nocontext.pcap": (game(big=False)[:4] + [msg("c2s", id=14, player_uuid=ALICE,
                                                               linear_velocity=(float(i), 0.0, 0.0),
                                                               look_at=(1.0, 0.0, 0.0), jump=i % 2)
                                                           for i in range(4)]
                                    + [("c2s", "close", (1000, ""))],
                                    dict(deflate=dict(server_no_context_takeover=True,
                                                      client_no_context_takeover=True))),
        "freeblox-bad.pcap": (bad() + [("c2s", "close", (1000, "done"))], dict(deflate=False)),
        "freeblox-burst.pcap": (burst(game(big=False)) + [("s2c", "close", (1000, ""))],
                                dict(deflate=True, nagle=True)),
    }
    frag_steps = fragments_session()       # after the others: their seeded messages stay the recorded ones
    out.update({
        # fragments and control frames between them: deflate with context takeover and 9-bit windows, deflate
        # without context takeover, and no deflate
        "freeblox-fragments.pcap": (frag_steps, dict(deflate=dict(server_max_window_bits=9,
                                                                  client_max_window_bits=9))),
        "freeblox-fragments-nocontext.pcap": (frag_steps, dict(deflate=dict(server_no_context_takeover=True,
                                                                            client_no_context_takeover=True,
                                                                            server_max_window_bits=10))),
        "freeblox-fragments-plain.pcap": (frag_steps, dict(deflate=False)),
    })
    return out


# --- a crafted connection: what the websockets library never sends (for tools/make_freeblox_captures.py) --------

def deflate(message: bytes) -> bytes:
    """permessage-deflate of one message with a fresh context (RFC 7692 7.2.1: the 00 00 ff ff tail removed)."""
    z = zlib.compressobj(wbits=-15)
    return (z.compress(message) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]


def crafted_websocket() -> list:
    """record_tcp steps: an upgrade whose Accept is wrong, then bad frames: a message that does not inflate,
    RSV2 without an extension, an unknown opcode, an over-long ping, an unmasked client frame, a continuation
    without a message, 16- and 64-bit lengths, a fragmented compressed message, three messages in one segment
    (the second names the player the first one introduced), and finally a frame declaring
    2^40 bytes (the direction cannot be framed any more; memory stays bounded)."""
    from protodump.dissectors.websocket import encode_frame
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    request = ("GET /play HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n").encode()
    response = ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n"
                "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n").encode()
    mask = b"\x11\x22\x33\x44"
    auth = PROTOCOL.encode(dict(id=0, player_uuid=ALICE, session_token="tok", client_version=3))
    start = PROTOCOL.encode(dict(id=2, world_name="W" * 200))
    chat = PROTOCOL.encode(dict(id=15, player_uuid=ALICE, chat_type="global", message="in two frames"))
    packed = deflate(chat)
    return [
        ("c2s", request), ("s2c", response),
        ("c2s", encode_frame(2, deflate(auth), rsv=4, mask=mask)),
        ("c2s", encode_frame(2, b"\xff\xfe\xfd garbage", rsv=4, mask=mask)),
        ("s2c", encode_frame(2, b"\x01", rsv=2)),
        ("s2c", encode_frame(3, b"\x01")),
        ("s2c", encode_frame(9, b"p" * 200)),
        ("c2s", encode_frame(2, b"\x01")),
        ("c2s", encode_frame(0, b"\x01", mask=mask)),
        ("s2c", encode_frame(2, start)),
        ("s2c", encode_frame(2, PROTOCOL.encode(dict(id=1)), length_bits=64)),
        ("c2s", encode_frame(2, packed[:5], fin=False, rsv=4, mask=mask)
         + encode_frame(0, packed[5:], mask=mask)),
        ("s2c", b"".join(encode_frame(2, PROTOCOL.encode(v)) for v in (     # three messages in one segment
            dict(id=11, player_uuid=BOB, player_name="bob"),
            dict(id=9, player_uuid=BOB, chat_type="global", message="same segment"),
            dict(id=1)))),
        ("c2s", encode_frame(8, (1000).to_bytes(2, "big") + b"bye", mask=mask)),
        ("s2c", b"\x82\x7f" + (1 << 40).to_bytes(8, "big") + b"never ends"),
    ]
