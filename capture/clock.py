"""Per-capture time state, as tshark keeps it in its frame data: the first frame's time (the reference of
frame.time_relative and of the default time column), the previous captured frame and the previous *displayed*
frame (frame.time_delta_displayed, `-t dd`).

Which frames are displayed is known only to whoever applies the display filter: it reports each decision with
`Decoded.displayed(shown)`. A frame nobody reported on counts as displayed (no filter: every frame is).
"""
from __future__ import annotations


class FrameClock:
    __slots__ = ("first_ns", "shown_ns", "reported", "last_ns")

    def __init__(self):
        self.first_ns: int | None = None     # the capture's first frame
        self.shown_ns: int | None = None     # the last displayed frame
        self.last_ns: int | None = None      # the frame decoded last
        self.reported = False                # was a display decision reported for the last frame?

    def stamp(self, ts: int) -> tuple:
        """(first, previous captured, previous displayed) times for a frame at `ts`, in decode order."""
        last = self.last_ns
        if last is None:
            self.first_ns = ts
        elif not self.reported:
            self.shown_ns = last
        self.reported = False
        self.last_ns = ts
        return (self.first_ns, last, self.shown_ns)

    def displayed(self, ts: int, shown: bool) -> None:
        self.reported = True
        if shown:
            self.shown_ns = ts


def times_of(ts: int, times) -> tuple[int, int, int]:
    """(relative, delta, delta displayed) nanoseconds of a frame at `ts` stamped with `times` (None: alone)."""
    if times is None:
        return 0, 0, 0
    first, prev, shown = times
    return ts - first, ts - prev if prev is not None else 0, ts - shown if shown is not None else 0
