"""Statistics (-z): every tap module registers itself here; `make_taps` turns -z arguments into taps.

One module per idea: stats_base (the tap interface and registry), stats_phs (io,phs), stats_conv (conv,
endpoints), stats_io (io,stat), stats_expert (expert), stats_trees and stats_http (the *,tree statistics), stats_icmp
(icmp,srt, icmpv6,srt), stats_sctp (sctp,stat), stats_hosts (hosts), stats_game
(<proto>,types / <proto>,seq for every game protocol), follow (follow,*).
"""
from __future__ import annotations

from . import (follow, follow_game, stats_session, stats_conv, stats_game, stats_expert, stats_io,  # noqa: F401
               stats_phs, stats_trees, stats_http, stats_icmp, stats_sctp, stats_hosts)    # (for their registration)
from .stats_base import TAPS, StatsError, Tap, make_tap

__all__ = ["TAPS", "StatsError", "Tap", "make_tap", "make_taps", "run"]


def make_taps(args) -> list[Tap]:
    """The taps for a list of -z arguments, in order (StatsError for the first bad one)."""
    return [make_tap(arg) for arg in args]


def run(packets, args) -> list[dict]:
    """Feed packets to the taps of `args`; their results (the Python API's way to get statistics)."""
    taps = make_taps(args)
    for packet in packets:
        for tap in taps:
            tap.add(packet)
    return [tap.result() for tap in taps]
