#!/usr/bin/env python3
"""Record the Freeblox-over-WebSocket captures into captures/ (and their goldens into captures/golden/).

The traffic is real: a `websockets` server and client (asyncio, the library's own framing, masking,
fragmentation and permessage-deflate) talk over kernel TCP on `lo` of a private network namespace
(`unshare -n`, MTU 1500, TSO/GSO/GRO off so a large message spans many segments), recorded by tcpdump
(the helpers of tools/netns_record.py). The Freeblox messages come from the table encoder
(protodump.dissectors.freeblox.PROTOCOL.encode) and are seeded; masking keys are the library's own random ones.

Every step is received by the peer before the next one is sent, so the order in the capture is the script's.

    python tools/make_freeblox_captures.py            # record every capture and write its goldens
    python tools/make_freeblox_captures.py --golden   # only rewrite the goldens
    python tools/make_freeblox_captures.py --only freeblox-session.pcap
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
GOLDEN = CAPTURES / "golden"
sys.path.insert(0, str(ROOT / "tools"))

import netns_record

SERVER_PORT = 8765             # Freeblox has no port: the heuristic (or -d ws.port==8765,freeblox) finds it
CLIENT_PORT = 40321
CRAFTED = "websocket-bad.pcap"


# --- the inner side: runs in the namespace ---------------------------------------------------------------------

def _payload(step_value):
    kind, value = step_value
    if kind == "hex":
        return bytes.fromhex(value)
    if kind == "text":
        return value
    return [_payload(v) for v in value]          # "frags": a fragmented message


async def _traffic(spec) -> None:
    from websockets.asyncio.client import connect
    from websockets.asyncio.server import serve
    from websockets.extensions.permessage_deflate import (ClientPerMessageDeflateFactory,
                                                          ServerPerMessageDeflateFactory)

    server_conn: asyncio.Future = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def handler(ws):
        server_conn.set_result(ws)
        await done.wait()
        await ws.wait_closed()

    deflate = spec["deflate"]
    server_ext = client_ext = None
    if isinstance(deflate, dict):     # explicit parameters (no_context_takeover, ...)
        server_ext = [ServerPerMessageDeflateFactory(**deflate)]
        client_ext = [ClientPerMessageDeflateFactory(**deflate)]
    compression = "deflate" if deflate else None
    kw = dict(compression=compression, ping_interval=None, max_size=None)
    slow = spec.get("slow_reader")
    host = spec.get("host", "127.0.0.1")
    url = f"ws://{'[' + host + ']' if ':' in host else host}:{spec['port']}/play"
    async with serve(handler, host, spec["port"], extensions=server_ext, **kw):
        if slow:        # a small receive buffer, set before the handshake (its window scale); one frame queued
            sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, slow[0])
            sock.bind((host, spec["client_port"]))
            sock.connect((host, spec["port"]))
            client = await connect(url, extensions=client_ext, sock=sock, max_queue=1, **kw)
        else:
            client = await connect(url, extensions=client_ext, local_addr=(host, spec["client_port"]), **kw)
        server = await server_conn
        if spec.get("nagle"):          # Nagle back on (asyncio disables it): back-to-back messages share segments
            for conn in (client, server):
                conn.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        ends = {"c2s": (client, server), "s2c": (server, client)}

        async def received(rx):
            if slow and rx is client:          # the slow client reads each message late
                await asyncio.sleep(slow[1])
            return await rx.recv()
        for side, kind, value in spec["steps"]:
            tx, rx = ends[side]
            if kind == "send":
                payload = _payload(value)
                await tx.send(payload)
                got = await received(rx)
                want = b"".join(payload) if isinstance(payload, list) and payload and isinstance(payload[0], bytes) \
                    else ("".join(payload) if isinstance(payload, list) else payload)
                if got != want:
                    raise netns_record.RecordError(f"{side} message mangled")
            elif kind == "interleaved":     # a fragmented message with pings sent between its fragments
                parts = [bytes.fromhex(v) for k, v in value if k == "hex"]

                async def fragments():
                    for k, v in value:
                        if k == "hex":
                            yield bytes.fromhex(v)
                        else:
                            await tx.ping(bytes.fromhex(v))
                await tx.send(fragments())
                if await rx.recv() != b"".join(parts):
                    raise netns_record.RecordError(f"{side} interleaved message mangled")
            elif kind == "burst":                                   # no waiting: messages share segments
                payloads = [_payload(v) for v in value]
                for payload in payloads:
                    await tx.send(payload)
                for payload in payloads:
                    if await received(rx) != payload:
                        raise netns_record.RecordError(f"{side} burst mangled")
            elif kind == "ping":
                await (await tx.ping(bytes.fromhex(value)))         # the peer answers with a pong by itself
            elif kind == "close":
                code, reason = value
                await tx.close(code, reason)
        done.set()
        await client.wait_closed()
    await asyncio.sleep(0.05)


def _inner(spec) -> None:
    with netns_record.recording(dict(out=spec["out"], mtu=1500, proto="tcp", drop=spec.get("drop", 0),
                                     linktype=spec.get("linktype", "ethernet"))):
        asyncio.run(_traffic(spec))


def record(steps, out: Path, *, deflate=True, nagle=False, port=SERVER_PORT, client_port=CLIENT_PORT,
           timeout=120, drop=0, slow_reader=None, host="127.0.0.1", linktype="ethernet") -> None:
    """Run `steps` [(side, kind, value)] between a websockets client and server; write the pcap to `out`.
    kinds: ("send", ("hex", "0a..") | ("text", "...") | ("frags", [..])), ("burst", [("hex", ..), ..]) (sent
    back to back, read afterwards), ("interleaved", [("hex", ..) | ("ping", hex), ..]) (one fragmented message,
    pings between its fragments), ("ping", hex), ("close", (code, reason)). `drop`: the percentage of segments
    dropped on input (a lossy link, tools/netns_record.py). `slow_reader`: (receive buffer, seconds): the client
    has that SO_RCVBUF, queues one frame, and reads each message from the server that late (a slow client).
    `host`: both ends' address ("::1": IPv6); `linktype`: tools/netns_record.py's ("cooked2": tcpdump -i any)."""
    spec = dict(steps=steps, out=str(out.resolve()), deflate=deflate, nagle=nagle, port=port,
                client_port=client_port, drop=drop, slow_reader=slow_reader, host=host, linktype=linktype)
    prefix = netns_record._unshare_prefix()
    if prefix is None:
        raise netns_record.RecordError("cannot create a network namespace (unshare)")
    proc = subprocess.run(prefix + [sys.executable, os.path.abspath(__file__), "--inner"],
                          input=json.dumps(spec).encode(), capture_output=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise netns_record.RecordError(proc.stderr.decode(errors="replace"))


# --- the scripts -----------------------------------------------------------------------------------------------

def _scripts() -> dict:
    from freeblox_sessions import burst, game, sessions    # the Freeblox sessions, built with the table encoder
    scripts = sessions()
    # a lossy link (15 % of the segments dropped on input, tools/netns_record.py): out-of-order and fast-retransmitted
    # segments in tshark's own reassembly; each recording loses other segments
    steps, options = scripts["freeblox-plain.pcap"]
    scripts["freeblox-lossy.pcap"] = (steps, {**options, "drop": 15})
    # ... a fast retransmission outside every PDU, dissected again as a new message (a Ping)
    steps, options = scripts["freeblox-fragments-plain.pcap"]
    scripts["freeblox-lossy-fast.pcap"] = (steps, {**options, "drop": 15})
    # ... spurious retransmissions of the first segment of a PDU reassembled before: "Retransmitted TCP segment data"
    steps, options = scripts["freeblox-fragments-nocontext.pcap"]
    scripts["freeblox-lossy-spurious.pcap"] = (steps, {**options, "drop": 30})
    # ... fast retransmissions of the pending PDU's first segment (the bundled file is the first 75 frames of such
    # a recording of freeblox-plain.pcap's steps at 30 %: editcap -F pcap -r IN OUT 1-75)
    scripts["freeblox-lossy-start.pcap"] = (scripts["freeblox-plain.pcap"][0],
                                            {**scripts["freeblox-plain.pcap"][1], "drop": 30})
    # a slow client (a 4 KiB receive buffer, each server message read 50 ms late) of a streamed world: the window
    # fills, a zero window; segments that complete one message and hold others (two rounds of desegment_tcp)
    scripts["freeblox-slow-reader.pcap"] = (burst(game(big=True)) + [("s2c", "close", (1000, ""))],
                                            dict(deflate=True, nagle=True, slow_reader=(4096, 0.05)))
    # IPv6 on a Linux cooked v2 capture (tcpdump -i any): the session over ::1
    steps, options = scripts["freeblox-session.pcap"]
    scripts["freeblox-v6.pcap"] = (steps, {**options, "host": "::1", "linktype": "cooked2"})
    # (tests/data/freeblox-lossy-rounds.pcap, kept out of captures/, is such a recording of freeblox-fragments.pcap's
    # steps at 40 %: a segment completing a PDU, then holding a whole one and the start of the next)
    return scripts


def write_golden(name: str) -> None:
    for flag, ext in ((["-V"], "txt"), (["-T", "json"], "json")):
        out = subprocess.run(["protodump", *flag, name], cwd=CAPTURES, capture_output=True, check=True).stdout
        (GOLDEN / f"{name}.{ext}").write_bytes(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--inner"]:
        _inner(json.load(sys.stdin))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--golden", action="store_true", help="only rewrite the golden outputs")
    ap.add_argument("--only", help="one capture name")
    a = ap.parse_args(argv)
    from freeblox_sessions import crafted_websocket
    for name, (steps, options) in _scripts().items():
        if a.only and name != a.only:
            continue
        if not a.golden:
            record(steps, CAPTURES / name, **options)
            print("recorded", name)
        write_golden(name)
    if not a.only or a.only == CRAFTED:
        if not a.golden:             # raw bytes over real sockets: frames no library would send
            netns_record.record_tcp(crafted_websocket(), str(CAPTURES / CRAFTED), server_port=SERVER_PORT,
                                    client_port=CLIENT_PORT)
            print("recorded", CRAFTED)
        write_golden(CRAFTED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
