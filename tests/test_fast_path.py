"""Decode only what is asked: statistics that read only the standard layers (conv, endpoints, io,stat without a
filter) run with no game dissection and no TCP analysis (engine.dispatch.Dispatcher.standard_only) and give
exactly what the full decode gives, on every bundled capture and on a many-conversation replay."""
import sys
from pathlib import Path

import dpkt
import pytest

from protodump.analysis import stats
from protodump.dissectors import PROTOCOLS
from protodump.engine.dispatch import Dispatcher
from protodump.session import packets

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from replay import conversation_frames  # noqa: E402

ARGS = ["conv,eth", "conv,ip", "conv,udp", "conv,tcp", "endpoints,ip", "endpoints,udp", "endpoints,tcp",
        "io,stat,1", "io,stat,0.1"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    path = tmp_path_factory.mktemp("fast") / "mix.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, buf in conversation_frames("mix", 3000, 10, 4, ["blank", "enet", "iceball-tcp", "rutentoy",
                                                                "freeblox"]):
            w.writepkt(buf, ts=ts)
    return path


def _results(path, fast: bool):
    dispatcher = Dispatcher(PROTOCOLS)
    taps = stats.make_taps(ARGS)
    assert all(tap.standard_only() for tap in taps)
    dispatcher.standard_only = fast
    for packet in packets(path, dispatcher=dispatcher):
        assert packet.games == [] or not fast
        for tap in taps:
            tap.add(packet)
    return [tap.result() for tap in taps]


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "captures").glob("*.pcap")))
def test_fast_statistics_equal_the_full_decode(name):
    path = ROOT / "captures" / name
    assert _results(path, True) == _results(path, False)


def test_fast_statistics_on_many_conversations(mixed):
    assert _results(mixed, True) == _results(mixed, False)


def test_a_filter_or_a_game_statistic_needs_the_full_decode():
    assert not stats.make_tap("conv,udp,blank").standard_only()
    assert not stats.make_tap("io,stat,1,blank.seq").standard_only()
    assert not stats.make_tap("io,phs").standard_only()
    assert not stats.make_tap("blank,types").standard_only()


def test_cli_fast_path_prints_what_the_full_decode_prints(mixed):
    """-q -z conv,tcp takes the fast path; with -Y frame (a filter: full decode) the tables are the same."""
    import subprocess
    exe = [str(Path(sys.executable).parent / "protodump")]
    args = ["-q", "-z", "conv,tcp", "-z", "io,stat,1", "-z", "endpoints,udp", str(mixed)]
    fast = subprocess.run([*exe, *args], capture_output=True, text=True, check=True).stdout
    full = subprocess.run([*exe, "-Y", "frame", *args], capture_output=True, text=True, check=True).stdout
    assert fast == full and "TCP Conversations" in fast


def test_cli_write_only_copies_every_frame(mixed, tmp_path):
    """-w with no filter decodes no game layer; the file written is the one the full decode writes."""
    import subprocess
    exe = str(Path(sys.executable).parent / "protodump")
    subprocess.run([exe, "-w", str(tmp_path / "fast.pcap"), str(mixed)], check=True)
    subprocess.run([exe, "-Y", "frame", "-w", str(tmp_path / "full.pcap"), str(mixed)], check=True)
    assert (tmp_path / "fast.pcap").read_bytes() == (tmp_path / "full.pcap").read_bytes()
