"""The `*,tree` statistics of tshark's pinfo_stats_tree plugin, on the stats_tree engine (stats_tree.py):

-z plen,tree         Packet Lengths: frames per length range (frame.len), with their average, min and max
-z ip_hosts,tree     IPv4 Statistics/All Addresses: each address, counted as source and as destination
-z ip_srcdst,tree    IPv4 Statistics/Source and Destination Addresses: sources and destinations apart
-z ptype,tree        IPv4 Statistics/IP Protocol Types: TCP, UDP, SCTP or NONE (the port type)
-z dests,tree        IPv4 Statistics/Destinations and Ports: destination address, port type, port
-z ipv6_hosts,tree, ipv6_srcdst,tree, ipv6_ptype,tree, ipv6_dests,tree: the same over IPv6

Each takes an optional display filter (`-z plen,tree,udp`). The IP trees count each packet with an IPv4 (IPv6)
header, with the packet's network addresses and its transport's port type and destination port (an ICMP error's:
those of the datagram it quotes). The IPv6 trees leave out a fragment that completes no datagram and take the
destination the header holds (not a routing header's last address), as tshark's IPv6 tap. Not reproduced: tunnels
(tshark counts an IP-in-IP packet once per header, both times with the inner addresses).
"""
from __future__ import annotations

import sys

from ..engine.demand import of_filter
from .stats_base import StatsError, Tap, register
from .stats_phs import compile_optional
from .stats_tree import StatsTree

PACKET_LENGTHS = ["0-19", "20-39", "40-79", "80-159", "160-319", "320-639", "640-1279", "1280-2559",
                  "2560-5119", "5120 and greater"]
PORT_TYPES = {"tcp": "TCP", "udp": "UDP", "sctp": "SCTP"}      # port_type_to_str; anything else is NONE


class TreeTap(Tap):
    """A stats tree fed by packets: `path` is its title, `build` makes its fixed nodes, `count` one packet."""

    abbr = ""
    path = ""
    network: str | None = None      # the IP trees: "ip" or "ipv6", the header a packet needs to be counted

    def __init__(self, args):
        self.filter = ",".join(args)
        try:
            self.match = compile_optional(self.filter, self.name)
        except StatsError as exc:       # tshark leaves the tree out, says why, and goes on
            raise StatsError(str(exc), report=(f"protodump: stats_tree for: {self.path} failed to attach to the "
                                               f"tap: {exc.invalid}", False), fatal=False) from None
        self.tree = StatsTree(self.path)
        self.first_ns = None
        self.build()

    def standard_only(self) -> bool:
        return self.match is None

    def demand(self):
        return of_filter(self.filter or None)

    def add(self, packet):
        if self.first_ns is None:
            self.first_ns = packet.frame.ts_ns      # times count from the capture's first frame
        d = packet.decoded
        if self.network is not None and (d.network != self.network or d.ip_tap() is None):
            return
        if self.match is not None and not self.match(packet):
            return
        self.tree.at((packet.frame.ts_ns - self.first_ns) / 1e6)
        self.count(packet, d)

    def build(self) -> None:
        raise NotImplementedError

    def count(self, packet, d) -> None:
        raise NotImplementedError

    def result(self):
        tree = self.tree
        out = {"kind": self.kind, "layout": "stats_tree", "title": self.path, "filter": self.filter,
               "name_width": tree.name_width(), "rows": tree.rows()}
        if tree.left_out:
            out["left_out"] = tree.left_out
            print(f"protodump: -z {self.name}: {tree.left_out} items of packets left out, past the tree's limit of "
                  f"{tree.limit} nodes", file=sys.stderr)
        return out


def tree_statistic(abbr: str, path: str, network: str | None = None):
    """Register a TreeTap subclass as `-z <abbr>,tree`."""
    def wrap(cls):
        cls.name = f"{abbr},tree"
        cls.kind, cls.abbr, cls.path, cls.network = abbr, abbr, path, network
        return register(cls)
    return wrap


@tree_statistic("plen", "Packet Lengths")
class PacketLengths(TreeTap):
    def build(self):
        self.lengths = self.tree.range_node(self.path, PACKET_LENGTHS)

    def count(self, packet, d):
        self.tree.tick(self.path)
        self.tree.tick_range(self.lengths, packet.frame.length)


class Hosts(TreeTap):
    def build(self):
        self.hosts = self.tree.node(self.path)

    def count(self, packet, d):
        tree = self.tree
        tree.tick(self.path)
        src, dst = d.ip_tap()
        tree.tick(src, self.hosts)
        tree.tick(dst, self.hosts)


class SourcesAndDestinations(TreeTap):
    version = ""

    def build(self):
        self.sources = self.tree.node(f"Source {self.version} Addresses")
        self.sources.top = True
        self.destinations = self.tree.node(f"Destination {self.version} Addresses")

    def count(self, packet, d):
        tree = self.tree
        src, dst = d.ip_tap()
        tree.tick(self.sources.name)
        tree.tick(src, self.sources)
        tree.tick(self.destinations.name)
        tree.tick(dst, self.destinations)


def port_type(d) -> tuple[str, int]:
    """The packet's port type and destination port, as pinfo holds them at the end of the dissection: its
    transport's, or the datagram's an ICMP error quotes (the quoting packet keeps its own addresses)."""
    ptype = PORT_TYPES.get(d.transport)
    if ptype is not None:
        return ptype, d.dport or 0
    icmp = d.icmp
    if icmp is not None:
        if icmp.quoted_udp is not None:
            return "UDP", icmp.quoted_udp[4]
        if icmp.quoted_tcp is not None:
            return "TCP", icmp.quoted_tcp[4]
    return "NONE", 0


class ProtocolTypes(TreeTap):
    def build(self):
        self.pivot = self.tree.node(self.path)

    def count(self, packet, d):
        self.tree.tick_pivot(self.pivot, port_type(d)[0])


class Destinations(TreeTap):
    def build(self):
        self.destinations = self.tree.node(self.path)

    def count(self, packet, d):
        tree = self.tree
        tree.tick(self.path)
        address = tree.tick(d.ip_tap()[1], self.destinations, with_hash=True)
        ptype, port = port_type(d)
        tree.tick(str(port), tree.tick(ptype, address, with_hash=True), with_hash=True)


for _network, _prefix, _version, _title in (("ip", "ip", "IPv4", "IPv4 Statistics"),
                                            ("ipv6", "ipv6", "IPv6", "IPv6 Statistics")):
    tree_statistic(f"{_prefix}_hosts", f"{_title}/All Addresses", _network)(
        type(f"{_version}Hosts", (Hosts,), {}))
    tree_statistic(f"{_prefix}_srcdst", f"{_title}/Source and Destination Addresses", _network)(
        type(f"{_version}SourcesAndDestinations", (SourcesAndDestinations,), {"version": _version}))
    tree_statistic("ptype" if _network == "ip" else "ipv6_ptype", f"{_title}/IP Protocol Types", _network)(
        type(f"{_version}ProtocolTypes", (ProtocolTypes,), {}))
    tree_statistic("dests" if _network == "ip" else "ipv6_dests", f"{_title}/Destinations and Ports", _network)(
        type(f"{_version}Destinations", (Destinations,), {}))

