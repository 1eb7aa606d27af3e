"""-z follow for the game streams: the message stream each game layer carries, checked against what the peers
wrote (the TCP byte stream tshark follows, the payloads the ENet encoder sent, the decompressed WebSocket
messages) and in every mode."""
from __future__ import annotations

import subprocess
from functools import lru_cache

import pytest

from conftest import CAPTURES_DIR, TSHARK
from protodump.analysis import stats
from protodump.output import stats_out
from protodump.session import packets

ICE_TCP = str(CAPTURES_DIR / "iceball-tcp-session.pcap")
ICE_ENET = str(CAPTURES_DIR / "iceball-enet-session.pcap")
ENET = str(CAPTURES_DIR / "enet-plain.pcap")
ENET_RC = str(CAPTURES_DIR / "enet-rangecoder.pcap")
FREEBLOX = str(CAPTURES_DIR / "freeblox-session.pcap")
RUTENTOY = str(CAPTURES_DIR / "rutentoy-messages.pcap")


@lru_cache(maxsize=None)
def decoded(path):
    return list(packets(path))


def follow(path, arg) -> dict:
    (result,) = stats.run(decoded(path), [arg])
    return result


def per_node(result) -> list[bytes]:
    return [b"".join(r["data"] for r in result["records"] if r["node"] == n) for n in (0, 1)]


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
def test_iceball_over_tcp_is_the_tcp_stream_tshark_follows():
    """Every byte of the Iceball TCP session is an Iceball message: the messages, joined, are the byte
    streams tshark's follow,tcp shows, per direction."""
    out = subprocess.run([TSHARK, "-n", "-r", ICE_TCP, "-q", "-z", "follow,tcp,raw,0"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    theirs = [bytes.fromhex("".join(line.strip() for line in out[6:-1] if line.startswith("\t") == bool(n)))
              for n in (0, 1)]
    ours = follow(ICE_TCP, "follow,iceball,raw,0")
    assert ours["filter"] == "tcp.stream eq 0 and iceball"
    assert per_node(ours) == theirs
    assert len(ours["records"]) > 40            # one record per message, not per segment


def test_enet_delivers_the_payloads_the_peers_sent():
    """tools/make_enet_captures.py: a reliable 11-byte message, a 5,000-byte reliable and a 3,000-byte
    unreliable one (fragmented on the wire, reassembled here), then reliable, unreliable and unsequenced."""
    for path in (ENET, ENET_RC):
        result = follow(path, "follow,enet,raw,0")
        sizes = [len(r["data"]) for r in result["records"]]
        assert sizes[:3] == [11, 5000, 3000], path
        assert result["records"][-1]["data"] == b"unsequenced-data"
        assert [r["label"].split()[-1] for r in result["records"][1:3]] == ["SEND_FRAGMENT",
                                                                            "SEND_UNRELIABLE_FRAGMENT"]
    assert per_node(follow(ENET, "follow,enet,raw,0")) == per_node(follow(ENET_RC, "follow,enet,raw,0"))


def test_enet_channel_selection_partitions_the_stream():
    whole = follow(ICE_ENET, "follow,enet,raw,0")["records"]
    parts = [follow(ICE_ENET, f"follow,enet,raw,0,channel={c}")["records"] for c in (0, 1)]
    assert sorted(r["frame"] for r in whole) == sorted(r["frame"] for p in parts for r in p)
    assert all(r["label"].startswith("channel 1 ") for r in parts[1]) and parts[0] and parts[1]
    # the Iceball stream over ENet is what ENet delivered (same bytes, same order)
    ice = follow(ICE_ENET, "follow,iceball,raw,0")
    assert b"".join(r["data"] for r in ice["records"]) == b"".join(r["data"] for r in whole)


def test_websocket_messages_are_the_decompressed_freeblox_messages():
    ws = follow(FREEBLOX, "follow,websocket,raw,0")
    fb = follow(FREEBLOX, "follow,freeblox,raw,0")
    fb_data = [r["data"] for r in fb["records"]]
    ws_data = [r["data"] for r in ws["records"]]
    assert fb_data and all(d in ws_data for d in fb_data)
    assert len(ws_data) > len(fb_data)               # ping / pong / close as well
    big = max(fb_data, key=len)
    assert len(big) == 108337 and b"noise" in big[:64]


def test_rutentoy_messages_by_cookie_and_textures():
    msgs = follow(RUTENTOY, "follow,rutentoy,raw,0,cookie=100")["records"]
    assert follow(RUTENTOY, "follow,rutentoy,raw,0,cookie=0x64")["records"] == msgs
    assert len(msgs) == 1 and msgs[0]["data"].decode("utf-8").startswith("Ünïcödé → 日本語")
    tex = follow(str(CAPTURES_DIR / "rutentoy-login-texture.pcap"), "follow,rutentoy,raw,0,kind=texture")
    assert [len(r["data"]) for r in tex["records"]] == [3362, 1036]


@pytest.mark.parametrize("mode", ["ascii", "hex", "raw", "yaml", "decoded"])
def test_every_mode_renders(mode):
    for path, proto in ((ICE_ENET, "iceball"), (ENET, "enet"), (FREEBLOX, "freeblox"), (FREEBLOX, "websocket"),
                        (RUTENTOY, "rutentoy")):
        result = follow(path, f"follow,{proto},{mode},0")
        text = stats_out.render_text(result)
        assert result["records"], (path, proto)
        if mode == "yaml":
            assert text.startswith("peers:\n") and "!!binary" in text
        else:
            assert text.startswith("\n" + "=" * 67 + f"\nFollow: {proto},{mode}\n")
        assert stats_out.render_json([result])


def test_by_address_pair_and_bad_arguments():
    a = follow(ICE_ENET, "follow,iceball,hex,127.0.0.1:20737,127.0.0.1:40225")
    b = follow(ICE_ENET, "follow,iceball,hex,0")
    assert [r["frame"] for r in a["records"]] == [r["frame"] for r in b["records"]]
    assert a["nodes"] == b["nodes"]
    with pytest.raises(stats.StatsError):
        stats.make_tap("follow,enet,decoded")
    with pytest.raises(stats.StatsError):
        stats.make_tap("follow,udp,decoded,0")        # decoded: game follows only
