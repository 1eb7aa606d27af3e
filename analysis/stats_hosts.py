"""-z hosts[,ip|ipv4|ipv6]: tshark's hosts file of the names it resolved. By default tshark resolves no network
address (`-N` has no `n`), and names learnt from DNS answers in the capture (`d`) need a DNS dissector protodump
does not have: the file is tshark's header alone."""
from __future__ import annotations

from .stats_base import StatsError, Tap, register


@register
class Hosts(Tap):
    name = kind = "hosts"

    def __init__(self, args):
        if any(a not in ("ip", "ipv4", "ipv6") for a in args):
            raise StatsError("-z hosts: expected hosts[,ip|ipv4|ipv6]",
                             report=('protodump: invalid "-z hosts[,ip|ipv4|ipv6]" argument', False))
        self.capture_name = ""       # the -r path, as given (cli/read_cmd.py sets it)

    def standard_only(self) -> bool:
        return True

    def add(self, packet):
        pass

    def result(self):
        return {"kind": self.kind, "layout": "hosts", "capture": self.capture_name, "hosts": []}


def text_lines(r) -> list[str]:
    return ["# TShark hosts output", "#", f"# Host data gathered from {r['capture']}", ""]
