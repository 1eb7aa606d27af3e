"""Conversation lifetimes in both halves: a WebSocket closing handshake ends the conversation (Python and the
plugin), and the plugin caps live conversations as Python does (oldest dropped, the same note on its next
packet), with the cap taken from the plugin's LIMITS table (generated from engine/lifetime.py)."""
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protodump.engine import lifetime
from protodump.engine.lua_runtime import lua_limits
from protodump.dissectors import PROTOCOLS
from protodump.reassembly.budget import INFLATE_COST, STATE_BUDGET

from test_bounded import _decode, _write

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def test_a_websocket_close_from_both_sides_ends_the_conversation():
    """freeblox-session.pcap: Close from the client (frame 123), from the server (124), then FIN both ways."""
    ended_at = []

    def watch(d, packet):
        if d.lifetimes.ending and not ended_at:
            ended_at.append(packet.number)

    _decode(ROOT / "captures" / "freeblox-session.pcap", watch=watch)
    assert ended_at == [124]


def test_one_close_does_not_end_it():
    ended = []
    frames = [f for f in _frames("freeblox-session.pcap") if f[2] != 124][:123]
    path = _write(Path(ROOT / "tests" / "tmp" / "one-close.pcap"), [(ts, buf) for ts, buf, _ in frames])
    _decode(path, watch=lambda d, p: ended.append(bool(d.lifetimes.ending)))
    assert not any(ended)


def test_the_plugin_limits_come_from_python():
    limits = lua_limits(PROTOCOLS)
    assert limits["CONV_MAX"] == lifetime.MAX_LIVE and limits["FORGOTTEN_LIMIT"] == lifetime.FORGOTTEN_LIMIT
    assert limits["STATE_BUDGET"] == STATE_BUDGET and limits["INFLATE_COST"] == INFLATE_COST
    runtime = (ROOT / "lua" / "runtime.lua").read_text()
    assert "LIMITS.CONV_MAX" in runtime and "LIMITS.STATE_BUDGET" in runtime


@pytest.mark.parametrize("wireshark", ["system_tshark", "other_tshark"])     # Lua 5.2 (4.0) and 5.4 (4.4)
def test_the_plugin_caps_live_conversations_as_python_does(request, wireshark):
    """The flood of test_bounded's cap test with a cap of 50, in both halves: the same frame gets the same note."""
    tshark = request.getfixturevalue(wireshark)
    from replay import _template, conversation_frames
    session, _ = _template("blank-server-session.pcap")
    t0 = 1_700_000_000.0
    flood = [(ts, buf) for ts, buf in conversation_frames("opened-once", 300, 300, 1, ["blank"], start=t0 + 1)]
    frames = [(t0 + ts / 100, buf) for ts, buf in session[:10]] + flood + \
             [(flood[-1][0] + 0.001 * i, buf) for i, (_, buf) in enumerate(session[10:20], 1)]
    tmp = ROOT / "tests" / "tmp"
    tmp.mkdir(exist_ok=True)
    path = _write(tmp / "lua-flood.pcap", frames)
    plugin = (ROOT / "lua" / "protodump.lua").read_text()
    capped, n = re.subn(r"\bCONV_MAX = \d+", "CONV_MAX = 50", plugin)
    assert n == 1
    (tmp / "capped.lua").write_text(capped)
    out = tshark.run(["-X", f"lua_script:{tmp / 'capped.lua'}", "-r", str(path), "-T", "fields",
                      "-e", "frame.number", "-e", "_ws.expert.message"], check=True, timeout=300).stdout
    out = out.decode() if isinstance(out, bytes) else out
    theirs = _dropped_notes(out)
    notes = _python_dropped_notes(path, {"protodump.max_conversations": "50"}, "blank.sequence")
    assert list(notes) == ["311"]
    assert list(theirs) == ["311"] and notes["311"] in theirs["311"]


def _frames(name):
    import dpkt
    with open(ROOT / "captures" / name, "rb") as f:
        return [(ts, buf, i) for i, (ts, buf) in enumerate(dpkt.pcap.Reader(f), 1)]


@pytest.mark.parametrize("wireshark", ["system_tshark", "other_tshark"])
def test_the_plugin_state_budget_drops_conversations_without_error(request, wireshark):
    """A state budget smaller than one inflate window: the compressed WebSocket connection is dropped at its
    first inflated message (its windows and assembly freed), noted where its next layer starts it again (the
    same frame), and the plugin goes on; Python drops and notes it at the same frame."""
    tshark = request.getfixturevalue(wireshark)
    tmp = ROOT / "tests" / "tmp"
    tmp.mkdir(exist_ok=True)
    plugin = (ROOT / "lua" / "protodump.lua").read_text()
    tight, n = re.subn(r"\bSTATE_BUDGET = \d+", "STATE_BUDGET = 1000", plugin)
    assert n == 1
    (tmp / "tight.lua").write_text(tight)
    run = tshark.run(["-X", f"lua_script:{tmp / 'tight.lua'}", "-r", str(ROOT / "captures" / "freeblox-session.pcap"),
                      "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message"], check=True, timeout=300)
    out = run.stdout.decode() if isinstance(run.stdout, bytes) else run.stdout
    err = run.stderr.decode() if isinstance(run.stderr, bytes) else run.stderr
    assert "Lua" not in err and "rror" not in out.replace("Error/", "")
    assert "conversation state over 1000 bytes: protodump.state_budget" in out
    # Python frees it at the same frame (the charging one, whose Freeblox layer starts it again) with the same note
    theirs = _dropped_notes(out)
    notes = _python_dropped_notes(ROOT / "captures" / "freeblox-session.pcap", {"protodump.state_budget": "1000"},
                                  "_ws.expert")
    assert list(notes) == list(theirs) == ["8"] and notes["8"] in theirs["8"]


def _dropped_notes(fields_out: str) -> dict:
    """Frame number -> expert messages, of the frames whose experts say a conversation was dropped (tshark -T
    fields -e frame.number -e _ws.expert.message)."""
    return {line.split("\t")[0]: line.split("\t", 1)[1] for line in fields_out.splitlines()
            if "Conversation state was dropped" in line}


def _python_dropped_notes(path, prefs: dict, abbrev: str) -> dict:
    """Frame number -> the note, where Python's items under `abbrev` say a conversation was dropped."""
    notes = {}

    def watch(d, packet):
        for item in packet.index().get(abbrev, ()):
            if "Conversation state was dropped" in item.expert_info.message:
                notes[str(packet.number)] = item.expert_info.message

    _decode(path, prefs, watch)
    return notes


def _exact_due(lives, now: float) -> bool:
    """Lifetimes.due as the plain rule: the oldest ended pair lingered, or the oldest live pair idle too long."""
    ending, live = lives.ending, lives.live
    if len(live) + len(ending) > lives.cap:
        return True
    return bool(ending and next(iter(ending.values())) < now - lives.linger
                or live and next(iter(live.values())) < now - lives.timeout)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("touch end expire".split()), st.integers(0, 5),
                          st.floats(-3, 12, allow_nan=False)), max_size=60))
def test_due_keeps_the_plain_rule(steps):
    """Lifetimes.due skips its look until the earliest deadline it has seen (check_at); it says what the plain
    rule says after any sequence of packets, ends and expiries, with capture time forward and backward (a
    capture whose clock runs back), ties and near-ties at the deadlines."""
    lives = lifetime.Lifetimes(timeout=4.0, cap=4, linger=1.0)
    now = 0.0
    for op, pair, step in steps:
        now = now + step if step > -1 else now + step / 1e9      # small backward steps too
        if op == "touch":
            lives.touch(pair, now)
        elif op == "end" and lives.tracks(pair):
            lives.end(pair, now)
        assert lives.due(now) == _exact_due(lives, now)
        if op == "expire" and lives.due(now):
            for _ in lives.expired(now):
                pass
        assert lives.due(now) == _exact_due(lives, now)


def test_due_after_the_clock_ran_back():
    """A pair first seen at a time before the others' (the clock ran back) becomes the oldest when the others
    are seen again: due says so at once, not at the deadline it had noted before."""
    lives = lifetime.Lifetimes(timeout=4.0, cap=10, linger=1.0)
    lives.touch("a", 10.0)
    lives.touch("b", 5.0)            # back in time
    assert not lives.due(9.0)        # "a" is the first, and not idle
    lives.touch("a", 9.6)            # "b" is now the first: idle since 5.0
    assert lives.due(9.6) and list(lives.expired(9.6)) == ["b"]
