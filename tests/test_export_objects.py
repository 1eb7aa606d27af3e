"""--export-objects: the objects of real sessions (sizes the servers sent, hashes, images that decode) and
hostile names from captures the project's encoders make (nothing is ever written outside the folder)."""
from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path

import xxhash

from conftest import CAPTURES_DIR
from protodump.analysis.export_objects import ObjectExporter
from protodump.analysis.safe_names import massage
from protodump.session import packets
from test_freeblox import tcp_pcap

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import make_iceball_captures as ice  # noqa: E402

PROTODUMP = str(Path(sys.executable).with_name("protodump"))


def export(capture, proto, folder, **limits) -> ObjectExporter:
    exporter = ObjectExporter(proto, str(folder), **limits)
    for p in packets(str(capture)):
        exporter.add(p)
    exporter.finish()
    return exporter


def test_iceball_enet_session_files_inflated_as_the_server_sent_them(tmp_path):
    """The real server's files: main_client.lua 3,563 -> 9,992 bytes, *MAP 360,867 -> 2,420,086, a tga."""
    out = subprocess.run([PROTODUMP, "-q", "--export-objects", f"iceball,{tmp_path}",
                          str(CAPTURES_DIR / "iceball-enet-session.pcap")], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == ""
    sizes = {f.name: f.stat().st_size for f in tmp_path.iterdir()}
    assert sizes == {"pkg%2Fbase%2Fmain_client.lua": 9992, "%2AMAP": 2420086,
                     "pkg%2Fbase%2Fgfx%2Ffont-mini.tga": 2492}
    lua = (tmp_path / "pkg%2Fbase%2Fmain_client.lua").read_bytes()
    assert lua.startswith(b"--[[\n    This file is part of Ice Lua Components.")
    assert (tmp_path / "%2AMAP").read_bytes()[:6] == b"IceMap"
    # the TCP session fetched the same file from the same server: byte for byte the same
    tcp = export(CAPTURES_DIR / "iceball-tcp-session.pcap", "iceball", tmp_path / "tcp")
    assert [w["file"] for w in tcp.written] == ["pkg%2Fbase%2Fmain_client.lua"]
    assert (tmp_path / "tcp" / "pkg%2Fbase%2Fmain_client.lua").read_bytes() == lua


def test_rutentoy_textures_as_qoi_and_png_hash_checked(tmp_path):
    import numpy
    import qoi
    from PIL import Image
    e = export(CAPTURES_DIR / "rutentoy-login-texture.pcap", "rutentoy", tmp_path)
    qois = [w for w in e.written if w["file"].endswith(".qoi")]
    assert len(qois) == 2 and all(w["digest_ok"] for w in qois)
    for w in qois:
        data = (tmp_path / w["file"]).read_bytes()
        assert xxhash.xxh32_hexdigest(data) == w["xxh32"] and w["file"].endswith(f"-{w['xxh32']}.qoi")
        png = Image.open(tmp_path / w["file"].replace(".qoi", ".png"))
        assert (qoi.decode(data) == numpy.asarray(png)).all()


def test_rutentoy_without_pillow_says_the_png_copies_need_the_images_extra(tmp_path):
    """Pillow missing (its import blocked): the QOI files are written, no PNG, and one note on stderr says why."""
    run = ("import sys; sys.modules['PIL'] = None; sys.argv = ['protodump'] + sys.argv[1:]; "
           "from protodump.cli.main import main; main()")
    out = subprocess.run([sys.executable, "-c", run, "-q", "--export-objects", f"rutentoy,{tmp_path}",
                          str(CAPTURES_DIR / "rutentoy-login-texture.pcap")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    files = sorted(p.suffix for p in tmp_path.iterdir())
    assert files == [".qoi", ".qoi"]
    notes = [line for line in out.stderr.splitlines() if "protodump[images]" in line]
    assert len(notes) == 1 and "PNG" in notes[0], out.stderr


def test_freeblox_assets_and_blank_chunks(tmp_path):
    e = export(CAPTURES_DIR / "freeblox-session.pcap", "freeblox", tmp_path / "fb")
    assert {w["file"]: w["size"] for w in e.written} == {"grass.png": 122, "noise.png": 108278, "sky.qoi": 4115,
                                                          "photo.jpg": 41, "crate.glb": 80}
    assert (tmp_path / "fb" / "noise.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    e = export(CAPTURES_DIR / "blank-server-session.pcap", "blank", tmp_path / "bl")
    raw = sorted(f for f in (tmp_path / "bl").iterdir() if f.suffix == ".zlib")
    assert len(raw) == 126 and len(e.written) == 252
    for f in raw:
        assert zlib.decompress(f.read_bytes()) == f.with_suffix(".bin").read_bytes()
        assert f.with_suffix(".bin").stat().st_size == 20484
    assert (tmp_path / "bl" / "chunk_0_0_0-tid1-frame6.zlib").stat().st_size == 45     # Chunk Begin: (0, 0, 0)


HOSTILE = ["../../escaped", "/tmp/absolute", "a\0b", "CON", "nul.txt", "com1.lua", "..", ".", "",
           "/" * 200, "dir\\..\\..\\win", "x" * 255, "é/../ü", "same", "same", "SAME", " spaced "]


def hostile_capture(path: Path) -> list[bytes]:
    """An Iceball TCP session whose client requests files under hostile names; the server sends each."""
    contents = [f"file {i}: {name!r}\n".encode() * (i + 1) for i, name in enumerate(HOSTILE)]
    segments = [(False, ice.counted(0x0F, b"pkg/base"))]
    for name, content in zip(HOSTILE, contents):
        segments.append((True, ice.counted(0x30, name.encode(), bytes([3]))))
        segments.append((False, b"".join(ice.file_transfer(content))))
    tcp_pcap(path, segments, server=("127.0.0.1", ice.PORT))
    return contents


def test_hostile_names_never_leave_the_folder(tmp_path):
    cap = tmp_path / "hostile.pcap"
    contents = hostile_capture(cap)
    folder = tmp_path / "a" / "out"
    before = set(tmp_path.rglob("*"))
    out = subprocess.run([PROTODUMP, "-q", "--export-objects", f"iceball,{folder}", str(cap)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    made = set(tmp_path.rglob("*")) - before
    files = [p for p in made if p.is_file()]
    assert all(p.parent == folder for p in files) and len(files) == len(HOSTILE)
    assert sorted(p.read_bytes() for p in files) == sorted(contents)
    for p in files:
        name = p.name
        assert "/" not in name and "\\" not in name and "\0" not in name and not name.startswith(".")
        assert len(name.encode()) <= 170 and name.split(".")[0].upper() not in ("CON", "NUL", "COM1")
    assert len({p.name.lower() for p in files}) == len(files)


def test_massage_examples():
    assert massage("../x") == "%2E.%2Fx"
    assert massage("CON") == "_CON" and massage("lpt1.txt") == "_lpt1.txt"
    assert massage("") == "object" and massage(b"\xff") == "%FF"
    assert len(massage("ab" * 500 + ".png")) <= 160 and massage("ab" * 500 + ".png").endswith(".png")


def test_bounded_output_says_what_was_given_up(tmp_path):
    e = export(CAPTURES_DIR / "blank-server-session.pcap", "blank", tmp_path, max_objects=5)
    assert len(list(tmp_path.iterdir())) == 5
    assert any("export limit" in n for n in e.notes) and any("247 objects not written" in n for n in e.notes)
    e = export(CAPTURES_DIR / "iceball-enet-session.pcap", "iceball", tmp_path / "b", max_bytes=100_000)
    assert sorted(w["size"] for w in e.written) == [2492, 9992]


def test_bad_arguments(tmp_path):
    cap = str(CAPTURES_DIR / "blank-sequence.pcap")
    for arg in ("nosuch,x", "iceball"):
        out = subprocess.run([PROTODUMP, "-q", "--export-objects", arg, cap], capture_output=True, text=True)
        assert out.returncode == 1 and "--export-objects" in out.stderr     # a bad option value: tshark's 1


def test_hostile_freeblox_asset_names(tmp_path):
    """A Freeblox server (WebSocket on port 8765, messages from the table's encoder) streams assets under hostile
    names: every one is written, inside the folder, with its bytes."""
    import base64
    import hashlib

    from protodump.dissectors.freeblox import PROTOCOL
    from protodump.dissectors.websocket import encode_frame
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    request = ("GET /play HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    response = ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept.decode()}\r\n\r\n").encode()
    auth = PROTOCOL.encode(dict(id=0, player_uuid="5bc8fbbc-bde5-4099-8164-d8399f767c45", session_token="t",
                                client_version=3))
    segments = [(True, request), (False, response), (True, encode_frame(2, auth, mask=b"\x01\x02\x03\x04"))]
    names = ["../../x", "/etc/passwd", "CON", "nul.png", ".", "é" * 300, "..\\..\\win"]   # (NUL ends a name here)
    for i, name in enumerate(names):
        asset = PROTOCOL.encode(dict(id=3, asset_path=f"assets/{i}", asset_name=name, asset_type="Texture",
                                     buffer=b"payload %d" % i))
        segments.append((False, encode_frame(2, asset)))
    cap = tmp_path / "fb.pcap"
    tcp_pcap(cap, segments)
    folder = tmp_path / "out"
    e = export(cap, "freeblox", folder)
    assert [w["wire_name"] for w in e.written] == names
    files = sorted(folder.iterdir())
    assert len(files) == len(names) and all(f.parent == folder for f in files)
    assert sorted(f.read_bytes() for f in files) == sorted(b"payload %d" % i for i in range(len(names)))
    assert set(tmp_path.iterdir()) == {cap, folder}
