"""reassembly/tcp.py: which bytes of one TCP direction are handed to a stream dissector, and when, as tshark 4.0
does it (docs/tshark-formats.md section 6; the captures behind those facts are checked in tests/test_streams.py)."""
from __future__ import annotations

import struct
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st
from protodump.reassembly.tcp import ACK, FIN, SEQ_MOD, SYN, TcpDirection

ISN = 1000


def pdu(kind: int, body: bytes) -> bytes:
    return struct.pack("!HB", len(body) + 1, kind) + body


def length_at(data: bytes, pos: int) -> int:
    """The test framing: u16 length of what follows; 0 = need more."""
    if len(data) - pos < 2:
        return 0
    return struct.unpack_from("!H", data, pos)[0] + 2


def feed(direction: TcpDirection, seq: int, payload: bytes, frame: int, flags: int = ACK):
    """Hand one segment over and cut every handover like engine.streams does: (handover, [PDUs]) per handover."""
    out = []
    for h in direction.segment(seq % SEQ_MOD, payload, frame, flags):
        pdus, pos = [], 0
        while pos < len(h.data):
            n = length_at(h.data, pos)
            if n == 0 or pos + n > len(h.data):
                direction.desegment(h, pos, n)
                break
            pdus.append(h.data[pos:pos + n])
            pos += n
        out.append((h, pdus))
    return out


def start() -> TcpDirection:
    d = TcpDirection()
    assert list(d.segment(ISN, b"", 1, SYN)) == []
    return d


def test_in_order_segments_are_handed_over_whole():
    d = start()
    a, b = pdu(1, b"hello"), pdu(2, b"x" * 10) + pdu(3, b"y")
    [(h, pdus)] = feed(d, ISN + 1, a, 2)
    assert (h.data, h.offset, h.seg_offset, h.frames, h.lost) == (a, 0, 0, (2,), False)
    [(h, pdus)] = feed(d, ISN + 1 + len(a), b, 3)
    assert pdus == [pdu(2, b"x" * 10), pdu(3, b"y")] and h.offset == len(a)


def test_a_pdu_spanning_three_segments_is_handed_over_reassembled_in_the_last():
    d = start()
    big = pdu(5, bytes(range(256)) * 16)
    cuts = [0, 1448, 2896, len(big)]
    results = [feed(d, ISN + 1 + lo, big[lo:hi], frame) for frame, (lo, hi) in enumerate(pairwise(cuts), 10)]
    assert [len(r) for r in results] == [1, 0, 1]          # the middle segment hands nothing over
    h, pdus = results[2][0]
    assert h.seg_offset is None and pdus == [big]
    assert h.frames == (10, 11, 12) and h.pieces == ((10, 1448, 0), (11, 1448, 1448), (12, len(big) - 2896, 2896))


def test_tail_of_one_pdu_then_more_pdus_in_one_segment():
    d = start()
    p7, p8, p9 = pdu(7, b"A" * 30), pdu(8, b"B" * 8), pdu(9, b"C" * 40)
    feed(d, ISN + 1, p7[:10], 1)
    calls = feed(d, ISN + 11, p7[10:] + p8 + p9[:7], 2)
    assert [(h.seg_offset, pdus) for h, pdus in calls] == [(None, [p7]), (23, [p8])]
    [(h, pdus)] = feed(d, ISN + 11 + 23 + len(p8) + 7, p9[7:], 3)
    assert pdus == [p9] and h.pieces == ((2, 7, 0), (3, len(p9) - 7, 7))


def test_retransmissions_and_late_segments_are_never_handed_over():
    d = start()
    a, b = pdu(1, b"a" * 20), pdu(2, b"b" * 20)
    feed(d, ISN + 1, a, 1)
    assert feed(d, ISN + 1, a, 2) == []                       # a duplicate
    assert feed(d, ISN + 1 + 5, a[5:] + b, 3) == []           # overlapping, with new bytes: still nothing
    [(h, _)] = feed(d, ISN + 1 + len(a) + len(b), pdu(3, b""), 4)
    assert not h.lost                                         # the retransmission moved the next expected seq


def test_a_gap_flags_the_next_segment_and_a_late_filler_is_dropped():
    d = start()
    a, b, c = pdu(1, b"a" * 20), pdu(2, b"b" * 20), pdu(3, b"c" * 20)
    feed(d, ISN + 1, a, 1)
    [(h, pdus)] = feed(d, ISN + 1 + len(a) + len(b), c, 2)    # b not captured (yet)
    assert h.lost and pdus == [c] and d.lost_bytes == len(b)
    assert feed(d, ISN + 1 + len(a), b, 3) == []              # tshark: a retransmission, not dissected


def test_a_pending_pdu_with_a_hole_is_abandoned_and_the_rest_keeps_its_framing():
    d = start()
    big, after = pdu(5, b"z" * 3000), pdu(2, b"after")
    feed(d, ISN + 1, big[:1448], 1)
    # segment 2 (bytes 1448..2896) is lost; segment 3 ends the big PDU and carries another one
    calls = feed(d, ISN + 1 + 2896, big[2896:] + after, 3)
    [(h, pdus)] = calls
    assert pdus == [after] and not h.lost and h.seg_offset == len(big) - 2896
    assert d.pending is None and d.passed == []      # (the plugin's framing: no late segment can fill it)


def test_a_late_segment_completes_a_pdu_the_stream_went_past():
    """tshark keeps its multi-segment PDUs: an out-of-order segment (fill: tshark's own reassembly) that fills
    the hole of one the stream abandoned completes it, in its own frame; one in the hole of an older one stays."""
    d = start()
    d.tsharks_reassembly = True
    big, after = pdu(5, b"z" * 3000), pdu(2, b"after")
    feed(d, ISN + 1, big[:1448], 1)
    [(h, pdus)] = feed(d, ISN + 1 + 2896, big[2896:] + after, 3)    # past the big PDU, its middle missing
    assert pdus == [after] and d.head_kept == len(big) - 2896 and len(d.passed) == 1
    assert list(d.segment(ISN + 1 + 1448, big[1448:2000], 4, ACK, fill=True)) == [] and d.filled   # a hole left
    [h] = list(d.segment(ISN + 1 + 2000, big[2000:2896], 5, ACK, fill=True))
    assert h.data == big and h.frames == (1, 4, 5, 3) and h.seg_offset is None and d.passed == []
    # the same bytes again fall in a PDU done: refused, not handed over (tshark's "New fragment overlaps old data")
    assert list(d.segment(ISN + 1 + 2000, big[2000:2896], 6, ACK, fill=True, fast=True)) == [] and d.overlaps_done


def test_open_pending_takes_the_whole_next_segment():
    d = start()
    p = pdu(1, b"q" * 10)
    [(h, pdus)] = feed(d, ISN + 1, p[:1], 1)                  # one byte: not even the length
    assert pdus == [] and d.pending is not None and d.pending.end is None
    [(h, pdus)] = feed(d, ISN + 2, p[1:] + p, 2)
    assert h.seg_offset is None and pdus == [p, p] and h.pieces == ((1, 1, 0), (2, 2 * len(p) - 1, 1))


def test_sequence_numbers_wrap_around():
    d = TcpDirection()
    isn = SEQ_MOD - 5
    list(d.segment(isn, b"", 1, SYN))
    a, b = pdu(1, b"a" * 20), pdu(2, b"b" * 20)
    assert feed(d, isn + 1, a, 2)[0][1] == [a]
    [(h, pdus)] = feed(d, isn + 1 + len(a), b, 3)
    assert pdus == [b] and not h.lost and h.offset == len(a)


def test_mid_stream_start_and_fin():
    d = TcpDirection()
    a = pdu(1, b"mid")
    [(h, pdus)] = feed(d, 123456, a, 1)
    assert h.offset == 0 and not h.lost and pdus == [a]       # the caller decides about unknown starts
    assert feed(d, 123456 + len(a), b"", 2, FIN | ACK) == [] and d.fin


def test_a_pending_pdu_over_the_limit_frames_its_segments_and_stores_none_of_them():
    """tcp_dissect_pdus waits for any declared length (a WebSocket frame's, often noise after a lost segment):
    the segments inside it are kept for it, those past it are framed anew; protodump keeps no byte of it."""
    d = TcpDirection(max_pdu=1000)
    [h] = list(d.segment(1, b"\xff\xff\x01", 1, ACK))
    d.desegment(h, 0, 5000)
    pend = d.pending
    assert pend.oversized and pend.parts is None
    assert list(d.segment(4, b"x" * 1400, 2, ACK)) == []           # inside it: nothing handed over
    assert list(d.segment(1404 + 1000, b"y" * 100, 3, ACK)) == []   # after a hole, still inside
    assert pend.placed == [] and not pend.arrived and pend.reached == 1403
    [h] = list(d.segment(5000 + 2404, b"after", 4, ACK))           # past it: abandoned, framed anew
    assert h.data == b"after" and d.pending is None and d.refused == 0


def test_an_oversized_pdu_that_arrives_whole_is_refused_and_the_rest_handed_over():
    d = TcpDirection(max_pdu=1000)
    [h] = list(d.segment(1, b"\x00" * 10, 1, ACK))
    d.desegment(h, 0, 3000)
    assert list(d.segment(11, b"z" * 1500, 2, ACK)) == []
    [h] = list(d.segment(1511, b"z" * 1490 + b"tail", 3, ACK))
    assert d.refused == 3000 and h.data == b"tail" and d.head_kept == 1490 and d.pending is None


def test_a_pending_pdu_is_bounded():
    """Under the limit the bytes are stored, in the global reassembly budget (reassembly/offsets.py)."""
    d = TcpDirection(max_pdu=1000)
    [h] = list(d.segment(1, b"\xff\xff\x01", 1, ACK))
    d.desegment(h, 0, 1000)
    assert not d.pending.oversized and d.pending.parts is not None and d.pending.placed == [(0, 1, 3)]


def cut_all(stream: bytes, sizes: list[int], drop: set[int] = frozenset(), order=None) -> list[bytes]:
    d = start()
    segs, pos = [], 0
    for n in sizes:
        if pos >= len(stream):
            break
        segs.append((pos, stream[pos:pos + n]))
        pos += n
    if pos < len(stream):
        segs.append((pos, stream[pos:]))
    out = []
    for i in order or range(len(segs)):
        if i in drop:
            continue
        at, data = segs[i]
        for _, pdus in feed(d, ISN + 1 + at, data, i + 1):
            out.extend(pdus)
    return out


PDUS = st.lists(st.tuples(st.integers(1, 255), st.binary(max_size=300)), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(PDUS, st.lists(st.integers(1, 700), min_size=1, max_size=40))
def test_any_segmentation_gives_back_every_pdu(pdus, sizes):
    wire = [pdu(k, b) for k, b in pdus]
    assert cut_all(b"".join(wire), sizes) == wire


@settings(max_examples=200, deadline=None)
@given(PDUS, st.sets(st.integers(0, 19)), st.randoms(use_true_random=False))
def test_one_pdu_per_segment_lost_or_reordered(pdus, drop, rnd):
    """One PDU per segment (one send per PDU, TCP_NODELAY): whatever is lost or reordered, exactly the segments
    that arrive beyond everything seen so far are handed over (tshark drops the late ones), each a whole PDU."""
    wire = [pdu(k, b) for k, b in pdus]
    offsets = [sum(map(len, wire[:i])) for i in range(len(wire))]
    order = list(range(len(wire)))
    rnd.shuffle(order)
    d = start()
    got, expected, seen_end = [], [], 0
    for i in order:
        if i in drop:
            continue
        if offsets[i] >= seen_end:
            expected.append(wire[i])
        seen_end = max(seen_end, offsets[i] + len(wire[i]))
        for _, pdus_out in feed(d, ISN + 1 + offsets[i], wire[i], i + 1):
            got.extend(pdus_out)
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, SEQ_MOD - 1), st.binary(max_size=64), st.sampled_from([0, SYN, FIN, ACK])),
                max_size=30))
def test_random_segments_never_crash(segments):
    d = TcpDirection()
    for frame, (seq, payload, flags) in enumerate(segments, 1):
        feed(d, seq, payload, frame, flags)
    assert d.pending is None or d.pending.end is None or d.pending.end - d.pending.start <= 65537


def test_segments_are_put_together_as_reassemble_c_does():
    """In stream order, the lowest offset winning (not the first to arrive); a segment whose first bytes differ
    from those it overlaps conflicts (tshark: tcp.segment.error, "[Illegal Segments]")."""
    from protodump.reassembly.tcp import SegmentReassembly
    r = SegmentReassembly(10, 100)
    assert r.add(4, b"BBBB", 1) is None          # arrives first, at the higher offset
    assert r.add(0, b"aaaaaa", 2) is None        # overlaps it with other bytes
    assert r.add(4, b"BBBB", 3) is None          # a copy of the first: it too differs from the a's it overlaps
    assert r.add(8, b"cc", 4) == b"aaaaaaBBcc"
    assert r.conflicts == {0, 2}                 # (arrival indices) the B segments against a's bytes 4-5
