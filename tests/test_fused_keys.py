"""analysis/fused_keys.py: key_of's one-call path for the common frame gives what key_of_any gives, on every frame
of the bundled captures and on their headers damaged (bytes set, frames cut, the snap length), property-based."""
import dataclasses
from pathlib import Path

from hypothesis import given, settings, strategies as st

from protodump.analysis.fused_keys import key_of, key_of_any
from protodump.capture.files import open_capture

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
FRAMES = [f for name in ("blank-server-session", "iceball-enet-session", "rutentoy-mptcp", "freeblox-session",
                         "rutentoy-lossy", "iceball-tcp-bad")
          for f in open_capture(CAPTURES / f"{name}.pcap")]


# the bytes key_of reads (ether type, version and IHL, total length, flags and fragment offset, protocol, UDP length,
# TCP data offset and flags, the first options) and the values that change its answer
KEY_BYTES = (12, 13, 14, 16, 17, 20, 21, 23, 38, 39, 46, 47, 54, 55, 56)
KEY_VALUES = (0, 1, 6, 17, 0x20, 0x40, 0x45, 0x46, 0x50, 0x80, 0x86, 0xC0, 0xFF)
POSITIONS = st.one_of(st.sampled_from(KEY_BYTES), st.integers(12, 70))
VALUES = st.one_of(st.sampled_from(KEY_VALUES), st.integers(0, 255))


def _edited(frame, data: bytes, wire_extra: int = 0):
    return dataclasses.replace(frame, data=data, caplen=len(data), length=len(data) + wire_extra)


def test_the_fast_path_answers_as_the_general_one_on_every_bundled_frame():
    fast = [key_of(f) for f in FRAMES]
    assert fast == [key_of_any(f) for f in FRAMES]
    assert sum(parsed is not None for _, parsed in fast) > len(FRAMES) // 2     # the common case is taken


def test_the_fast_path_answers_as_the_general_one_with_any_key_byte_set_to_any_telling_value():
    for frame in FRAMES[::25]:
        for at in KEY_BYTES:
            for value in KEY_VALUES:
                data = frame.data[:at] + bytes([value]) + frame.data[at + 1:]
                for wire_extra in (0, 1):
                    damaged = _edited(frame, data, wire_extra)
                    assert key_of(damaged) == key_of_any(damaged), (frame.number, at, value, wire_extra)


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, len(FRAMES) - 1),
       edits=st.lists(st.tuples(POSITIONS, VALUES), max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 80)), wire_extra=st.sampled_from([0, 0, 1]))
def test_prop_the_fast_path_answers_as_the_general_one_on_damaged_headers(index, edits, cut, wire_extra):
    frame = FRAMES[index]
    data = bytearray(frame.data)
    for at, value in edits:
        if at < len(data):
            data[at] = value
    if cut is not None:
        data = data[:cut]
    damaged = _edited(frame, bytes(data), wire_extra)
    assert key_of(damaged) == key_of_any(damaged)
