#!/usr/bin/env python3
"""Record real ENet traffic: two libenet 1.3.17 hosts (the pyenet wheel) talking over UDP on the loopback of a
private network namespace (`unshare -n`), captured by tcpdump (tools/netns_record.py's namespace helpers).

One scenario reaches every command type: CONNECT / VERIFY_CONNECT with connect data, reliable, unreliable and
unsequenced sends on several channels, large messages split into SEND_FRAGMENT and SEND_UNRELIABLE_FRAGMENT,
PING, BANDWIDTH_LIMIT (enet_host_bandwidth_limit), THROTTLE_CONFIGURE (enet_peer_throttle_configure, called
through ctypes on pyenet's own libenet: the wheel exports it but does not wrap it), and a DISCONNECT carrying data.
It is recorded three times: plain, with the range coder on both hosts, and with the range coder and CRC-32
checksums (enet_host_checksum = enet_crc32, set through ctypes; read it with -o enet.checksum:on). Then
enet-lossy-rc.pcap: reliable messages (small, fragmented, a burst in flight) over a link that drops a share of the
datagrams after tcpdump saw them (nftables, as tools/netns_record.py's drop=), so libenet resends commands and
fragments the peer already has; enet-bad.pcap: crafted bad datagrams after a real CONNECT; and the shared
enet-plain / enet-rangecoder copied.

    python3 tools/make_enet_captures.py [--out captures] [--golden]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import netns_record

PORT = 27015                       # not Iceball's 20737: ENet is found by its heuristic
CONNECT_DATA = 0x1234ABCD
DISCONNECT_DATA = 0xDEADBEEF
CHANNELS = 4
# name -> (range coder on, CRC-32 checksums on)
CAPTURES = {"enet-all-commands.pcap": (False, False), "enet-all-commands-rc.pcap": (True, False),
            "enet-checksum.pcap": (True, True)}
SHARED = Path(__file__).resolve().parents[2] / "shared" / "captures"
SHARED_CAPTURES = ("enet-plain.pcap", "enet-rangecoder.pcap")
LOSSY = "enet-lossy-rc.pcap"       # the lossy link's recording (range coder on), and the share of datagrams it drops
LOSSY_DROP = 20
BAD_PORT = 27016                   # enet-bad.pcap: crafted datagrams after a real CONNECT (the conversation stays ENet)


def _peer_pointer(peer) -> int:
    """The ENetPeer* inside a pyenet Peer (a Cython object: the pointer follows the object header)."""
    return ctypes.c_void_p.from_address(id(peer) + 16).value


def _libenet():
    import enet
    lib = ctypes.CDLL(enet.__file__)
    lib.enet_peer_throttle_configure.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                                                 ctypes.c_uint32]
    lib.enet_host_bandwidth_limit.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]
    return lib


def _host_of(peer_pointer: int) -> int:
    """ENetPeer.host: after the dispatch list node (two pointers)."""
    return ctypes.c_void_p.from_address(peer_pointer + 16).value


def _host_pointer(host) -> int:
    """The ENetHost* inside a pyenet Host (after the object header, like Peer's)."""
    return ctypes.c_void_p.from_address(id(host) + 16).value


def _enable_checksum(host) -> None:
    """enet_host_checksum = enet_crc32, which pyenet does not wrap: ENetHost.checksum is the pointer right before
    ENetHost.compressor, found where compress_with_range_coder wrote enet_range_coder_compress (call it first)."""
    lib = ctypes.CDLL(__import__("enet").__file__)
    target = ctypes.cast(lib.enet_range_coder_compress, ctypes.c_void_p).value
    base = _host_pointer(host)
    for offset in range(0, 8192, 8):
        if ctypes.c_void_p.from_address(base + offset).value == target:     # compressor.compress
            slot = base + offset - 16                                          # checksum, then compressor.context
            ctypes.c_void_p.from_address(slot).value = ctypes.cast(lib.enet_crc32, ctypes.c_void_p).value
            return
    raise RuntimeError("ENetHost.compressor not found")


class Pair:
    """A server and a client host in one process, serviced in turn."""

    def __init__(self, compress: bool, checksum: bool = False):
        import enet
        self.enet = enet
        self.server = enet.Host(enet.Address(b"127.0.0.1", PORT), 4, CHANNELS, 0, 0)
        self.client = enet.Host(None, 1, CHANNELS, 0, 0)
        if compress or checksum:
            self.server.compress_with_range_coder()
            self.client.compress_with_range_coder()
        if checksum:
            _enable_checksum(self.server)
            _enable_checksum(self.client)
        self.events: list[tuple] = []
        self.server_peer = None
        self.client_peer = self.client.connect(enet.Address(b"127.0.0.1", PORT), CHANNELS, CONNECT_DATA)
        self.pump_until(lambda: self.server_peer is not None and self.connected())

    def connected(self) -> bool:
        return any(e[0] == "client" and e[1] == self.enet.EVENT_TYPE_CONNECT for e in self.events)

    def pump(self, rounds: int = 1) -> None:
        enet = self.enet
        for _ in range(rounds):
            for name, host in (("server", self.server), ("client", self.client)):
                event = host.service(2)
                while event is not None and event.type != enet.EVENT_TYPE_NONE:
                    data = event.packet.data if event.type == enet.EVENT_TYPE_RECEIVE else None
                    self.events.append((name, event.type, event.channelID, event.data, data))
                    if name == "server" and event.type == enet.EVENT_TYPE_CONNECT:
                        self.server_peer = event.peer
                    event = host.check_events()

    def pump_until(self, done, limit: float = 5.0) -> None:
        deadline = time.monotonic() + limit
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError("ENet exchange timed out")
            self.pump()

    def received(self, side: str) -> int:
        return sum(1 for e in self.events if e[0] == side and e[1] == self.enet.EVENT_TYPE_RECEIVE)

    def send(self, peer, channel: int, data: bytes, flags: int, side: str, limit: float = 5.0) -> None:
        """Send, and wait until `side` received it (`limit` seconds: longer on a lossy link, where libenet resends)."""
        want = self.received(side) + 1
        peer.send(channel, self.enet.Packet(data, flags))
        self.pump_until(lambda: self.received(side) >= want, limit)
        self.pump(5)                        # let the acknowledgements go out


def text(n: int, seed: str) -> bytes:
    """Compressible bytes (the range coder has something to do)."""
    words = f"{seed} ENet carries this message over UDP; ".encode()
    return (words * (n // len(words) + 1))[:n]


def scenario(compress: bool, checksum: bool) -> None:
    import enet
    pair = Pair(compress, checksum)
    c, s = pair.client_peer, pair.server_peer
    reliable, unsequenced = enet.PACKET_FLAG_RELIABLE, enet.PACKET_FLAG_UNSEQUENCED
    unreliable_fragment = getattr(enet, "PACKET_FLAG_UNRELIABLE_FRAGMENT", 8)
    for ch in range(CHANNELS):
        pair.send(c, ch, text(40 + ch, f"reliable on channel {ch}"), reliable, "server")
    pair.send(s, 0, text(30, "unreliable"), 0, "client")
    pair.send(c, 1, text(25, "unsequenced"), unsequenced, "server")
    pair.send(s, 1, text(5000, "large reliable"), reliable, "client")              # SEND_FRAGMENT
    pair.send(s, 2, text(3000, "large unreliable"), unreliable_fragment, "client")  # SEND_UNRELIABLE_FRAGMENT
    pair.send(c, 3, text(12000, "larger reliable"), reliable, "server")
    lib = _libenet()
    # BANDWIDTH_LIMIT goes to every peer at the host's next bandwidth throttle (once a second)
    lib.enet_host_bandwidth_limit(_host_of(_peer_pointer(s)), 250000, 125000)
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        pair.pump()
    lib.enet_peer_throttle_configure(_peer_pointer(c), 2000, 3, 4)      # THROTTLE_CONFIGURE
    pair.pump(20)
    c.ping()
    pair.pump(20)
    s.disconnect(DISCONNECT_DATA)
    pair.pump_until(lambda: any(e[0] == "client" and e[1] == enet.EVENT_TYPE_DISCONNECT for e in pair.events))
    pair.pump(10)


def lossy_scenario() -> None:
    """Reliable messages both ways over a lossy link: each waited for (libenet resends what was lost, so the peer
    may get a command or fragment twice); unreliable ones not waited for (lost ones stay lost); a burst of ten
    reliable messages in flight at once."""
    import enet
    pair = Pair(True)
    c, s = pair.client_peer, pair.server_peer
    reliable = enet.PACKET_FLAG_RELIABLE

    def send(peer, channel: int, data: bytes, side: str) -> None:
        pair.send(peer, channel, data, reliable, side, limit=30)

    for i in range(6):
        send(c, i % CHANNELS, text(40 + i, f"reliable {i}"), "server")
        send(s, i % CHANNELS, text(60 + i, f"reply {i}"), "client")
    for i in range(3):
        s.send(0, enet.Packet(text(30, f"unreliable {i}"), 0))
        pair.pump(3)
    send(s, 1, text(5000, "large reliable"), "client")              # SEND_FRAGMENT, fragments resent
    send(c, 3, text(12000, "larger reliable"), "server")
    send(s, 2, text(9000, "server larger"), "client")
    want = pair.received("server") + 10
    for i in range(10):
        c.send(i % CHANNELS, enet.Packet(text(100 + i, f"burst {i}"), reliable))
    pair.pump_until(lambda: pair.received("server") >= want, limit=30)
    pair.pump(20)
    s.disconnect(DISCONNECT_DATA)
    pair.pump_until(lambda: any(e[0] == "client" and e[1] == enet.EVENT_TYPE_DISCONNECT for e in pair.events),
                    limit=30)
    pair.pump(10)


# --- crafted bad input ---------------------------------------------------------------------------------------------

def bad_datagrams() -> list[tuple[str, bytes]]:
    """A valid connection, then one problem per datagram (each must give an expert item, and decoding go on)."""
    from protodump.dissectors.enet import PROTOCOL as P
    connect = dict(type=2, channel=255, reliable_seq=1, acknowledge=1, outgoing_peer_id=0, incoming_session_id=255,
                   outgoing_session_id=255, mtu=1400, window_size=65536, channel_count=2, connect_id=0x01020304,
                   data=CONNECT_DATA)
    verify = {k: v for k, v in connect.items() if k != "data"} | {"type": 3}
    send = dict(type=6, channel=0, reliable_seq=2, acknowledge=1, data=b"fine")

    def frag(seq, count, number, total, offset, data, kind=8):
        return dict(type=kind, channel=1, reliable_seq=seq, acknowledge=int(kind == 8), start_seq=seq,
                    fragment_count=count, fragment_number=number, total_length=total, fragment_offset=offset,
                    data=data)

    hdr = {"peer_id": 0, "sent_time": 100}
    c2s, s2c = "c2s", "s2c"
    return [
        (c2s, P.encode({"peer_id": 0xFFF, "sent_time": 1}, [connect])),
        (s2c, P.encode({"peer_id": 0, "sent_time": 2}, [verify])),
        (c2s, P.encode(hdr, [send]) + bytes([0x8D, 0, 0, 3]) + b"after an invalid type"),   # type 13: stop
        (c2s, P.encode(hdr, [send]) + bytes([0x80, 0, 0, 4])),                               # type 0: stop
        (c2s, P.encode(hdr, [send]) + bytes([0x07, 0, 0, 5, 0])),                            # truncated command
        (c2s, P.encode(hdr, [dict(send, data_length=500)])),                                 # length too large
        (c2s, bytes([0xC0, 0x00, 0x00, 0x05]) + bytes(range(200, 240))),                    # range coder garbage
        (c2s, bytes([0xC0, 0x00, 0x00, 0x06])),                                              # compressed, no body
        (s2c, P.encode(hdr, [frag(10, 2, 0, 100, 90, b"x" * 20)])),                          # beyond the total
        (s2c, P.encode(hdr, [frag(11, 0xFFFFFFFF, 0, 0xFFFFFFF0, 0, b"y" * 8)])),            # hostile count/total
        (s2c, P.encode(hdr, [frag(12, 2, 5, 100, 0, b"z" * 8)])),                            # number >= count
        (s2c, P.encode(hdr, [frag(13, 3, 2, 30, 20, b"C" * 10)])),                           # out of order,
        (s2c, P.encode(hdr, [frag(13, 3, 0, 30, 0, b"A" * 10)])),
        (s2c, P.encode(hdr, [frag(13, 3, 0, 30, 0, b"a" * 10)])),                            # a duplicate (ignored)
        (s2c, P.encode(hdr, [frag(13, 4, 1, 40, 10, b"?" * 10)])),                           # count/total differ
        (s2c, P.encode(hdr, [frag(13, 3, 1, 30, 10, b"B" * 10)])),                           # completes "A..B..C"
        (s2c, P.encode(hdr, [frag(13, 3, 1, 30, 10, b"B" * 10)])),                           # late copy
        (c2s, P.encode(hdr, [dict(type=1, channel=7, reliable_seq=99, received_reliable_seq=99,
                                  received_sent_time=5)])),                                  # acknowledges nothing
        (c2s, b"\x80"),                                                                     # truncated header
        (c2s, bytes(range(256)) * 2),                                                        # random bytes
        (c2s, P.encode(hdr, [dict(type=4, channel=255, reliable_seq=6, acknowledge=1, data=DISCONNECT_DATA)])),
    ]


def record_bad(out: Path) -> None:
    netns_record.record_udp(bad_datagrams(), str(out), server_port=BAD_PORT, gap=0.001)


# --- inside the namespace ------------------------------------------------------------------------------------------

def inner(spec: dict) -> None:
    with netns_record.recording(spec):
        if spec.get("drop"):
            lossy_scenario()
        else:
            scenario(spec["compress"], spec["checksum"])


def record(out: Path, compress: bool, checksum: bool, drop: int = 0) -> None:
    """`drop`: the lossy scenario, on a link that drops this percentage of the datagrams (range coder on)."""
    prefix = netns_record._unshare_prefix()
    if prefix is None:
        raise SystemExit("cannot create a network namespace (unshare -n)")
    spec = {"out": str(out.resolve()), "compress": compress, "checksum": checksum, "mtu": None, "offloads_off": True,
            "linktype": "ethernet", "nano": False, "proto": "udp", "drop": drop}
    subprocess.run([*prefix, sys.executable, os.path.abspath(__file__), "--inner"], input=json.dumps(spec).encode(),
                   check=True, timeout=120)


def golden(out_dir: Path, name: str) -> None:
    for suffix, args in ((".txt", ["-V"]), (".json", ["-T", "json"])):
        with open(out_dir / "golden" / f"{name}{suffix}", "wb") as f:
            subprocess.run([sys.executable, "-c", "from protodump.cli.main import main; main()", *args, name],
                           cwd=out_dir, stdout=f, check=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "captures"))
    ap.add_argument("--golden", action="store_true", help="also write captures/golden/<name>.txt|.json")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        inner(json.load(sys.stdin))
        return
    out = Path(args.out)
    for name, (compress, checksum) in CAPTURES.items():
        record(out / name, compress, checksum)
        print(f"wrote {out / name}")
    record(out / LOSSY, True, False, drop=LOSSY_DROP)
    print(f"wrote {out / LOSSY}")
    record_bad(out / "enet-bad.pcap")
    print(f"wrote {out / 'enet-bad.pcap'}")
    for name in SHARED_CAPTURES:           # the recorded ones the project was given, copied as they are
        shutil.copyfile(SHARED / name, out / name)
        print(f"copied {out / name}")
    if args.golden:
        for name in [*CAPTURES, LOSSY, "enet-bad.pcap", *SHARED_CAPTURES]:
            golden(out, name)


if __name__ == "__main__":
    main()
