"""-T ek, whole packets (every layer, not only the game ones) against tshark 4.0 + the generated plugin: the frame
time's nine nanosecond digits, wslua's `_ws.lua.fake` items gathered as `[null,...]`, TCP options' keys (protocols
in name only in 4.0), a top-level field layer (tcp.segments) flattened."""
from __future__ import annotations

import pytest

# whole captures whose packets are all identical (freeblox-plain's frame 126 and websocket-bad are protodump's
# deliberate WebSocket differences, docs/tshark-formats.md 8 and 10)
NAMES = ["blank-server-session.pcap", "iceball-enet-session.pcap", "iceball-tcp-session.pcap", "rutentoy-sctp.pcap",
         "freeblox-session.pcap", "freeblox-fragments.pcap", "rutentoy-lost-reordered.pcap", "blank-port-23456.pcap",
         "enet-bad.pcap"]


@pytest.mark.parametrize("name", NAMES)
def test_ek_is_tsharks(protodump_run, standard_run, name):
    ours, theirs = protodump_run("-T", "ek", "-r", name), standard_run("-T", "ek", "-r", name)
    assert ours.returncode == 0, ours.stderr
    mine, their = ours.stdout.splitlines(), theirs.stdout.splitlines()
    assert len(mine) == len(their) > 10
    differ = [n // 2 + 1 for n, (a, b) in enumerate(zip(mine, their)) if a != b]
    assert not differ, f"{name}: packets {differ[:10]} differ"
