"""Display filters (-Y, protodump.read(filter=...)) against tshark's own filter engine on the bundled captures.

tshark evaluates every filter of a capture in ONE run: a small Lua script registers a Listener (a tap) per filter,
which runs tshark's dfilter engine exactly as -Y does (checked against -Y itself below), with the protodump plugin
loaded for the game fields. A filter tshark rejects must be rejected by protodump too.
"""
from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import protodump
from protodump.analysis.filter import FilterError, compile_filter
from protodump.analysis.filter_functions import FUNCTIONS
from protodump.session import packets

from conftest import CAPTURES_DIR, PLUGIN, PROTODUMP, ROOT, TSHARK

TAPS_LUA = r"""
-- One Listener per filter (tshark's dfilter engine, as -Y); made in an init routine, after the plugin's fields.
local path = ({...})[1]
local order, made = {}, false
local function make()
  if made then return end
  made = true
  for line in io.lines(path) do
    local entry = {frames = {}}
    order[#order + 1] = entry
    local ok, err = pcall(function()
      local tap = Listener.new("frame", line)
      function tap.packet(pinfo) entry.frames[#entry.frames + 1] = pinfo.number end
    end)
    if not ok then entry.error = tostring(err) end
  end
  local final = Listener.new("frame", nil)
  function final.draw()
    local out = io.open(path .. ".out", "w")
    for _, e in ipairs(order) do
      if e.error then out:write("ERROR\t", (e.error:gsub("\n", " ")), "\n")
      else out:write("OK\t", table.concat(e.frames, " "), "\n") end
    end
    out:close()
  end
end
local p = Proto("pdfiltertaps", "filter taps")
p.init = make      -- (no dissector: a postdissector without one would add a Lua error to every frame)
"""

STANDARD = [
    "frame.number <= 3", "frame.number le 3 or frame.number ge 30", "frame.len == 90",
    "frame.len > 100 && frame.len < 200", "frame contains \"mallory\"", "frame.protocols contains \"blank\"",
    "frame.protocols == \"eth:ethertype:ip:udp\"",
    "eth.addr == 00:00:00:00:00:00", "eth.src != 00-00-00-00-00-01", "eth.dst == 0000.0000.0000",
    "eth.type == 0x0800", "eth.dst.ig == 0",
    "ip.addr == 127.0.0.0/8", "ip.src == 127.0.0.1", "ip.dst != 10.0.0.0/8", "ip.src in {127.0.0.1, 10.0.0.1}",
    "ip.src > 126.0.0.0", "ip.ttl >= 64", "ip.flags.df", "ip.flags.df == 1", "ip.flags.df == False", "ip.id & 1",
    "ip.proto == 17", "ip.src == ip.dst", "ip.id > 0x8000",
    "udp.port == 12354", "udp.port != 12354", "udp.port ~= 12354", "udp.srcport > udp.dstport",
    "udp.length in {8..40, 56}", "udp.payload contains \"pybot\"", "udp.payload contains af:b1:1a",
    "udp.payload[0:4] == af:b1:1a:fb", "udp.payload[-2:] == 00:00", "udp.payload < ffff",
    "udp.payload matches \"MALLORY\"", "udp[8:2] == af:b1", "tcp", "!udp", "not ip or udp",
]
GAME = [
    "blank", "not blank", "!blank && udp", "blank.type == Login", "blank.type == \"login\"",
    "blank.type in {Login, Join}", "blank.type > Login", "blank.type == 0x10", "blank.seq == 010",
    "blank.seq == 0b11", "blank.seq in {1, 2, 4..8}", "blank.seq != 5", "blank.seq ~= 5", "blank.seq == blank.ack",
    "blank.seq > blank.ack", "blank.seq & 1", "blank.seq eq 1 and blank.ack eq 0",
    "(blank.seq == 1 || blank.seq == 2) && !(blank.ack == 0)",
    "frame.number == 1 or frame.number == 2 and frame.number == 3",
    "blank.tag == 0xfb1ab1af", "blank.login.name == mallory", "blank.login.name == \"mall\\x6fry\"",
    "blank.login.name == \"mall\\157ry\"", "blank.login.name contains \"all\"",
    "blank.login.name matches \"^M.*Y$\"", "blank.login.name matches \"(?-i)^M\"",
    "blank.login.name[0:3] == \"mal\"", "blank.login.name[1-3] == \"all\"", "blank.login.name[-2:] == \"ry\"",
    "blank.login.name[2] == 6c", "blank.login.name[0:2,4:2] == \"maor\"", "blank.login.name[0:100] == \"x\"",
    "blank.login.name > \"m\"", "blank.login.name in {\"mallory\", \"x\"}", "blank[0:2] == af:b1",
    "blank contains \"mallory\"", "blank.ack_history.received == 0", "blank.ack_history.received != 0",
    "blank.ack_history.received ~= 0", "blank.malformed", "blank.sequence", "_ws.expert",
    "_ws.expert.severity == error", "_ws.expert.severity >= warning", "blank.padding == 00:00:00",
    "blank.message.text matches \"PLAYER\"", "blank.message.text contains \"player\"",
    "blank.message.text contains \"Player\"", "blank.state.block_pos.x == 0.5", "blank.spawn.bbox_min.x == -0.5",
    "blank.player_update.movement.z < -0.5", "blank.player_update.actions.primary == 0",
    "blank.chunk.inflated_size >= 20000", "blank.chunk_begin.flags.compressed", "blank.state.block_pos.x > 1e1",
    "blank.state.velocity.x >= 0", "blank.join.world_name == \"default\"", "blank.type == 'A'",
    # functions and ~ (Wireshark 4.0)
    "len(blank.login.name) == 5", "len(blank.login.name) > 6", "count(blank.ack_history.received) == 32",
    "upper(blank.login.name) == \"MALLORY\"", "lower(blank.login.name) contains \"al\"", "string(blank.seq) == \"3\"",
    "string(blank.tag) == \"4212830639\"", "abs(blank.state.pitch) > 40", "max(blank.seq, blank.ack) > 5",
    "min(blank.seq, blank.ack) == 0", "blank.login.name ~ \"^m\"", "len(udp) > 0", "count(ip.addr) == 2",
    "len(blank.padding) == 3", "len(blank.seq) == 2", "string(udp.srcport) matches \"^4\"", "count(blank.chunk) == 1",
    "abs(blank.state.velocity.z) > 2.5", "len(blank.login.name) == len(blank.message.text)",
]
# Filters both must reject (tshark's reason in a comment where it is its own).
BAD = [
    "blank.foo", "blank.seq == \"abc\"", "blank.seq == 70000", "blank.seq ==", "blank.seq == (1", "blank.type == 1.0",
    "blank.type == Logins", "1 == blank.seq", "blank.seq == blank.login.name", "blank.state == 1",
    "blank.seq[0] == 0", "ip.src == localhost", "ip.flags.df == true", "blank.seq in {1 2}", "frame.len > 1e2",
    "blank.login.name == \"ab", "(blank.seq == 1", "blank.seq == 1)", "and", "blank.seq == 1 xor blank.ack == 0",
    "blank.login.name == 'mallory'", "blank.login.name matches \"(\"", "eth.src == 00:00:00", "ip.src == 1.2.3.4/40",
    "blank.seq contains 1", "== 1", "blank.seq 1", "blank.login.name[x] == 1", "udp.payload == zz",
    "blank.malformed == 1", "blank.seq in {}", "nosuch(blank.seq) == 1", "len(blank.seq, blank.ack) == 2",
    "upper(blank.seq) == \"1\"", "count(blank.malformed)", "len(blank.seq) contains 1", "abs(blank.seq) == \"x\"",
    "blank.seq + blank.login.name", "frame.len + frame.time_delta == 1",
]
CAPTURE_FILTERS = {
    "blank-bad.pcap": STANDARD + GAME,
    "blank-server-session.pcap": STANDARD + GAME,
    "blank-all-current.pcap": GAME,
    "blank-sequence.pcap": GAME,
    "blank-2015.pcap": GAME,
}


def tshark_filters(capture: str, filters: list[str], tmp: Path) -> list:
    """[(ok, frames or error text)] per filter, from one tshark run."""
    lua, listing = tmp / f"{capture}.lua", tmp / f"{capture}.filters"
    lua.write_text(TAPS_LUA)
    listing.write_text("\n".join(filters) + "\n")
    subprocess.run([TSHARK, "-q", "-X", f"lua_script:{PLUGIN}", "-X", f"lua_script:{lua}",
                    "-X", f"lua_script2:{listing}", "-r", str(CAPTURES_DIR / capture)],
                   capture_output=True, check=True, timeout=120)
    out = []
    for line in (listing.parent / (listing.name + ".out")).read_text().splitlines():
        status, _, rest = line.partition("\t")
        out.append((True, [int(n) for n in rest.split()]) if status == "OK" else (False, rest))
    return out


@pytest.fixture(scope="module")
def tshark_results(tmp_path_factory):
    if TSHARK is None:
        pytest.skip("tshark not installed")
    tmp = tmp_path_factory.mktemp("filters")
    jobs = dict(CAPTURE_FILTERS, **{"blank-bad.pcap#bad": BAD})
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {key: pool.submit(tshark_filters, key.split("#")[0], filters, tmp / key.replace("#", "_"))
                   for key, filters in jobs.items() if (tmp / key.replace("#", "_")).mkdir() is None}
        return {key: f.result() for key, f in futures.items()}


def protodump_frames(capture: str, filters: list[str]) -> list[list[int]]:
    compiled = [compile_filter(f) for f in filters]
    found: list[list[int]] = [[] for _ in filters]
    for packet in packets(CAPTURES_DIR / capture):
        for i, f in enumerate(compiled):
            if f(packet):
                found[i].append(packet.number)
    return found


@pytest.mark.parametrize("capture", sorted(CAPTURE_FILTERS))
def test_same_frames_as_tshark(capture, tshark_results):
    filters = CAPTURE_FILTERS[capture]
    theirs = tshark_results[capture]
    for text, (ok, result) in zip(filters, theirs):
        assert ok, f"tshark rejects {text!r}: {result}"
    mine = protodump_frames(capture, filters)
    mismatches = [(text, frames, result) for text, frames, (_, result) in zip(filters, mine, theirs)
                  if frames != result]
    assert not mismatches, "\n".join(f"{t}: protodump {m[:20]} tshark {r[:20]}" for t, m, r in mismatches)


def test_bad_filters_rejected_by_both(tshark_results):
    for text, (ok, result) in zip(BAD, tshark_results["blank-bad.pcap#bad"]):
        assert not ok, f"tshark accepts {text!r}"
        with pytest.raises(FilterError) as info:
            compile_filter(text)
        err = info.value
        if err.message == "Unexpected end of filter expression.":     # tshark 4.0 shows no caret for it
            assert err.position is None
            continue
        assert err.position is not None and 0 <= err.position <= len(text), (text, err.position)


def test_listener_harness_equals_dash_y(tshark_results):
    """The one-run Lua harness gives what tshark -Y prints."""
    filters = ["blank.type in {Login, Join}", "udp.payload contains \"pybot\"", "blank.seq != 5"]
    for text in filters:
        proc = subprocess.run([TSHARK, "-X", f"lua_script:{PLUGIN}", "-r", str(CAPTURES_DIR / "blank-bad.pcap"),
                               "-Y", text, "-T", "fields", "-e", "frame.number"], capture_output=True, text=True,
                              check=True)
        expected = tshark_results["blank-bad.pcap"][CAPTURE_FILTERS["blank-bad.pcap"].index(text)][1]
        assert [int(n) for n in proc.stdout.split()] == expected


def run(*args, cwd=CAPTURES_DIR):
    return subprocess.run([*PROTODUMP, *args], capture_output=True, text=True, cwd=cwd)


def test_cli_every_output_form_filters():
    flt = "blank.type in {Login, Join} && frame.number < 22"
    summary = run("-Y", flt, "blank-bad.pcap")
    assert summary.returncode == 0
    assert [int(line.split()[0]) for line in summary.stdout.splitlines()] == [1, 6, 7, 21]
    detail = run("-Y", flt, "-V", "blank-bad.pcap")
    assert [line.split(":")[0] for line in detail.stdout.splitlines() if line.startswith("Frame ")] == \
        ["Frame 1", "Frame 6", "Frame 7", "Frame 21"]
    hexed = run("-Y", "frame.number == 7", "-x", "blank-bad.pcap")
    assert hexed.stdout.startswith("0000  ") and "0050  a2 5a" in hexed.stdout    # frame 7's bytes only
    doc = json.loads(run("-Y", flt, "-T", "json", "blank-bad.pcap").stdout)
    assert [p["_source"]["layers"]["frame"]["frame.number"] for p in doc] == ["1", "6", "7", "21"]
    # the JSON of a kept packet is the unfiltered one's, but for the time since the previous displayed frame
    full = json.loads(run("-T", "json", "blank-bad.pcap").stdout)
    shown = doc[1]["_source"]["layers"]["frame"].pop("frame.time_delta_displayed")
    assert full[5]["_source"]["layers"]["frame"].pop("frame.time_delta_displayed") != shown
    assert doc[1] == full[5]


def test_cli_fields_filtered():
    proc = run("-Y", "blank.seq == 1", "-T", "fields", "-e", "frame.number", "blank-bad.pcap")
    if proc.returncode == 2 and "fields" in proc.stderr:     # -T fields belongs to another part of the issue
        pytest.skip("-T fields not available")
    assert proc.stdout.split() == ["11", "22"]


@pytest.mark.parametrize("text,caret_at", [("blank.foo == 1", 0), ("blank.seq == \"abc\"", 13),
                                           ("blank.seq == 1 &&", None), ("ip.src == 1.2.3.4/40", 10)])
def test_cli_bad_filter(text, caret_at):
    proc = run("-Y", text, "blank-bad.pcap")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    if caret_at is None:        # the end of the text: tshark 4.0 prints the message alone
        assert lines == ["protodump: Unexpected end of filter expression."]
        return
    assert "Traceback" not in proc.stderr and len(lines) == 3, proc.stderr
    assert lines[0].startswith("protodump: ") and lines[1] == "    " + text
    assert lines[2].index("^") == 4 + caret_at


def test_api_read_with_filter(monkeypatch):
    monkeypatch.chdir(ROOT)
    import doctest
    result = doctest.testmod(protodump, verbose=False)
    assert result.attempted >= 4 and result.failed == 0
    names = [(p.number, p["blank.login.name"]) for p in protodump.read(CAPTURES_DIR / "blank-bad.pcap",
                                                                       filter="blank.login.name")]
    assert names == [(1, "mallory"), (21, "mallory"), (22, "x" * 32)]
    compiled = protodump.compile_filter("blank.type == Ping")
    assert [p.number for p in protodump.read(CAPTURES_DIR / "blank-bad.pcap", filter=compiled)] == [8]
    with pytest.raises(protodump.FilterError):
        protodump.read(CAPTURES_DIR / "blank-bad.pcap", filter="blank.nope")
    port = list(protodump.read(CAPTURES_DIR / "blank-port-23456.pcap", filter="blank",
                               decode_as={23456: "blank"}))
    assert port and all(p.protocol == "blank" for p in port)


_PACKETS = None


def _some_packets():
    global _PACKETS
    if _PACKETS is None:
        _PACKETS = list(packets(CAPTURES_DIR / "blank-bad.pcap"))[:12]
    return _PACKETS


ALPHABET = st.sampled_from(list("abcdeflmnopqrstxyz0123456789 ._-:/\\\"'()[]{},!=<>~&|^$*+?") +
                           ["blank.seq", "blank.login.name", "ip.addr", "udp.payload", "eth.src", "blank",
                            " and ", " or ", " not ", " in ", " contains ", " matches ", "==", "..", "0x1f"])


def _only_filter_errors(text: str) -> None:
    try:
        f = compile_filter(text)
    except FilterError as exc:
        assert exc.position is None or 0 <= exc.position <= len(text)
        return
    for packet in _some_packets():
        f(packet)


@settings(max_examples=400, deadline=None)
@given(st.lists(ALPHABET, max_size=16).map("".join))
def test_random_filters_only_raise_filter_error(text):
    _only_filter_errors(text)


FIELDS = st.sampled_from(["blank.seq", "blank.type", "blank.login.name", "blank.malformed", "blank", "ip.src",
                          "ip.ttl", "udp.port", "udp.payload", "eth.src", "frame.len", "frame.time_delta",
                          "_ws.expert"])
OPERANDS = st.one_of(FIELDS, FIELDS.map(lambda f: f + "[0:2]"),
                     st.tuples(st.sampled_from(sorted(FUNCTIONS)), FIELDS).map(lambda c: f"{c[0]}({c[1]})"),
                     st.sampled_from(["1", "-1", "1.5", '"a"', "01:02", "1.2.3.4", "{1 2}", "Login", "true"]))


@settings(max_examples=300, deadline=None)
@given(OPERANDS, st.sampled_from([" == ", " != ", " < ", " contains ", " matches ", " in ", " & ", " + ", " ~ "]),
       OPERANDS)
def test_random_relations_only_raise_filter_error(left, op, right):
    """Fields, slices and function calls on either side of every operator: relations the token soup above rarely
    spells (a function's result once had no type to name in an error, 'len(_ws.expert) contains _ws.expert', and
    a string on the right of '+' reached the evaluation, 'blank.seq + blank.login.name')."""
    _only_filter_errors(left + op + right)


@pytest.mark.parametrize("text, message", [
    ("!len(_ws.expert) contains _ws.expert",
     "Function len (type=Unsigned integer (4 bytes)) cannot participate in contains comparison."),  # tshark's
    ('count(ip.addr) matches "a"',
     "Function count (type=Unsigned integer (4 bytes)) cannot participate in matches comparison."),  # tshark's
    ('len(blank.seq) == "abc"', 'Unsigned integer (4 bytes) cannot be converted from a string ("abc").'),   # tshark's
    ('abs(udp.port) == "x"', 'Unsigned integer (2 bytes) cannot be converted from a string ("x").'),        # tshark's
    ("blank.seq + blank.login.name", "FT_STRING cannot +."),                                                # tshark's
    ("frame.len + frame.time_delta == 1", "frame.len and frame.time_delta are not type compatible."),       # tshark's
])
def test_operand_types_are_filter_errors(text, message):
    """The falsifying examples of fresh-draw runs (they raised KeyError and TypeError); tshark's message where
    marked."""
    with pytest.raises(FilterError) as info:
        compile_filter(text)
    assert info.value.message == message
