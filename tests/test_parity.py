"""Every game layer protodump prints with -T json is the one tshark prints with the generated plugin
(lua/protodump.lua), packet by packet: same keys, same order, same values, same text; a frame with several
layers of one protocol (PDUs of one TCP segment, Iceball messages in one ENet datagram) has them in the same
order. And the plugin never raises a Lua error on any capture."""
from __future__ import annotations

import difflib
import json
import re

import pytest

from conftest import LUA_ERROR, VARIANTS, layers_of, packet_layers, raw_layers, variant_id
from protodump.dissectors import PROTOCOLS

# The layers the plugin itself builds (a Python-only layer such as websocket, which tshark's own dissector
# shows in the plugin's place, is compared by its own tests).
PARITY = [p.name for p in PROTOCOLS if getattr(p, "lua", True) and getattr(p, "lua_parity", True)]


def _show(layer) -> list[str]:
    return json.dumps(layer, indent=1, ensure_ascii=False).splitlines()


def layer_mismatches(ours_text: str, theirs_text: str, proto: str = "blank", limit: int = 3) -> list[str]:
    """Human-readable reports of the packets whose `proto` layer differs (parsed and raw text)."""
    ours, theirs = packet_layers(ours_text), packet_layers(theirs_text)
    reports = []
    if len(ours) != len(theirs):
        reports.append(f"protodump has {len(ours)} packets, tshark {len(theirs)}")
    raw_ours, raw_theirs = raw_layers(ours_text, proto), raw_layers(theirs_text, proto)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        a, b = layers_of(o, proto), layers_of(t, proto)
        if a != b:
            diff = difflib.unified_diff(_show(a), _show(b), "protodump", "tshark", lineterm="", n=3)
            reports.append(f"frame {i + 1}: {proto} layer differs\n" + "\n".join(list(diff)[:60]))
        elif i < len(raw_ours) and i < len(raw_theirs) and raw_ours[i] != raw_theirs[i]:
            diff = difflib.unified_diff((raw_ours[i] or "").splitlines(), (raw_theirs[i] or "").splitlines(),
                                        "protodump", "tshark", lineterm="", n=2)
            reports.append(f"frame {i + 1}: raw text of the {proto} layer differs\n" + "\n".join(list(diff)[:40]))
    return reports


# The Wireshark versions people run: the system's tshark, and the other one (4.4 / Lua 5.4 from Debian 13 on a
# Debian 12 machine, 4.0 / Lua 5.2 from Debian 12 on Debian 13) in a Debian root where the machine has one
# (tools/test.sh builds it; skipped elsewhere).
WIRESHARKS = ["tshark_run", "other_run"]


@pytest.fixture(scope="module", params=[(w, v) for w in WIRESHARKS for v in VARIANTS],
                ids=lambda p: f"{p[0].split('_')[0]}-{variant_id(p[1])}")
def both(request, protodump_run):
    wireshark, (name, extra) = request.param
    tshark = request.getfixturevalue(wireshark)
    return name, protodump_run("-T", "json", *extra, name), tshark("-T", "json", *extra, "-r", name)


def test_no_lua_error(both):
    name, _, theirs = both
    assert theirs.returncode == 0, theirs.stderr
    for where, text in (("output", theirs.stdout), ("stderr", theirs.stderr)):
        m = LUA_ERROR.search(text)
        assert m is None, f"tshark {where} on {name}: {text[max(0, m.start() - 300):m.end() + 300]}"


def test_no_dissector_error(both):
    name, ours, _ = both
    assert ours.returncode == 0, ours.stderr
    assert "Dissector error" not in ours.stdout


def present(text: str, skip: list[bool] | None = None) -> list[list[str]]:
    """Per packet: the names of its game layers, in order (None for a frame in `skip`)."""
    return [None if skip and skip[i] else [k for k, _ in layers if k in PARITY]
            for i, layers in enumerate(packet_layers(text))]


def test_game_layer_parity(both):
    name, ours, theirs = both
    found = {proto for layers in present(ours.stdout) for proto in layers}
    reports = [r for proto in sorted(found) for r in layer_mismatches(ours.stdout, theirs.stdout, proto)]
    if reports:
        pytest.fail(f"{name}: {len(reports)} packet(s) differ\n\n" + "\n\n".join(reports[:3]), pytrace=False)


def test_game_layers_present(both):
    """Both sides found the same game layers in the same frames (and found some at all)."""
    name, ours, theirs = both
    a, b = present(ours.stdout), present(theirs.stdout)
    assert any(a), f"protodump found no game layer in {name}"
    assert a == b, [(i + 1, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y][:10]


# Rows whose Info differs for a reason outside the plugin, (capture, None: every tshark): why.
INFO_KNOWN = {
    ("rutentoy-lost-reordered.pcap", None): "tshark's TCP puts its analysis flag ([TCP Previous segment not "
                                            "captured]) before the Info of the layer above; protodump does not yet",
}
TCP_TAG = re.compile(r"\[TCP [^\]]*\] ")
GAME_ROW = re.compile(r"^ +\d+ +\S+ +\S+ . \S+ +(" + "|".join(PARITY) + r") ", re.M)


def _escape(m) -> str:
    c = m.group(0)
    return {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\v": "\\v"}.get(c, f"\\x{ord(c):02x}")


@pytest.fixture(scope="module", params=[(w, v) for w in WIRESHARKS for v in VARIANTS],
                ids=lambda p: f"{p[0].split('_')[0]}-{variant_id(p[1])}")
def summaries(request, protodump_run):
    wireshark, (name, extra) = request.param
    tshark = request.getfixturevalue(wireshark)
    m = re.search(r"(\d+)\.(\d+)\.", tshark("--version").stdout)
    version = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    return name, version, protodump_run(*extra, name), tshark(*extra, "-r", name)


def test_info_columns(summaries):
    """The summary rows of the frames with a game layer (Protocol and Info columns: several messages of a frame
    joined with ", ", also over SCTP chunks and WebSocket messages) are tshark's."""
    name, version, ours, theirs = summaries
    if (name, None) in INFO_KNOWN:
        pytest.skip(INFO_KNOWN[(name, None)])
    a = [line for line in ours.stdout.split("\n") if GAME_ROW.match(line)]        # (a \r inside a row is data)
    b = [line for line in theirs.stdout.split("\n") if GAME_ROW.match(line)]
    assert a, f"no game row in {name}"
    if version >= (4, 2):       # tshark 4.2+ escapes control characters in columns (\r, \x01); 4.0, and protodump, not
        a = [re.sub(r"[\x00-\x1f]", _escape, x) for x in a]
    if version != (4, 0):       # TCP's analysis tags are the standard layers', which follow tshark 4.0 (4.4 flags a
        a, b = ([TCP_TAG.sub("", x) for x in rows] for rows in (a, b))      # lossy capture's segments otherwise)
    assert a == b, [(x, y) for x, y in zip(a, b) if x != y][:3] or (len(a), len(b))


def stat_cases():
    """(capture, -z argument): each capture's own game protocol's statistics (and ENet's under Iceball)."""
    cases = []
    for name in sorted({v[0] for v in VARIANTS}):
        protos = [p for p in PARITY if name.startswith(p)] or (["freeblox"] if name.startswith("websocket") else [])
        if name.startswith("iceball-enet"):
            protos.append("enet")
        for p in protos:
            cases.append((name, f"{p},types"))
            if p == "blank":
                cases.append((name, "blank,seq"))
    return cases


@pytest.mark.parametrize("wireshark", WIRESHARKS)
@pytest.mark.parametrize("name,stat", stat_cases())
def test_game_statistics_in_tshark(request, wireshark, name, stat, protodump_run):
    """`tshark -q -z <proto>,types|seq` with the plugin prints protodump's statistics byte for byte (the plugin
    registers them: lua/rt_stats.lua)."""
    tshark = request.getfixturevalue(wireshark)
    ours, theirs = protodump_run("-q", "-z", stat, name), tshark("-q", "-z", stat, "-r", name)
    assert ours.returncode == 0 and theirs.returncode == 0, theirs.stderr
    assert ours.stdout.count("\n") > 4, ours.stdout
    assert theirs.stdout == ours.stdout
