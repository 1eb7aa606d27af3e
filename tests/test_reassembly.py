"""reassembly.offsets: pieces in any order, duplicates and overlaps (first copy wins), limits."""
import pytest
from hypothesis import given, strategies as st

from protodump.reassembly.offsets import OffsetReassembly, OutOfRange, TooLarge


@given(st.data())
def test_any_order_with_duplicates_gives_the_message(data):
    message = data.draw(st.binary(min_size=1, max_size=300))
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(message) - 1), max_size=8)))) if len(message) > 1 else []
    bounds = [0, *cuts, len(message)]
    pieces = [(a, message[a:b]) for a, b in zip(bounds, bounds[1:])]
    pieces += data.draw(st.lists(st.sampled_from(pieces), max_size=3))        # retransmitted copies
    order = data.draw(st.permutations(pieces))
    r = OffsetReassembly(len(message), 1 << 16)
    results = [r.add(at, piece, frame) for frame, (at, piece) in enumerate(order, 1)]
    done = [x for x in results if x is not None]
    assert done[0] == message
    assert r.done == results.index(done[0]) + 1


def test_first_copy_of_a_byte_wins():
    r = OffsetReassembly(4, 100)
    assert r.add(0, b"AB", 1) is None
    assert r.add(1, b"xy", 2) is None            # overlaps byte 1: the first copy ("B") stays
    assert r.add(3, b"D", 3) == b"ABy" + b"D"
    assert r.frames() == [1, 2, 3]


def test_limits():
    with pytest.raises(TooLarge):
        OffsetReassembly(1 << 20, 1 << 16)
    with pytest.raises(OutOfRange):
        OffsetReassembly(10, 100).add(8, b"abc", 1)
