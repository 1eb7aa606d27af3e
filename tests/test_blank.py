"""blank: property tests built by walking the bound field tables (every packet type of both revisions round trips
through encode -> decode_values; random bytes never raise), and facts checked on the captures."""
from __future__ import annotations

import math
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import CAPTURES_DIR
from protodump.capture.decode import decode
from protodump.capture.files import open_capture
from protodump.dissectors import PROTOCOLS
from protodump.dissectors.blank import PROTOCOL, TAG
from protodump.engine import fields
from protodump.engine.blocks_ack_history import AckHistory
from protodump.engine.blocks_chunks import Chunk
from protodump.engine.blocks_fixed_point import Packed
from protodump.engine.blocks_vectors import QuatSmallest3, Vec3
from protodump.engine.dispatch import Dispatcher, Settings

# --- strategies from the tables --------------------------------------------------------------------------------------

_INT_RANGE = {"B": (0, 0xFF), "b": (-0x80, 0x7F), "H": (0, 0xFFFF), "h": (-0x8000, 0x7FFF),
              "I": (0, 0xFFFFFFFF), "i": (-0x80000000, 0x7FFFFFFF), "Q": (0, (1 << 64) - 1),
              "q": (-(1 << 63), (1 << 63) - 1)}


def _text(max_bytes: int):
    return st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=max_bytes) \
        .filter(lambda s: len(s.encode()) <= max_bytes)


def value_strategy(f):
    """The strategy of one bound field's value as decode_values returns it (and encode takes it)."""
    if isinstance(f, QuatSmallest3):
        return st.integers(0, (1 << 64) - 1).map(lambda v: v & ~(3 << 60))   # bits 61-60 are zero
    if isinstance(f, AckHistory):
        return st.integers(0, 0xFFFFFFFF)
    if isinstance(f, Packed):
        return st.integers(*_INT_RANGE[f.codes[0]])
    if isinstance(f, Vec3):
        return st.tuples(*(value_strategy(e) for e in f.elements))
    if isinstance(f, fields.Flags):
        return value_strategy(f.number)
    if isinstance(f, fields.Number):
        if f.kind in ("float", "double"):
            return st.floats(width=32 if f.width == 4 else 64, allow_nan=False)
        return st.integers(*_INT_RANGE[f.codes[0]])
    if isinstance(f, fields.Padding):
        return st.binary(min_size=f.size, max_size=f.size)
    if isinstance(f, fields.CString):
        return _text((f.fixed_area or f.max_size) - 1)
    if isinstance(f, fields.Bytes):
        return st.binary(min_size=f.size or 0, max_size=f.size or 64)
    if isinstance(f, Chunk):
        return st.binary(max_size=472)
    if isinstance(f, fields.Array):
        return st.lists(struct_strategy(f.item), max_size=f.max_count)
    if isinstance(f, fields.Struct):
        return struct_strategy(f)
    raise TypeError(f"no strategy for {type(f).__name__} {f.abbrev}")


def struct_strategy(s):
    """A dict of the struct's field values, with counts and sizes consistent with their arrays and data."""
    strategies = {f.name: value_strategy(f) for f in s.fields}

    def consistent(values):
        for f in s.fields:
            if isinstance(f, fields.Array):
                values[f.count] = len(values[f.name])
            elif isinstance(f, Chunk):
                values[f.length] = len(values[f.name])
        return values
    return st.fixed_dictionaries(strategies).map(consistent)


def packet_strategy(revision: str, code: int):
    header = {f.name: value_strategy(f) for f in PROTOCOL.header.fields}
    header["type"] = st.just(code)
    header["tag"] = st.one_of(st.just(TAG), st.integers(0, 0xFFFFFFFF))
    return st.tuples(st.fixed_dictionaries(header), struct_strategy(PROTOCOL.body[revision].cases[code])) \
        .map(lambda hp: {**hp[0], **hp[1]})


CASES = [(rev, code) for rev, sw in PROTOCOL.body.items() for code in sw.cases]


@pytest.mark.parametrize("revision,code", CASES, ids=[f"{r}-{c}" for r, c in CASES])
def test_round_trip(revision, code):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values=packet_strategy(revision, code))
    def check(values):
        wire = PROTOCOL.encode(values, revision=revision)
        decoded, _tree = PROTOCOL.decode_values(wire, {"blank.revision": revision})
        assert decoded == values
    check()


@settings(max_examples=400, deadline=None)
@given(payload=st.binary(max_size=600), revision=st.sampled_from(["auto", "current", "2015"]))
def test_random_bytes_never_raise(payload, revision):
    PROTOCOL.decode_values(payload, {"blank.revision": revision})


@settings(max_examples=300, deadline=None)
@given(code=st.integers(0, 255), body=st.binary(max_size=584), revision=st.sampled_from(["auto", "current", "2015"]))
def test_random_bodies_after_a_tag_never_raise(code, body, revision):
    PROTOCOL.decode_values(struct.pack("<IHHIB3x", TAG, 1, 2, 3, code) + body, {"blank.revision": revision})


# --- facts on the captures ----------------------------------------------------------------------------------------

def dissect(name: str, **settings):
    dispatcher = Dispatcher(PROTOCOLS, Settings(**settings))
    return [dispatcher.dissect(frame, decode(frame)) for frame in open_capture(str(CAPTURES_DIR / name))]


@pytest.fixture(scope="module")
def session():
    return dissect("blank-server-session.pcap")


def items(tree, abbrev):
    return [n for n in tree.walk() if n.field is not None and n.field.abbrev == abbrev]


def values_of(tree, abbrev):
    return [n.value for n in items(tree, abbrev)]


def test_real_session_chunks_inflate_to_20484(session):
    frames = [p.number for p in session if p.game and 20484 in values_of(p.game.item, "blank.chunk.inflated_size")]
    assert len(frames) == 126
    assert all(values_of(p.game.item, "blank.type") == [10] for p in session if p.number in frames)


def test_real_session_join_world_is_default(session):
    joins = [p for p in session if p.game and values_of(p.game.item, "blank.type") == [2]]
    assert joins
    assert values_of(joins[0].game.item, "blank.join.world_name") == ["default"]


def test_real_session_quaternions_are_unit(session):
    checked = 0
    for p in session:
        if not p.game:
            continue
        for q in items(p.game.item, "blank.state.orientation") + items(p.game.item, "blank.ustate.orientation"):
            axes = {c.field.abbrev.rsplit(".", 1)[1]: c.value for c in q.children if c.field.ftype == "double"}
            assert set(axes) == {"x", "y", "z", "w"}
            assert math.isclose(sum(v * v for v in axes.values()), 1.0, abs_tol=1e-5), (p.number, axes)
            checked += 1
    assert checked > 100


def test_quaternion_unpack_is_nearly_lossless():
    import sys
    sys.path.insert(0, str(CAPTURES_DIR.parent / "tools"))
    from make_captures import quat
    for q in [(0.0, 0.0, 0.0, 1.0), (0.5, 0.5, 0.5, 0.5), (0.1, -0.7, 0.2, 0.68), (-0.9, 0.1, 0.3, 0.3)]:
        n = math.sqrt(sum(c * c for c in q))
        q = tuple(c / n for c in q)
        if max(q, key=abs) < 0:
            q = tuple(-c for c in q)
        _largest, got = QuatSmallest3.unpack(quat(*q))
        assert all(math.isclose(a, b, abs_tol=2e-6) for a, b in zip(got, q)), (got, q)


def test_pitch_yaw_degrees(session):
    """NOTES.md: pitch is stored divided by pi/2, yaw divided by pi, both packn (raw / 32767)."""
    checked = 0
    for p in session:
        if not p.game:
            continue
        tree = p.game.item
        for prefix in ("blank.state", "blank.ustate"):
            for raw, deg in zip(values_of(tree, prefix + ".pitch_raw"), values_of(tree, prefix + ".pitch")):
                assert math.isclose(deg, math.degrees(raw / 32767 * math.pi / 2), abs_tol=1e-9)
                assert -90.0 <= deg <= 90.0
                checked += 1
            for raw, deg in zip(values_of(tree, prefix + ".yaw_raw"), values_of(tree, prefix + ".yaw")):
                assert math.isclose(deg, math.degrees(raw / 32767 * math.pi), abs_tol=1e-9)
                checked += 1
    assert checked > 100


def test_entity_update_absolute_chunk_position():
    """Absolute chunk position = the packet's base + the entity's relative vec3b (blank-all-current.pcap, frame 17)."""
    packets = dissect("blank-all-current.pcap")
    updates = [p for p in packets if p.game and values_of(p.game.item, "blank.type") == [7]]
    assert updates
    checked = 0
    for p in updates:
        tree = p.game.item
        base = tuple(values_of(tree.find("blank.entity_update.base"), "blank.entity_update.base." + a)[0]
                     for a in "xyz")
        for ent in items(tree, "blank.entity"):
            rel_item = ent.find("blank.ustate.chunk_pos")
            rel = tuple(c.value for c in rel_item.children)
            absolute = ent.find("blank.ustate.abs_chunk_pos")
            assert tuple(c.value for c in absolute.children) == tuple(b + r for b, r in zip(base, rel))
            checked += 1
    assert checked >= 4
    # the capture's known values
    first = updates[0].game.item
    assert [tuple(c.value for c in n.children) for n in items(first, "blank.ustate.abs_chunk_pos")] == \
        [(10, -4, 7), (9, -2, 4), (15, -10, 134), (-118, -3, 7)]


def _sequence_notes(packets):
    notes = {}
    for p in packets:
        if p.game:
            msgs = [n.expert_info.message for n in p.game.item.walk()
                    if n.expert_info is not None and n.expert_info.abbrev == "blank.sequence"]
            if msgs:
                notes[p.number] = msgs
    return notes


def test_sequence_analysis():
    """blank-sequence.pcap: client seqs 65532 (Login), 65533, 65534, 65535, 0, 1, 4, 4, 6, 5, 7, 8 (one per odd
    frame from 3); the server's seqs 300.. are in order."""
    notes = _sequence_notes(dissect("blank-sequence.pcap"))
    assert notes == {
        13: ["2 lost before seq 4"],
        15: ["Duplicate of seq 4 (frame 13)"],
        17: ["1 lost before seq 6"],
        19: ["Out of order: seq 5 after seq 6"],
    }
