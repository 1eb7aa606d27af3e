"""Shared-subtree memos (engine.tree.SubtreeMemo: the building blocks' in engine/blocks_*.py, the standard layers' in
capture/layers) are bounded in bytes, whatever the size of each entry, and know which fields each entry holds."""
import gc
from pathlib import Path

from protodump.capture.layers import common
from protodump.engine.tree import BLOCK_MEMO_BYTES, FieldInfo, Item, SubtreeMemo
from protodump.session import packets

F = FieldInfo("x.y", "Y", "string")


def subtree(n: int, width: int):
    return [Item(F, "v" * width + str(n), 0, 1, f"Y: {n}" + "." * width) for _ in range(4)]


def test_bounded_in_bytes_not_entries():
    memo = SubtreeMemo(64 << 10)
    for n in range(2000):
        kids = memo.get(n, subtree, n, 10 if n < 1000 else 2000)     # small entries, then big ones
        assert kids and all(k.field is F for k in kids)
        assert memo.nbytes <= memo.limit
    assert 0 < len(memo) < 20          # big entries: few fit; a count bound of 1024 would have held 2 MB


def test_a_run_asking_nothing_in_a_subtree_gets_none():
    memo = SubtreeMemo(1 << 20)
    assert memo.get_for(frozenset({"a.b"}), 1, subtree, 1, 1) == ()
    assert len(memo.get_for(frozenset({"x.y"}), 1, subtree, 1, 1)) == 4
    assert len(memo.get_for(None, 1, subtree, 1, 1)) == 4


def test_the_memos_stay_within_their_bytes_on_a_capture():
    for packet in packets(Path(__file__).resolve().parents[1] / "captures" / "blank-server-session.pcap"):
        packet.index()                 # the standard layers are built on first use
    assert 0 < common.FROZEN.nbytes <= common.FROZEN.limit
    memos = [m for m in gc.get_objects() if isinstance(m, SubtreeMemo) and m is not common.FROZEN]
    assert any(m.nbytes for m in memos)                 # the blocks' (the ack bitmap, packed vectors ...)
    assert all(m.nbytes <= m.limit == BLOCK_MEMO_BYTES for m in memos)
