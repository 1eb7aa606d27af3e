"""The HTTP stats trees of tshark 4.0 (packet-http.c), over the HTTP messages protodump decodes (a WebSocket
game's upgrade request and its response), on the stats_tree engine (stats_tree.py):

-z http,tree       HTTP/Packet Counter: messages by response code class and code, requests by method
-z http_req,tree   HTTP/Requests: requests by Host header and URI
-z http_srv,tree   HTTP/Load Distribution: requests by server address and host, responses by server address
-z http_seq,tree   HTTP/Request Sequences: requests under the page their Referer header names

Each takes an optional display filter. Each HTTP message counts once, at its frame's time. protodump decodes the
HTTP of WebSocket upgrades only (a connection that never asks for one is TCP to it): tshark counts every HTTP
message.
"""
from __future__ import annotations

import re

from ..dissectors.ws_handshake import status_name
from .stats_trees import TreeTap, tree_statistic


_WANTED = {"http.request.method": "method", "http.request.uri": "uri", "http.host": "host",
           "http.response.code": "code", "http.request.full_uri": "full_uri", "http.referer": "referer",
           "http.location": "location", "http.response_for.uri": "location_base"}


class Message:
    """What tshark's http tap hands its listeners about one message (http_info_value_t)."""

    __slots__ = ("method", "uri", "host", "code", "full_uri", "referer", "location", "location_base")

    def __init__(self, layer):
        self.method = self.uri = self.host = self.full_uri = self.referer = self.location = None
        self.location_base = None       # a response's: the URI of the request it answers
        self.code = 0
        for item in layer.item.walk():
            f = item.field
            if f is None:
                continue
            name = _WANTED.get(f.abbrev)
            if name is not None:
                setattr(self, name, item.value)


class HttpTreeTap(TreeTap):
    """A stats tree fed each HTTP message of a packet (tshark's http tap), at the packet's time."""

    def add(self, packet):
        if self.first_ns is None:
            self.first_ns = packet.frame.ts_ns
        layers = [layer for layer in packet.games if layer.proto == "http"]
        if not layers or (self.match is not None and not self.match(packet)):
            return
        for layer in layers:
            self.tree.at((packet.frame.ts_ns - self.first_ns) / 1e6)
            self.message(Message(layer), packet.decoded)

    def standard_only(self) -> bool:
        return False

    def count(self, packet, d) -> None:        # (add feeds message() instead)
        raise NotImplementedError

    def message(self, m: Message, d) -> None:
        raise NotImplementedError


RESPONSE_GROUPS = [(100, 200, "1xx: Informational"), (200, 300, "2xx: Success"), (300, 400, "3xx: Redirection"),
                   (400, 500, "4xx: Client Error"), (500, 600, "5xx: Server Error")]


@tree_statistic("http", "HTTP/Packet Counter")
class PacketCounter(HttpTreeTap):
    def build(self):
        tree = self.tree
        self.packets = tree.node("Total HTTP Packets")
        self.requests = tree.node("HTTP Request Packets", self.packets)
        self.responses = tree.node("HTTP Response Packets", self.packets)
        self.groups = {name: tree.node(name, self.responses)
                       for name in ["???: broken", *(g[2] for g in RESPONSE_GROUPS)]}
        tree.node("Other HTTP Packets", self.packets, with_hash=False)

    def message(self, m, d):
        tree = self.tree
        tree.tick("Total HTTP Packets")
        if m.code:
            tree.tick("HTTP Response Packets", self.packets)
            group = next((g[2] for g in RESPONSE_GROUPS if g[0] <= m.code < g[1]), "???: broken")
            tree.tick(group, self.responses)
            tree.tick(f"{m.code} {status_name(m.code)}", self.groups[group])
        elif m.method:
            tree.tick_pivot(self.requests, m.method)
        else:
            tree.tick("Other HTTP Packets", self.packets)


@tree_statistic("http_req", "HTTP/Requests")
class Requests(HttpTreeTap):
    def build(self):
        self.hosts = self.tree.node("HTTP Requests by HTTP Host")

    def message(self, m, d):
        if not m.method:
            return
        tree = self.tree
        tree.tick("HTTP Requests by HTTP Host")
        if m.host:
            host = tree.tick(m.host, self.hosts, with_hash=True)
            if m.uri:
                tree.tick(m.uri, host, with_hash=True)


@tree_statistic("http_srv", "HTTP/Load Distribution")
class LoadDistribution(HttpTreeTap):
    def build(self):
        tree = self.tree
        self.requests = tree.node("HTTP Requests by Server")
        self.by_address = tree.node("HTTP Requests by Server Address", self.requests)
        self.by_host = tree.node("HTTP Requests by HTTP Host", self.requests)
        self.responses = tree.node("HTTP Responses by Server Address")

    def message(self, m, d):
        tree = self.tree
        if m.method:
            tree.tick("HTTP Requests by Server")
            tree.tick("HTTP Requests by Server Address", self.requests, with_hash=True)
            tree.tick("HTTP Requests by HTTP Host", self.requests, with_hash=True)
            address = tree.tick(d.dst, self.by_address, with_hash=True)
            if m.host:
                host = tree.tick(m.host, self.by_host, with_hash=True)
                tree.tick(d.dst, host)
                tree.tick(m.host, address)
        elif m.code:
            tree.tick("HTTP Responses by Server Address")
            address = tree.tick(d.src, self.responses, with_hash=True)
            tree.tick("OK" if 100 < m.code < 400 else "KO", address)


@tree_statistic("http_seq", "HTTP/Request Sequences")
class RequestSequences(HttpTreeTap):
    """Each request under the page its Referer names, and each redirect's target under the page that redirected
    to it; a page under its own referer (the most recent one seen); every page of the chain ticked again
    (http_seq_stats_tree_packet)."""

    def build(self):
        self.top = self.tree.node("HTTP Request Sequences")
        self.node_of = {"HTTP Request Sequences": self.top}     # URI -> its most recent node
        self.parent_of = {id(self.top): self.tree.root}
        self.uri_of = {id(self.top): "HTTP Request Sequences"}

    def message(self, m, d):
        if m.location is not None and m.location_base:
            target = location_target(m.location_base, m.location)
            if target is not None:
                self._sequence(m.location_base, target)
        if m.method and m.referer and m.full_uri:
            self._sequence(m.referer, m.full_uri)

    def _sequence(self, referer_uri: str, uri: str) -> None:
        tree = self.tree
        known = self.node_of.get(referer_uri)
        if known is None:
            referer = tree.tick(referer_uri, self.top, with_hash=True)
            if referer is tree.left_out_node:           # past the tree's limit: nothing more is kept
                return
            self.node_of[referer_uri], self.parent_of[id(referer)] = referer, self.top
            self.uri_of[id(referer)] = referer_uri
        else:
            referer = tree.tick(referer_uri, self.parent_of[id(known)], with_hash=True)
        node = tree.tick(uri, referer, with_hash=True)
        if node is tree.left_out_node or referer is tree.left_out_node:
            return
        if id(node) not in self.uri_of:
            self.uri_of[id(node)], self.parent_of[id(node)] = uri, referer
        self.node_of[self.uri_of[id(node)]] = node
        current = referer
        while id(current) in self.parent_of:        # every page above the referer, ticked again
            parent = self.parent_of[id(current)]
            tree.tick(self.uri_of[id(current)], parent, with_hash=True)
            current = parent


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*(?=:)")


def location_target(base: str, location: str) -> str | None:
    """A redirect's target as tshark resolves it against the requested URI (determine_http_location_target: its
    shortcuts, not RFC 3986's whole algorithm); None where it gives up."""
    if "://" not in base:
        return None
    if location == "":
        return base
    if location.startswith("//"):
        scheme = _SCHEME.match(base)
        return f"{scheme.group(0)}:{location}" if scheme else None
    if "://" in location:
        return location
    base = base.split("#", 1)[0].split("?", 1)[0]
    if location.startswith("?"):
        return base + location
    after_scheme = base.index("://") + 3
    if location.startswith("/"):
        netloc_end = base.find("/", after_scheme)
        if after_scheme == len(base) or netloc_end < 0:
            return None
        return base[:netloc_end] + location
    path_end = base.rfind("/", after_scheme)
    return f"{base[:path_end]}/{location}" if path_end >= 0 else f"{base}/{location}"
