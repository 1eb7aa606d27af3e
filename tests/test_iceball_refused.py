"""An Iceball server answers a FILE_REQUEST for a file it does not have with FILE_ABORT_SERVER: the abort is linked
to the request (the file's name, the request's frame) in the tree, in the plugin's tree too, and in -z
iceball,files."""
from __future__ import annotations

import sys
from pathlib import Path

from conftest import layers_of, packet_layers
from protodump.analysis import stats
from protodump.session import packets
from test_freeblox import tcp_pcap
from test_parity import layer_mismatches

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import make_iceball_captures as ice  # noqa: E402


def refused_capture(path: Path) -> Path:
    segments = [(False, ice.counted(0x0F, b"pkg/base")),
                (True, ice.counted(0x30, b"pkg/base/missing.lua", bytes([3]))),
                (False, b"\x35"),                                              # refused
                (True, ice.counted(0x30, b"pkg/base/there.lua", bytes([3]))),
                (False, b"".join(ice.file_transfer(b"print('there')\n"))),
                (True, b"\x34"),                                               # client: nothing active
                (False, b"\x35")]                                              # server: nothing requested
    tcp_pcap(path, segments, server=("127.0.0.1", ice.PORT))
    return path


def test_refusal_names_the_requested_file(tmp_path):
    cap = refused_capture(tmp_path / "refused.pcap")
    frames = list(packets(str(cap)))
    refusal = frames[5]
    assert refusal["iceball.file.name"] == "pkg/base/missing.lua"
    assert refusal["iceball.file.request_frame"] == 5
    assert [i.expert_info.message for i in refusal.index()["_ws.expert"]] == [
        "Server refused the request for pkg/base/missing.lua (frame 5)"]
    messages = [i.expert_info.message for p in frames for i in p.index().get("_ws.expert", ())]
    assert "Client aborts with no file transfer active" in messages
    assert "Server aborts with no file transfer active" in messages
    (result,) = stats.run(frames, ["iceball,files"])
    files = result["conversations"][0]["files"]
    assert [(f["name"], f["status"], f["request_frame"], f["end_frame"]) for f in files] == [
        ("pkg/base/missing.lua", "refused", 5, 6), ("pkg/base/there.lua", "complete", 7, 8)]


def test_plugin_shows_the_same(tmp_path, protodump_run, tshark_run):
    cap = str(refused_capture(tmp_path / "refused.pcap"))
    ours = protodump_run("-T", "json", cap)
    theirs = tshark_run("-T", "json", "-r", cap)
    assert theirs.returncode == 0, theirs.stderr
    assert layer_mismatches(ours.stdout, theirs.stdout, "iceball") == []
    refusal = layers_of(packet_layers(theirs.stdout)[5], "iceball")
    assert "pkg/base/missing.lua" in str(refusal)
    # two passes (-2) show the same
    twice = tshark_run("-2", "-T", "json", "-r", cap)
    assert layer_mismatches(ours.stdout, twice.stdout, "iceball") == []
