"""A second pass over the frames (tshark -2, a click in Wireshark's GUI: pinfo.visited) shows each stream PDU with
the layout the first pass chose. Rutentoy's server 04 is a Texture Chunk while a texture exchange runs and an
Object Delete after it (a connection flag, StreamProtocol.alternates): the plugin keeps the first pass's choice per
PDU (lua/rt_stream_protocol.lua pdu_layout) instead of reading the flags as the end of the first pass left them.
`-2 -R ip` gives the first pass a tree, so the plugin decodes there and replays on the second pass."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import ROOT, packet_layers, tshark_available
from protodump.dissectors import PROTOCOLS

pytestmark = pytest.mark.skipif(not tshark_available(), reason="tshark is not on PATH")

# the bundled captures carried over TCP or SCTP
STREAM_CAPTURES = sorted(p.name for p in (ROOT / "captures").glob("*.pcap")
                         if p.name.startswith(("rutentoy-", "iceball-tcp-", "freeblox-", "websocket-")))
GAME = {p.name for p in PROTOCOLS if getattr(p, "lua", True) and getattr(p, "lua_parity", True)}


def game_layers(text: str) -> list:
    return [[(k, v) for k, v in layers if k in GAME] for layers in packet_layers(text)]


def test_texture_chunk_stays_a_texture_chunk_on_the_second_pass(standard_run, protodump_run):
    args = ("-2", "-R", "ip", "-r", "rutentoy-sctp.pcap")
    theirs = standard_run(*args).stdout
    frame16 = next(line for line in theirs.splitlines() if line.split()[0] == "16")
    assert "Object Texture Chunk oid=7" in frame16 and "Object Delete" not in frame16
    assert theirs == protodump_run(*args).stdout


@pytest.mark.parametrize("name", STREAM_CAPTURES)
def test_two_pass_summary_equals_protodump(name, standard_run, protodump_run):
    """Whole summary lines, standard columns included: against tshark 4.0 (conftest.standard_run)."""
    for extra in (("-2", "-R", "ip or ipv6"), ("-2",)):
        theirs = standard_run(*extra, "-r", name)
        assert theirs.returncode == 0
        assert theirs.stdout == protodump_run(*extra, "-r", name).stdout, extra


@pytest.mark.parametrize("name", STREAM_CAPTURES)
def test_two_pass_game_layers_equal_one_pass(name, tshark_run, protodump_run):
    """The whole tree of every game layer (what -V shows) under -2 -R ip and -2: the plugin's equals its own one
    pass and protodump's. (The standard TCP layer's second-pass additions are TCP's, not compared here.)"""
    one = game_layers(tshark_run("-T", "json", "-r", name).stdout)
    assert any(one)
    for extra in (("-2", "-R", "ip or ipv6"), ("-2",)):
        two = game_layers(tshark_run(*extra, "-T", "json", "-r", name).stdout)
        assert two == one, extra
        assert game_layers(protodump_run(*extra, "-T", "json", "-r", name).stdout) == two, extra


LUA = shutil.which("lua5.2") or shutil.which("lua5.4")

# A stream protocol with one alternate (opcode 4 of s2c reads the c2s table while flag "tex:s2c" is set), PDUs
# dissected on a first pass with the flag set, then again (visited) with it cleared.
HARNESS = """
local item = {}
function item:add() return item end
function item:set_text() end
local tree = { add = function() return item end }
local range = { raw = function() return "" end }
local tvb = setmetatable({ len = function() return 1 end }, { __call = function() return range end })
local spec = { header_size = 1, numberings = { "n" }, pref = function() return "n" end, type_field = "op",
  alternates = { ["n|s2c|4"] = { "tex", "c2s" } }, sent_by = {}, names = {}, server_ports = { [9] = true },
  description = "T", layout_memory = LIMIT,
  header_fn = function(c) c.sc[1].op = 4; c.pos = 1 end,
  bodies = { ["n/s2c"] = { [4] = { fn = function() end, size = 0, label = "Delete", name = "del" } },
             ["n/c2s"] = { [4] = { fn = function() end, size = 0, label = "Chunk", name = "chunk" } } } }
local conv = { flags = { ["tex:s2c"] = true } }
for f = 1, FRAMES do rt.stream_pdu(spec, tvb, { number = f, visited = false, src_port = 9, dst_port = 1 }, tree, conv, 1) end
conv.flags["tex:s2c"] = false
local shown = {}
for f = 1, FRAMES do
  shown[#shown + 1] = rt.stream_pdu(spec, tvb, { number = f, visited = true, src_port = 9, dst_port = 1 }, tree, conv, 1)
end
print(conv.layouts.n, table.concat(shown, ","))
"""


@pytest.mark.skipif(LUA is None, reason="no standalone Lua")
@pytest.mark.parametrize("lua", [x for x in ("lua5.2", "lua5.4") if shutil.which(x)])
def test_first_pass_layouts_are_replayed_and_bounded(lua):
    runtime = "\n".join((ROOT / "lua" / n).read_text() for n in ("runtime.lua", "rt_stream_protocol.lua"))
    prog = "LIMITS = {}\n" + runtime + HARNESS.replace("LIMIT", "3").replace("FRAMES", "5")
    out = subprocess.run([lua, "-"], input=prog.encode(), capture_output=True, check=True).stdout.decode().split()
    # three kept (the newest frames replay Chunk); the two evicted fall back to the live flags (Delete)
    assert out == ["3", "Delete,Delete,Chunk,Chunk,Chunk"]


@pytest.mark.parametrize("name", ["rutentoy-login-texture.pcap", "iceball-tcp-session.pcap"])
def test_two_pass_tcp_completeness_and_irtt(name, standard_run, protodump_run):
    """tshark's second pass knows each TCP conversation's final completeness from its first frame on, and the
    iRTT on the frames before the handshake's ACK (the SYN/ACK's SEQ/ACK analysis): protodump -2 -V shows the
    same (capture.tcp_analysis TcpTable.record / learnt), and one pass keeps the values as they grew."""
    theirs = standard_run("-2", "-V", "-r", name).stdout
    assert theirs.count("[Conversation completeness: Complete, WITH_DATA (31)]") == theirs.count("\nFrame ") + 1
    assert theirs == protodump_run("-2", "-V", "-r", name).stdout
    assert "Incomplete, SYN_SENT (1)" in protodump_run("-V", "-r", name).stdout


def test_two_pass_sctp_reassembled_in(standard_run, protodump_run):
    """tshark's second pass shows, in a message's first DATA piece, the frame that completes it, and numbers the
    pieces' payload bytes from 0 (its first pass from the message length on): capture.sctp TsnTable.record."""
    theirs = standard_run("-2", "-V", "-r", "rutentoy-sctp.pcap").stdout
    assert "Reassembled Message in frame: 11" in theirs and "Frame: 10, payload: 0-599 (600 bytes)" in theirs
    assert theirs == protodump_run("-2", "-V", "-r", "rutentoy-sctp.pcap").stdout
    assert "Frame: 10, payload: 1033-1632 (600 bytes)" in protodump_run("-V", "-r", "rutentoy-sctp.pcap").stdout
