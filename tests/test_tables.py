"""The tables themselves: the checked-in plugin is what the tables generate; encode/decode round trips;
random bytes never raise."""
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from protodump.dissectors import PROTOCOLS
from protodump.dissectors.blank import PROTOCOL as BLANK
from protodump.engine.lua_backend import generate

ROOT = Path(__file__).resolve().parents[1]


def test_checked_in_plugin_is_regenerated_exactly():
    assert (ROOT / "lua" / "protodump.lua").read_text() == generate(PROTOCOLS)


@pytest.mark.parametrize("luac", ["luac5.2", "luac5.4"])
def test_plugin_syntax(luac):
    if shutil.which(luac) is None:
        pytest.skip(f"{luac} not installed")
    subprocess.run([luac, "-p", str(ROOT / "lua" / "protodump.lua")], check=True)


CASES = [(rev, code) for rev, sw in BLANK.body.items() for code in sw.cases]


@pytest.mark.parametrize("revision,code", CASES)
@settings(max_examples=30, deadline=None)
@given(seq=st.integers(0, 0xFFFF), ack=st.integers(0, 0xFFFF), history=st.integers(0, 0xFFFFFFFF),
       count=st.integers(1, 3), name=st.text(st.characters(min_codepoint=1, max_codepoint=0x2FFF), max_size=8))
def test_round_trip_every_packet_type(revision, code, seq, ack, history, count, name):
    values = {"seq": seq, "ack": ack, "ack_history": history, "type": code}
    packet = BLANK.body[revision].cases[code]
    names = {f.name for f in packet.fields}
    if "count" in names:
        values["count"] = count
        array = "entities" if "entities" in names else "blocks"
        values[array] = [{} for _ in range(count)]
    for text_field in ("name", "world_name", "text"):
        if text_field in names:
            values[text_field] = name
    prefs = {"blank.revision": revision}
    wire = BLANK.encode(values, revision=revision)
    decoded, tree = BLANK.decode_values(wire, prefs)
    for key, value in values.items():
        got = decoded[key]
        if isinstance(value, list):
            assert len(got) == len(value)
        else:
            assert got == value, key
    assert BLANK.encode(decoded, revision=revision) == wire
    assert not [n for n in tree.walk() if n.expert_info and n.expert_info.severity >= 0x00800000]


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=600), revision=st.sampled_from(["auto", "current", "2015"]))
def test_random_bytes_never_raise(payload, revision):
    BLANK.decode_values(payload, {"blank.revision": revision})


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=500), code=st.integers(0, 15))
def test_random_bodies_after_a_valid_header_never_raise(body, code):
    BLANK.decode_values(BLANK.encode({"type": code})[:16] + body)
