"""Game statistics on real sessions: ENet peers (RTT, retransmissions, range coder), Iceball file transfers (the
real server's files), Rutentoy messages and textures, Freeblox assets and chat, players per session."""
from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import CAPTURES_DIR
from protodump.analysis import stats
from protodump.analysis.stats_session import libenet_rtt
from protodump.output import stats_out
from protodump.session import packets

PROTODUMP = str(Path(sys.executable).with_name("protodump"))


@lru_cache(maxsize=None)
def decoded(name):
    return list(packets(str(CAPTURES_DIR / name)))


def run(name, arg) -> dict:
    (result,) = stats.run(decoded(name), [arg])
    assert stats_out.render_text(result) and json.loads(stats_out.render_json([result]))
    return result


def test_enet_peers_real_iceball_session():
    (conv,) = run("iceball-enet-session.pcap", "enet,peers")["conversations"]
    client, server = conv["c2s"], conv["s2c"]
    assert client["peer"] == "127.0.0.1:40225" and server["peer"] == "127.0.0.1:20737"
    assert client["datagrams"] + server["datagrams"] == 775
    # every reliable command the server sent was acknowledged by the client, each ack giving one RTT sample
    assert server["ack_requested"] == server["acknowledged"] == server["rtt_samples"] == 397
    assert client["acknowledgements"] == 397 and server["retransmissions"] == 0
    assert 0 < server["rtt_min"] <= server["rtt_avg"] <= server["rtt_max"] < 50
    assert len(server["rtt_series"]) == 397


def test_series_and_rows_stay_bounded():
    from protodump.analysis.stats_session import ROW_LIMIT, SERIES_LIMIT, Rows, Series
    series, rows = Series(), Rows()
    for i in range(5 * SERIES_LIMIT):
        series.add((i, i))
    for i in range(ROW_LIMIT + 7):
        rows.add({"i": i})
    assert SERIES_LIMIT // 2 <= len(series) <= SERIES_LIMIT and series[-1] == (5 * SERIES_LIMIT - 1,) * 2
    assert series == sorted(series) and series[0][0] < SERIES_LIMIT
    assert len(rows) == ROW_LIMIT and rows.omitted == 7


def test_enet_range_coder_ratio_and_retransmission():
    (conv,) = run("enet-rangecoder.pcap", "enet,peers")["conversations"]
    assert conv["c2s"]["range_coded"] + conv["s2c"]["range_coded"] > 0
    assert 0 < conv["s2c"]["compression_ratio"] < 1
    # the same capture with one reliable datagram repeated: one retransmission, loss 1/(n+1)
    from protodump.analysis.stats_session import EnetPeers
    frames = decoded("enet-rangecoder.pcap")
    tap = EnetPeers([])
    again = next(p for p in frames if p.number > 4 and p["enet.command.acknowledge"] and
                 f"{p.decoded.src}:{p.decoded.sport}" == conv["server"])
    for p in frames[:again.number] + [again] + frames[again.number:]:
        tap.add(p)
    s2c = tap.result()["conversations"][0]["s2c"]
    assert s2c["retransmissions"] == 1 and s2c["loss"] == pytest.approx(1 / s2c["ack_requested"])


def test_enet_late_reliable_commands():
    """The server's fragments (reliable sequence numbers in a row) fed with one held back: a number skipped, then
    seen: one late command, counted as a loss; nothing else changes."""
    from protodump.analysis.stats_session import EnetPeers
    frames = decoded("enet-plain.pcap")
    order = [p.number for p in frames]
    i = order.index(7)
    order[i], order[i + 1] = order[i + 1], order[i]          # fragment 2 of 4 arrives after fragment 3
    tap = EnetPeers([])
    for n in order:
        tap.add(frames[n - 1])
    (conv,) = tap.result()["conversations"]
    sender = next(d for d in ("c2s", "s2c") if conv[d]["fragments"] == 4)
    assert conv[sender]["late"] == 1 and conv[sender]["retransmissions"] == 0
    assert conv[sender]["loss"] == pytest.approx(1 / conv[sender]["ack_requested"])
    (plain,) = run("enet-plain.pcap", "enet,peers")["conversations"]
    assert plain["c2s"]["late"] == plain["s2c"]["late"] == 0


def test_libenet_smoothing_matches_protocol_c():
    state = {}
    for sample in (10, 10, 50, 2):
        libenet_rtt(state, sample)
    # first: rtt 10, var 5; 10: var 4; 50: var 3+10=13, rtt 15; 2: var 10+3=13, rtt 15-1=14
    assert state == {"rtt": 14, "var": 13}


def test_iceball_files_real_session_and_aborts():
    (conv,) = run("iceball-enet-session.pcap", "iceball,files")["conversations"]
    got = [(f["name"], f["type"], f["compressed_size"], f["inflated_size"], f["status"]) for f in conv["files"]]
    assert got == [("pkg/base/main_client.lua", "Lua script", 3563, 9992, "complete"),
                   ("*MAP", "Icemap data", 360867, 2420086, "complete"),
                   ("pkg/base/gfx/font-mini.tga", "TGA image", 725, 2492, "complete")]
    big = conv["files"][1]
    assert (big["request_frame"], big["start_frame"], big["end_frame"]) == (28, 30, 692)
    assert big["throughput"] == pytest.approx(360867 / big["duration"])
    (conv,) = run("iceball-tcp-all.pcap", "iceball,files")["conversations"]
    status = {f["name"]: f["status"] for f in conv["files"]}
    assert status["*FASTLOAD"] == "aborted by server" and status["pkg/base/big.lua"] == "aborted by client"
    assert conv["client"] == "127.0.0.1:40737"          # the SYN's source, though the server speaks first


def test_rutentoy_freeblox_players():
    (conv,) = run("rutentoy-login-texture.pcap", "rutentoy,objects")["conversations"]
    assert [t["xxh32"] for t in conv["textures"]] == ["eae5042e", "6fd40e63"]
    assert all(t["digest_ok"] for t in conv["textures"]) and conv["messages"][0]["text"].startswith("LOGIN carol")
    (conv,) = run("freeblox-session.pcap", "freeblox,assets")["conversations"]
    assert [a["name"] for a in conv["assets"]] == ["grass", "noise", "sky", "photo", "crate"]
    assert [(c["player"], c["message"]) for c in conv["chat"]] == [("alice", "hi"), ("bob", "hello alice ✌")]
    (conv,) = run("freeblox-session.pcap", "players")["conversations"]
    assert [(p["name"], p["left_how"]) for p in conv["players"]] == [
        ("alice", "session end"), ("bob", "quit"), ("carol", "session end")]      # PLAYER_LIST, PLAYER_QUIT bob
    (conv,) = run("blank-server-session.pcap", "players")["conversations"]
    (pybot,) = conv["players"]
    assert (pybot["name"], pybot["joined_frame"], pybot["left_how"]) == ("pybot", 1, "part")
    (conv,) = run("iceball-enet-session.pcap", "players")["conversations"]
    assert [p["name"] for p in conv["players"]] == ["pybot"]
    assert "hello from a headless bot" in [c["text"] for c in conv["chat"]]


def test_cli_text_and_json():
    cap = str(CAPTURES_DIR / "iceball-enet-session.pcap")
    out = subprocess.run([PROTODUMP, "-q", "-z", "iceball,files", cap], capture_output=True, text=True, check=True)
    assert "*MAP" in out.stdout and "2420086" in out.stdout
    out = subprocess.run([PROTODUMP, "-q", "--format", "json", "-z", "enet,peers", cap], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout)["statistics"][0]["kind"] == "enet_peers"
