"""The generated plugin: up to date with the tables, valid Lua 5.2 and 5.4, and robust: on random datagrams tshark
raises no Lua error and shows exactly the blank layer protodump shows."""
from __future__ import annotations

import random
import shutil
import struct
import subprocess
import zlib

import pytest

from conftest import LUA_ERROR, PLUGIN, PROTODUMP, TSHARK, layer_of, packet_layers, tshark_cmd_run
from protodump.dissectors import PROTOCOLS
from protodump.dissectors.blank import PROTOCOL, TAG
from protodump.engine.lua_backend import generate
from test_parity import layer_mismatches


def test_plugin_is_generated_from_the_tables():
    assert PLUGIN.read_bytes() == generate(PROTOCOLS).encode("utf-8"), \
        "lua/protodump.lua is stale: run `protodump lua generate`"


@pytest.mark.parametrize("luac", ["luac5.2", "luac5.4"])
def test_plugin_compiles(luac):
    if shutil.which(luac) is None:
        pytest.skip(f"{luac} is not installed")
    proc = subprocess.run([luac, "-p", str(PLUGIN)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# --- fuzz ---------------------------------------------------------------------------------------------------------

def _ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def write_pcap(path, datagrams, sport=40123, dport=12354) -> None:
    """Ethernet/IPv4/UDP frames (UDP checksum 0: not computed), one per datagram, 1 ms apart."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, (to_server, payload) in enumerate(datagrams):
        s, d = (sport, dport) if to_server else (dport, sport)
        udp = struct.pack("!HHHH", s, d, 8 + len(payload), 0) + payload
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0x4000, 64, 17, 0,
                                   bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1])))
        struct.pack_into("!H", ip, 10, _ip_checksum(bytes(ip)))
        frame = bytes(12) + b"\x08\x00" + bytes(ip) + udp
        out += struct.pack("<IIII", 1_700_000_000 + i // 1000, (i % 1000) * 1000, len(frame), len(frame)) + frame
    path.write_bytes(bytes(out))


def fuzz_datagrams(seed: int, n: int = 300) -> list[tuple[bool, bytes]]:
    """Random datagrams, lengths 1-600: a third pure noise, a third the tag + a random type + noise, a third real
    packets from the encoder (chunk transfers included) truncated, extended or with flipped bytes.
    (Empty datagrams are left out here: blank-bad.pcap has one.)"""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.randrange(3)
        if kind == 0:
            data = rng.randbytes(rng.randint(1, 600))
        elif kind == 1:
            code = rng.choice([*range(13), *range(13), rng.randrange(256)])
            body = rng.randbytes(rng.randint(0, 584))
            data = struct.pack("<IHHIB3s", TAG, rng.randrange(65536), rng.randrange(65536), rng.getrandbits(32),
                               code, rng.randbytes(3)) + body
            data = data[:rng.randint(1, len(data))] if rng.random() < 0.2 else data
        else:
            data = bytearray(_real_packet(rng))
            action = rng.randrange(4)
            if action == 0 and data:
                data = data[:rng.randint(1, len(data))]
            elif action == 1:
                data += rng.randbytes(rng.randint(1, 40))
            elif action == 2:
                for _ in range(rng.randint(1, 4)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
            data = bytes(data[:600]) or b"\x00"
        out.append((rng.random() < 0.5, bytes(data)))
    return out


def _real_packet(rng: random.Random) -> bytes:
    code = rng.randrange(13)
    values = {"seq": rng.randrange(65536), "ack": rng.randrange(65536), "ack_history": rng.getrandbits(32),
              "type": code}
    tid = rng.randrange(4)
    if code == 9:
        values.update(transmission_id=tid, flags=rng.randrange(3), data_size=rng.choice([50, 300, 900, 20484]))
    elif code == 10:
        offset = rng.choice([0, 0, 100, 300, 600])
        piece = (zlib.compress(bytes(20484)) if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 400)))
        header = struct.pack("<IHHIB3s", TAG, values["seq"], values["ack"], values["ack_history"], 10, bytes(3))
        return header + struct.pack("<III", tid, offset, len(piece)) + piece
    elif code == 7:
        count = rng.randint(0, 13)
        values.update(count=count, entities=[{"entity_id": i} for i in range(min(count, 12))])
    elif code == 11:
        count = rng.randint(0, 80)
        values.update(count=count, blocks=[{"index": i, "data": i} for i in range(min(count, 78))])
    elif code in (1, 12):
        values["name" if code == 1 else "text"] = "é" * rng.randint(0, 30)
    revision = "2015" if code <= 8 and rng.random() < 0.3 else None
    return PROTOCOL.encode(values, revision=revision)


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_fuzz_parity(tmp_path, seed):
    pcap = tmp_path / f"fuzz-{seed}.pcap"
    write_pcap(pcap, fuzz_datagrams(seed))
    theirs = tshark_cmd_run(["-X", f"lua_script:{PLUGIN}", "-r", str(pcap), "-T", "json"], text=True,
                            errors="surrogateescape", timeout=300)
    ours = subprocess.run([*PROTODUMP, "-T", "json", str(pcap)], capture_output=True, text=True, errors="surrogateescape", timeout=300)
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    for where, text in (("output", theirs.stdout), ("stderr", theirs.stderr)):
        m = LUA_ERROR.search(text)
        assert m is None, f"Lua error in tshark {where}: {text[max(0, m.start() - 400):m.end() + 400]}"
    assert "Dissector error" not in ours.stdout
    layers = packet_layers(ours.stdout)
    assert len(layers) == 300 and all(layer_of(p, "blank") is not None for p in layers)
    reports = layer_mismatches(ours.stdout, theirs.stdout)
    if reports:
        pytest.fail(f"seed {seed} ({pcap}): {len(reports)} packet(s) differ\n\n" + "\n\n".join(reports[:3]),
                    pytrace=False)


@pytest.mark.parametrize("wireshark", ["system_tshark", "other_tshark"])
@pytest.mark.parametrize("script,expect", [
    ("local p = Proto('blank', 'blank game protocol')\n", "there cannot be two protocols"),   # a second copy
    ("local x = \n", "lua"),                                                                   # does not load
    ("error('boom')\n", "boom"),                                                               # raises at load
])
def test_load_failures_are_caught(request, tmp_path, wireshark, script, expect):
    """What the tests' tshark runs would see if the plugin under test failed to load, or another copy shadowed
    it: LUA_ERROR matches it (4.0 and 4.4 word it differently), so no test can pass against a stale plugin."""
    tshark = request.getfixturevalue(wireshark)
    bad = tmp_path / "bad.lua"
    bad.write_text(script)
    proc = tshark.run(["-X", f"lua_script:{PLUGIN}", "-X", f"lua_script:{bad}", "-r", "blank-server-session.pcap",
                       "-c", "1"])
    err = proc.stderr.decode("utf-8", "replace")
    assert LUA_ERROR.search(err) and expect in err.lower(), err


def test_install_says_when_another_copy_is_there(tmp_path):
    """`protodump lua install` into a folder holding an older copy says it replaced it; a second copy elsewhere in
    Wireshark's Lua folders is named as one Wireshark would refuse."""
    from click.testing import CliRunner
    from protodump.cli import lua_cmd
    personal, other = tmp_path / "personal", tmp_path / "global"
    personal.mkdir()
    other.mkdir()
    (personal / "protodump.lua").write_text("-- protodump.lua: Wireshark dissectors\n-- protodump version: 0.0.1\n")
    (other / "old-protodump.lua").write_text("-- protodump.lua: Wireshark dissectors\n")
    (other / "unrelated.lua").write_text("-- something else\n")
    real = lua_cmd.wireshark_facts
    lua_cmd.wireshark_facts = lambda tshark=None: ((4, 0), [personal, other])
    try:
        result = CliRunner().invoke(lua_cmd.lua, ["install", "--dir", str(personal)])
    finally:
        lua_cmd.wireshark_facts = real
    assert result.exit_code == 0, result.output
    assert "a different copy (version 0.0.1) was there: replaced" in result.output
    assert f"{other / 'old-protodump.lua'}: another copy, also loaded" in result.output
    assert "unrelated" not in result.output
    assert (personal / "protodump.lua").read_text() == PLUGIN.read_text()


def test_install_knows_when_wireshark_refuses_lua():
    from protodump.cli.lua_cmd import refuses_lua, wireshark_facts
    assert refuses_lua((4, 2), 0) and refuses_lua((4, 4), 0)
    assert not refuses_lua((4, 0), 0) and not refuses_lua((4, 4), 1000) and not refuses_lua(None, 0)
    if TSHARK is not None:
        version, folders = wireshark_facts()
        assert version is not None and version >= (4, 0) and folders


def test_websocket_limits_are_protodumps():
    """The plugin's WebSocket assembly stops where protodump stops: lua/rt_websocket.lua reads its limits from the
    plugin's LIMITS table, generated from the Python constants."""
    import re
    from protodump.dissectors import websocket
    from protodump.reassembly.tcp import MAX_PDU
    text = (PLUGIN.parent / "rt_websocket.lua").read_text()
    plugin = PLUGIN.read_text()
    table = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+) = (\d+)", plugin.split("LIMITS = {", 1)[1].split("}", 1)[0])}
    assert table["WS_MESSAGE_LIMIT"] == websocket.MESSAGE_LIMIT
    assert table["WS_FRAGMENT_LIMIT"] == websocket.FRAGMENT_LIMIT
    assert table["MAX_PDU"] == MAX_PDU and table["WS_MAX_FRAME"] == websocket.MAX_FRAME
    assert "local WS_MESSAGE_LIMIT = LIMITS.WS_MESSAGE_LIMIT" in text and "local WS_MAX_FRAME = LIMITS.WS_MAX_FRAME" in text
    limits = {m.group(1): int(m.group(2)) for m in re.finditer(r"^local (WS_\w+) = (\d+)", text, re.M)}
    assert limits["WS_WINDOW"] == 1 << 15            # zlib's largest window: permessage-deflate's max_window_bits
