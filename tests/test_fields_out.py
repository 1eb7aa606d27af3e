"""-T fields and `protodump fields`: protodump's -T fields output is tshark's (with the generated plugin), byte for
byte, on every capture, for every field both know, with and without -E options; `protodump fields` lists every
field that any JSON output shows.

tshark 4.0.17 facts these tests pin down (output/fields_out.py implements them): bytes print as plain hex, FT_NONE
as "1", a Lua protocol as its abbrev ("blank"), a standard layer as its label; booleans 1/0; hex integers "0x..";
value-string fields their number; occurrences joined by the aggregator; the header unquoted; separator and
aggregator cut to one character; \\b \\t \\n \\f \\r escaped in values, nothing else.
"""
from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import (CAPTURES_DIR, GOLDEN_DIR, PLUGIN, PROTODUMP, TSHARK, VARIANTS, packet_layers,
                      variant_id)

CORE = ["frame.number", "ip.src", "udp.srcport", "udp.length", "blank.seq", "blank.type", "blank.login.name",
        "blank.state.velocity.x", "blank.state.pitch", "blank.padding", "blank.ack_history",
        "blank.ack_history.received", "blank.acked", "blank.chunk.inflated_size",
        "blank.spawn.flags.world_collision", "blank.revision", "blank", "ip", "frame", "_ws.expert",
        "_ws.expert.message", "_ws.expert.severity", "_ws.expert.group", "_ws.malformed", "blank.malformed",
        "blank.state"]
OPTION_SETS = [
    ("-E", "header=y", "-E", "quote=d", "-E", "occurrence=f"),
    ("-E", "separator=/s", "-E", "aggregator=;", "-E", "occurrence=l", "-E", "quote=s", "-E", "header=y"),
    ("-E", "separator=|x", "-E", "aggregator=/s", "-E", "bom=y", "-E", "quote=n", "-E", "occurrence=a"),
]
SKELETON = {"_index", "_type", "_score", "_source", "layers"}
ABBREV = re.compile(r"[a-z0-9_.\-]+")

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")


def _run(cmd):
    return subprocess.run(cmd, cwd=CAPTURES_DIR, capture_output=True, timeout=300)


def _tshark(*args):
    return [TSHARK, "-n", "-X", f"lua_script:{PLUGIN}", *args]


def _e(fields):
    return [a for f in fields for a in ("-e", f)]


@pytest.fixture(scope="module")
def known():
    from protodump.dissectors import PROTOCOLS
    from protodump.output.fields_out import known_fields
    return known_fields(PROTOCOLS)


@pytest.fixture(scope="module")
def common(known):
    """Fields both protodump and tshark (with the plugin) register: every one is compared."""
    out = _run([TSHARK, "-G", "fields", "-X", f"lua_script:{PLUGIN}"]).stdout.decode("utf-8", "replace")
    theirs = {line.split("\t")[2] for line in out.splitlines() if line[:2] in ("P\t", "F\t")}
    return sorted(set(known) & theirs)


@pytest.fixture(scope="module")
def runs(common):
    """Every (protodump, tshark) pair this module compares, run two at a time; key -> (ours, theirs). Per capture
    variant: every common field with the default options, and the core fields with one of the option sets (in
    turn, so each set meets several captures)."""
    jobs = {}
    for i, (name, extra) in enumerate(VARIANTS):
        vid = variant_id((name, extra))
        jobs[("all", vid)] = [*extra, "-T", "fields", *_e(common)], name
        jobs[("opts", vid)] = [*extra, "-T", "fields", *_e(CORE), *OPTION_SETS[i % len(OPTION_SETS)]], name
    with ThreadPoolExecutor(2) as pool:
        futures = {key: (pool.submit(_run, [*PROTODUMP, "-n", *args, name]), pool.submit(_run, _tshark(*args, "-r", name)))
                   for key, (args, name) in jobs.items()}
        return {key: (a.result(), b.result()) for key, (a, b) in futures.items()}


def own_experts() -> set[str]:
    """Expert abbrevs protodump adds to layers that tshark's own dissectors show (websocket, http): checks tshark
    does not make (a Sec-WebSocket-Accept that does not match its key, a bad frame length)."""
    from protodump.dissectors import PROTOCOLS
    return {f"{p.name}.{kind}" for p in PROTOCOLS if not getattr(p, "lua", True) for kind in p.experts}


def _keys(obj):
    for k, v in obj:
        yield k
        if isinstance(v, list):
            yield from _keys(v)


def divergent_lines(capture: str) -> set[int]:
    """Output lines (0-based frames) that differ from tshark by design, read from the capture's golden JSON: frames
    with an expert info of protodump's own (own_experts)."""
    golden = GOLDEN_DIR / f"{capture}.json"
    if not golden.exists():
        return set()
    layers = packet_layers(golden.read_bytes().decode("utf-8", "surrogateescape"))
    own = own_experts()
    return {i for i, frame in enumerate(layers) if own & set(_keys(frame))}


def _same(ours, theirs, fields, sep="\t", skip=frozenset()):
    assert theirs.returncode == 0, theirs.stderr.decode(errors="replace")
    assert ours.returncode == 0, ours.stderr.decode(errors="replace")
    assert ours.stderr == b""
    a = ours.stdout.decode("utf-8", "surrogateescape").split("\n")
    b = theirs.stdout.decode("utf-8", "surrogateescape").split("\n")
    assert len(a) == len(b), f"protodump printed {len(a)} lines, tshark {len(b)}"
    for n, (x, y) in enumerate(zip(a, b)):
        if x != y and n not in skip:
            diffs = [f"{f}: protodump {u[:120]!r} tshark {v[:120]!r}"
                     for f, u, v in zip(fields, x.split(sep), y.split(sep)) if u != v]
            pytest.fail(f"line {n + 1} differs:\n" + "\n".join(diffs[:10] or [f"{x[:300]!r}\n{y[:300]!r}"]))
    if not skip:
        assert ours.stdout == theirs.stdout


def test_core_fields_are_compared(common):
    assert set(CORE) <= set(common)


def test_compared_fields_cover_the_json_output(common, known):
    """No field shown in a JSON output escapes the comparison, except abbrevs tshark 4.0 lacks (listed here) and
    the ones protodump adds to layers tshark's own dissectors show (websocket, http: its expert infos, ...)."""
    from protodump.dissectors import PROTOCOLS
    own = {a for p in PROTOCOLS if not getattr(p, "lua", True) for a in p.fields} | own_experts()
    shown = _json_abbrevs()
    assert shown - set(common) - own <= {"ip.options"}


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_all_fields_match_tshark(runs, common, variant):
    _same(*runs[("all", variant_id(variant))], common, skip=divergent_lines(variant[0]))


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_options_match_tshark(runs, variant):
    opts = OPTION_SETS[VARIANTS.index(variant) % len(OPTION_SETS)]
    sep = {"separator=/s": " ", "separator=|x": "|"}.get(next((o for o in opts if "separator" in o), ""), "\t")
    skip = divergent_lines(variant[0])
    if "header=y" in opts:          # the header line comes first: the frames' lines are one further down
        skip = {n + 1 for n in skip}
    _same(*runs[("opts", variant_id(variant))], CORE, sep, skip=skip)


def test_escapes_match_tshark(tmp_path):
    """Strings with every control character, backslash, quotes, non-ASCII and invalid UTF-8 (a made capture)."""
    from scapy.all import IP, UDP, Ether, wrpcap
    from protodump.dissectors.blank import PROTOCOL

    names = ["a" + chr(c) + "b" for c in [*range(1, 32), 0x5C, 0x7F, 0x22, 0x27]] + ["caf\u00e9 ,;|"]
    pkts = [Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=4000, dport=12354) /
            PROTOCOL.encode({"seq": i, "type": 1, "name": n}) for i, n in enumerate(names)]
    raw = PROTOCOL.encode({"seq": 99, "type": 1, "name": "x"}).replace(b"x", b"\xff\xfe")
    pkts.append(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=4000, dport=12354) / raw)
    path = tmp_path / "escapes.pcap"
    wrpcap(str(path), pkts)
    fields = ["blank.login.name", "frame.number", "blank.ack_history.received"]
    for opts in ((), ("-E", "quote=d")):
        args = ["-T", "fields", *_e(fields), *opts]
        _same(_run([*PROTODUMP, "-n", *args, str(path)]), _run(_tshark(*args, "-r", str(path))), fields)


# --- errors ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["-T", "fields", "-e", "frame.number", "-e", "no.such.field"], "Some fields aren't valid: no.such.field"),
    (["-T", "fields", "-e", "frame.number", "-E", "quote=x"], "'quote=x' is not a valid field option"),
    (["-T", "fields", "-e", "frame.number", "-E", "colour=y"], "'colour=y' is not a valid field option"),
    (["-T", "fields"], '"-Tfields" was specified, but no fields were specified with "-e".'),
    (["-e", "frame.number"], 'Output fields were specified with "-e", but "-Tek, -Tfields, -Tjson or -Tpdml" was not'),
])
def test_bad_arguments(args, message):
    """One line and tshark's exit code (1 for these)."""
    r = _cli(*args, str(CAPTURES_DIR / "blank-bad.pcap"))
    err = r.stderr
    assert r.exit_code == 1 and r.stdout == ""
    assert message in err and "Traceback" not in err
    assert err.startswith("protodump: ") and err.count("\n") == 1


# --- protodump fields ----------------------------------------------------------------------------------------------

def _cli(*args):
    """protodump in-process (errors and listings need no byte-exact stdout)."""
    from click.testing import CliRunner
    from protodump.cli.main import cli
    return CliRunner().invoke(cli, list(args))


def _json_abbrevs() -> set:
    keys = set()

    def hook(pairs):
        keys.update(k for k, _ in pairs)
        return None

    for path in GOLDEN_DIR.glob("*.json"):
        json.loads(path.read_bytes().decode("utf-8", "surrogateescape"), object_pairs_hook=hook)
    # Text items of tshark's C dissectors ("Timestamps" under tcp, "GET /play HTTP/1.1\\r\\n" under http) are keyed
    # by their label, which is no abbrev: abbrevs are lower case, digits, "_", "." and "-".
    # (wslua's valueless `_ws.lua.fake`, one per call of the plugin, is Wireshark's item, not the decode's)
    return {k for k in keys - SKELETON - {"_ws.lua.fake"} if not k.endswith("_tree") and ABBREV.fullmatch(k)}


@pytest.fixture(scope="module")
def listing():
    r = _cli("fields")
    assert r.exit_code == 0, r.output
    return [line.split("\t") for line in r.stdout.splitlines()]


def test_fields_lists_every_json_abbrev(listing):
    listed = {row[0] for row in listing}
    assert all(len(row) == 3 for row in listing)
    assert len(listed) == len(listing), "an abbrev is listed twice"
    assert not (_json_abbrevs() - listed)
    assert {"frame", "eth", "ip", "ipv6", "udp", "tcp", "blank", "_ws.expert"} <= listed


def test_fields_accepts_everything_listed(listing, known):
    assert {row[0] for row in listing} == set(known)


def test_fields_blank_keeps_the_readme_form():
    lines = _cli("fields", "blank").stdout.splitlines()
    assert lines[:3] == ["blank\tprotocol\tblank game protocol", "blank.tag\tuint32 HEX\tProtocol tag",
                         "blank.seq\tuint16 DEC\tSequence number"]
    assert all(line.startswith("blank") for line in lines)
    assert "blank.padding\tbytes\tPadding" in lines


def test_fields_json_and_filter():
    rows = json.loads(_cli("fields", "--format", "json", "udp").stdout)
    assert rows[0] == {"abbrev": "udp", "type": "protocol", "base": None, "name": "User Datagram Protocol",
                       "protocol": "udp"}
    assert {"abbrev": "udp.srcport", "type": "uint16", "base": "DEC", "name": "Source Port",
            "protocol": "udp"} in rows
    assert all(row["protocol"] == "udp" for row in rows)
    bad = _cli("fields", "nosuch")
    assert bad.exit_code == 2 and "unknown protocol 'nosuch'" in bad.stderr
