"""tools/bench.py --repeat: every round of a replayed capture is a conversation of its own, however many rounds
(moving the addresses' last byte alone came round after 250: tshark took the later rounds for retransmissions)."""
import sys
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import bench  # noqa: E402


def test_every_round_of_a_long_replay_has_addresses_of_its_own(tmp_path):
    source = ROOT / "captures" / "rutentoy-messages.pcap"
    with open(source, "rb") as f:
        per_round = sum(1 for _ in dpkt.pcap.Reader(f))
    rounds = 600
    out = bench.repeat_capture(source, rounds, tmp_path / "x600.pcap")
    pairs, frames = set(), 0
    with open(out, "rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            pairs.add((ip.src, ip.dst))
            frames += 1
    assert frames == rounds * per_round
    assert len(pairs) == rounds                  # (the capture's frames share one address pair a round)
    assert all(src[:2] == b"\x7f\x00" and 0 < src[3] < 255 for src, _ in pairs)
