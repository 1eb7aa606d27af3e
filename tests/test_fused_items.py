"""-T fields and -z <proto>,types by the fused machine (analysis/fused_items.py; output/fields_fused.py,
analysis/types_fused.py) give exactly the full decode's lines and counts: on every bundled capture, on many
conversations of every family with some given to the full decode, on damaged input (a property), with -E options
and -c, through the CLI, and the lines as tshark + the plugin prints them."""
import gc
import io
import random
import subprocess
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import PROTODUMP
from protodump.analysis import stats, stats_fused, types_fused
from protodump.cli.read_cmd import run_demand
from protodump.dissectors import PROTOCOLS
from protodump.engine.dispatch import Dispatcher, Settings
from protodump.output import fields_fused, fields_out
from protodump.session import packets
from test_fused_phs import (BUNDLED, full_tree, EDITS, FAMILIES, TEMPLATE, WS_EDITS, WS_TEMPLATE, _damaged,
                            _retransmitted, conversation_frames, write)

ROOT = Path(__file__).resolve().parents[1]
# a few fields of every family, and the standard ones the machine reads from the headers
SETS = {
    "standard": ["frame.number", "ip.addr", "tcp.port", "udp.srcport", "frame.len", "ip.dst", "frame.cap_len"],
    "blank": ["frame.number", "blank.seq", "blank.type", "blank.ack", "blank.acked"],
    "iceball": ["frame.number", "iceball.lua_id", "iceball.plr_pos.pid", "ip.src", "udp.dstport", "iceball.data"],
    "rutentoy": ["rutentoy.opcode", "rutentoy.move.oid", "rutentoy.create.model", "tcp.dstport", "frame.number"],
    "freeblox": ["freeblox.id", "freeblox.sender", "freeblox.stream_object.object_uuid", "freeblox.json.key",
                 "frame.number"],
}
ALL = [n for names in SETS.values() for n in names if n != "frame.number"] + ["frame.number"]


TYPES = ["blank,types", "iceball,types", "rutentoy,types", "freeblox,types"]


def _dispatcher(names, prefs=None, taps=()) -> Dispatcher:
    gc.collect()        # the reassembly budget is the process's: what an earlier decode's cycles hold goes first
    dispatcher = Dispatcher(PROTOCOLS, Settings(dict(prefs or {})))
    dispatcher.demand = run_demand(list(taps), None, None, False, bool(taps), "fields", names)
    return dispatcher


def full_types(path, args, prefs=None, limit=None) -> list:
    taps = stats.make_taps(args)
    for packet in islice(packets(path, dispatcher=_dispatcher((), prefs, taps)), limit):
        for tap in taps:
            tap.add(packet)
    return [tap.result() for tap in taps]


def fused_types(path, args, prefs=None, limit=None):
    """(the machine, or None when it gave the capture to the full decode; the taps' results)."""
    taps = stats.make_taps(args)
    dispatcher = _dispatcher((), prefs, taps)
    assert types_fused.applies(taps, dispatcher.demand, PROTOCOLS)
    machine = types_fused.count_types(path, dispatcher, taps, PROTOCOLS, limit)
    return machine, [tap.result() for tap in taps]


def full_lines(path, names, prefs=None, limit=None, options=()) -> str:
    out = io.StringIO()
    writer = fields_out.make_writer(out, names, options, PROTOCOLS)
    for packet in islice(packets(path, dispatcher=_dispatcher(names, prefs)), limit):
        writer.write(packet)
    writer.close()
    return out.getvalue()


def fused_lines(path, names, prefs=None, limit=None, options=()):
    """(the machine, or None when it gave the capture to the full decode; what it printed)."""
    out = io.StringIO()
    writer = fields_out.make_writer(out, names, options, PROTOCOLS)
    machine = fields_fused.write_fields(path, _dispatcher(names, prefs), writer, PROTOCOLS, limit)
    return machine, out.getvalue()


@pytest.mark.parametrize("family", SETS)
@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.rsplit("/", 1)[-1])
def test_fused_fields_equal_the_full_decode_on_every_bundled_capture(path, family):
    names = SETS[family]
    machine, fast = fused_lines(path, names)
    if machine is not None:
        assert fast == full_lines(path, names)
    else:
        assert fast == ""            # nothing printed: the caller decodes every frame


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.rsplit("/", 1)[-1])
def test_fused_types_equal_the_full_decode_on_every_bundled_capture(path):
    machine, fast = fused_types(path, TYPES)
    if machine is not None:
        assert fast == full_types(path, TYPES)
    else:                            # the taps untouched: the caller decodes every frame
        assert all(not r.get("conversations") for r in fast)


def test_the_machine_takes_the_clean_captures():
    """Not a vacuous equality: each family's sessions are modelled frame by frame, their game fields there."""
    for name, names in [("blank-server-session", SETS["blank"]), ("iceball-enet-session", SETS["iceball"]),
                        ("iceball-tcp-session", SETS["iceball"]), ("rutentoy-messages", SETS["rutentoy"]),
                        ("freeblox-session", SETS["freeblox"])]:
        path = ROOT / "captures" / f"{name}.pcap"
        machine, fast = fused_lines(path, names)
        assert machine is not None and not machine.full, name
        lines = fast.splitlines()
        assert machine.modelled == len(lines) > 10, name
        assert sum(1 for line in lines if line.split("\t")[1 if names[0] == "frame.number" else 0]) > 5, name


def test_many_conversations_in_both_halves(tmp_path):
    """The clean conversations by the machine, the retransmitting ones by the full decode, merged in frame order;
    every family's fields at once."""
    path = write(tmp_path / "retransmitted.pcap", _retransmitted(conversation_frames("mix", 6000, 12, 4, FAMILIES),
                                                                  12))
    machine, fast = fused_lines(path, ALL)
    assert machine is not None and len(machine.full) >= 10 and machine.modelled >= 3000
    assert fast == full_lines(path, ALL)
    machine, counted = fused_types(path, TYPES)
    assert machine is not None and len(machine.full) >= 10 and machine.modelled >= 3000
    assert counted == full_types(path, TYPES)
    assert all(len(r["conversations"]) >= 12 for r in counted)      # every protocol's, in both halves


@pytest.mark.parametrize("options", [["header=y", "quote=d", "occurrence=f"], ["aggregator=/s", "separator=;"],
                                     ["occurrence=l", "bom=y", "header=y"]])
def test_options_and_a_count(tmp_path, options):
    path = write(tmp_path / "mix.pcap", _retransmitted(conversation_frames("mix", 3000, 12, 4, FAMILIES), 4))
    machine, fast = fused_lines(path, ALL, limit=1700, options=options)
    assert machine is not None and len(fast.splitlines()) == 1700 + ("header=y" in options)
    assert fast == full_lines(path, ALL, limit=1700, options=options)
    assert fused_types(path, TYPES, limit=1700)[1] == full_types(path, TYPES, limit=1700)


@pytest.mark.parametrize("prefs", [{"protodump.max_conversations": "10"}, {"protodump.reassembly_budget": "3000"}])
def test_near_a_global_bound_nothing_is_printed_and_the_full_decode_runs(tmp_path, prefs):
    path = write(tmp_path / "mix.pcap", conversation_frames("mix", 3000, 12, 4, FAMILIES))
    machine, fast = fused_lines(path, ALL, prefs)
    assert (machine, fast) == (None, "")
    machine, counted = fused_types(path, TYPES, prefs)
    assert machine is None and all(not r["conversations"] for r in counted)


def test_a_flood_of_conversations_goes_to_the_full_decode(tmp_path, monkeypatch):
    """Past MAX_TRACKED conversations (a flood of conversations opened once: each costs the machine a few KB until
    it ends) every fused run gives the capture to the full decode, which frees them."""
    path = write(tmp_path / "mix.pcap", conversation_frames("mix", 3000, 12, 4, FAMILIES))
    assert fused_lines(path, ALL)[0] is not None
    monkeypatch.setattr(stats_fused, "MAX_TRACKED", 30)
    assert stats_fused.Fused(Dispatcher(PROTOCOLS)).run(path) is False
    assert fused_lines(path, ALL) == (None, "")
    assert fused_types(path, TYPES)[0] is None
    gc.collect()
    assert repr(stats_fused.protocol_tree(path, Dispatcher(PROTOCOLS))) == repr(full_tree(path))


@pytest.mark.parametrize("names", [["frame.number", "rutentoy"], ["_ws.col.Info"], ["tcp.stream"],
                                   ["frame.time_relative"], ["enet.command.type"], ["websocket.opcode"]])
def test_what_the_machine_does_not_make_is_the_full_decode(names):
    """A layer's label, a column, TCP's analysis, times relative to the capture, ENet's or WebSocket's own fields:
    not the machine's."""
    assert not fields_fused.applies(names, _dispatcher(names).demand, PROTOCOLS)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS, timeout=st.sampled_from([None, "1"]))
def test_prop_fused_fields_equal_full_on_damaged_input(tmp_path, edits, timeout):
    path = write(tmp_path / f"damaged-{random.getrandbits(32)}.pcap", _damaged(edits))
    prefs = {"protodump.conversation_timeout": timeout} if timeout else {}
    machine, fast = fused_lines(path, ALL, prefs)
    if machine is not None:
        assert fast == full_lines(path, ALL, prefs)
    machine, counted = fused_types(path, TYPES, prefs)
    if machine is not None:
        assert counted == full_types(path, TYPES, prefs)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=WS_EDITS)
def test_prop_fused_websocket_fields_equal_full_on_damaged_input(tmp_path, edits):
    path = write(tmp_path / f"ws-{random.getrandbits(32)}.pcap", _damaged(edits, WS_TEMPLATE))
    machine, fast = fused_lines(path, SETS["freeblox"])
    if machine is not None:
        assert fast == full_lines(path, SETS["freeblox"])
    machine, counted = fused_types(path, ["freeblox,types"])
    if machine is not None:
        assert counted == full_types(path, ["freeblox,types"])


def test_the_templates_are_modelled(tmp_path):
    """The properties above compare something: undamaged, their templates are the machine's."""
    for i, (template, names) in enumerate(((TEMPLATE, ALL), (WS_TEMPLATE, SETS["freeblox"]))):
        machine, _ = fused_lines(write(tmp_path / f"template-{i}.pcap", template), names)
        assert machine is not None and machine.modelled > len(template) // 2


# --- the CLI, and tshark -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    path = tmp_path_factory.mktemp("fields") / "mix.pcap"
    return write(path, _retransmitted(conversation_frames("mix", 4000, 12, 4, FAMILIES), 6))


@pytest.mark.parametrize("family", SETS)
def test_cli_takes_the_machine_and_prints_tsharks_lines(mixed, tshark_run, family):
    args = ["-T", "fields", *(a for n in SETS[family] for a in ("-e", n)), "-E", "header=y"]
    ours = subprocess.run([*PROTODUMP, "-r", str(mixed), *args], capture_output=True, text=True, check=True)
    assert ours.stdout == tshark_run("-r", str(mixed), *args).stdout
    assert ours.stdout.count("\n") == 4001 + 6


def test_cli_with_a_count_and_a_damaged_file(mixed, tmp_path):
    """-c N, and a capture cut inside a record: the lines that could be read, then tshark's error and exit code,
    as without the machine (a display filter takes every frame through the full decode)."""
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(mixed.read_bytes()[:-30])
    for path, extra in ((mixed, ["-c", "999"]), (cut, [])):
        base = [*PROTODUMP, "-r", str(path), "-T", "fields", "-e", "frame.number", "-e", "rutentoy.opcode", *extra]
        fast = subprocess.run(base, capture_output=True, text=True)
        full = subprocess.run([*base, "-Y", "frame"], capture_output=True, text=True)
        assert (fast.stdout, fast.stderr, fast.returncode) == (full.stdout, full.stderr, full.returncode)
    assert fast.returncode == 1 and "rutentoy" not in fast.stderr and fast.stdout.count("\n") > 3000


@pytest.mark.parametrize("form", ["text", "json"])
def test_cli_types_are_the_full_decodes(mixed, form):
    """The CLI takes the machine for -q -z <proto>,types alone; a preference (-o) makes it decode in full."""
    base = [*PROTODUMP, "-q", *(a for t in TYPES for a in ("-z", t)), "--format", form, str(mixed)]
    fast = subprocess.run(base, capture_output=True, text=True, check=True)
    full = subprocess.run([*base, "-o", "protodump.conversation_timeout:600"], capture_output=True, text=True,
                          check=True)
    assert fast.stdout == full.stdout and fast.stdout.count("STREAM_ASSET") > 5


class _Tight:
    """A reassembly budget whose half the full decode's pending bytes pass at once (what the machine's run reads
    of PENDING: analysis/fused_items.py)."""
    limit = -2

    @property
    def used(self):
        from protodump.reassembly.budget import PENDING
        return PENDING.used


def test_near_a_bound_in_the_second_pass_the_full_decode_takes_over(mixed, monkeypatch):
    """The full decode's pending reassembly with the machine's highest near the budget in the second pass: the
    lines so far stay (they are one pass's), and the plain pass decodes every frame again, printing from there on."""
    from click.testing import CliRunner
    from protodump.analysis import fused_items
    from protodump.cli import read_cmd
    args = ["-r", str(mixed), "-T", "fields", "-e", "frame.number", "-e", "rutentoy.opcode", "-E", "header=y"]
    full = CliRunner().invoke(read_cmd.read, [*args, "-Y", "frame"], catch_exceptions=False).output
    resumed = []
    real_run = fused_items.run

    def run(*a, **kw):
        machine = real_run(*a, **kw)
        resumed.append(machine.resume)
        return machine
    monkeypatch.setattr(fused_items, "PENDING", _Tight())
    monkeypatch.setattr(fused_items, "run", run)
    ours = CliRunner().invoke(read_cmd.read, args, catch_exceptions=False).output
    assert ours == full and resumed[0] is not None and 1 < resumed[0] < 4000
    machine, counted = fused_types(mixed, TYPES)
    assert machine is None and all(not r["conversations"] for r in counted)
