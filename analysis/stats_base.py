"""The tap interface behind `-z`: one class per statistic, fed every packet, asked for its result at the end.

A tap is registered under the first words of its -z argument ("io,phs", "conv,udp", "follow,udp"): the longest
registered prefix wins, the rest of the argument goes to the tap's constructor, which raises StatsError (one
line, the CLI exits 2) when it does not make sense. result() returns plain data (dicts, lists, numbers,
strings): output/stats_out.py renders it as tshark's text, rich tables or JSON.
"""
from __future__ import annotations


class StatsError(ValueError):
    """A bad -z argument (the CLI turns it into one clear line, exit code 1); `unknown`: the argument, when it
    names no statistic; `report`: (exact text, on standard output?) where tshark words the error its own way;
    `fatal` False: the run goes on without this statistic (a stats tree whose tap cannot attach)."""

    def __init__(self, message: str, unknown: str | None = None, report: tuple[str, bool] | None = None,
                 fatal: bool = True):
        super().__init__(message)
        self.unknown, self.report, self.fatal = unknown, report, fatal


class Tap:
    """A statistic. `name` is its -z prefix; `kind` tells the renderer which layout to use."""

    name = ""
    kind = ""
    usage = ""          # the argument syntax, shown in errors and --help

    def __init__(self, args: list[str]):
        if args:
            raise StatsError(f"-z {self.name}: unexpected argument {','.join(args)!r} (usage: -z {self.usage})")

    def add(self, packet) -> None:
        raise NotImplementedError

    def standard_only(self) -> bool:
        """True when the tap reads only the capture and standard layers (addresses, lengths, times): its packets
        need no game dissection (engine.dispatch.Dispatcher.standard_only, as Wireshark with no tree)."""
        return False

    def demand(self):
        """The field abbrevs (and protocol names) the tap reads of each packet, or engine.demand.EVERYTHING when
        it walks whole trees: the dispatcher decodes only those (engine.demand)."""
        return frozenset() if self.standard_only() else None

    def result(self) -> dict:
        raise NotImplementedError


TAPS: dict[str, type[Tap]] = {}


def register(cls: type[Tap]) -> type[Tap]:
    TAPS[cls.name] = cls
    return cls


def make_tap(arg: str) -> Tap:
    """The tap for one -z argument (StatsError when unknown or malformed)."""
    words = arg.split(",")
    for n in range(len(words), 0, -1):
        cls = TAPS.get(",".join(words[:n]))
        if cls is not None:
            return cls(words[n:])
    known = ", ".join(sorted(TAPS))
    raise StatsError(f"-z {arg}: unknown statistic (known: {known})", unknown=arg)
