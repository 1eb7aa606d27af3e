"""`-T psml`: the packet list (tshark's default columns) as XML, as tshark 4.0 writes it (epan/print.c)."""
from __future__ import annotations

from . import columns

_XML = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord('"'): "&quot;", ord("'"): "&#x27;"}


def xml_escape(text: str) -> str:
    """print_escaped_xml: the five entities; tab, newline and carriage return kept; another non-printable ASCII
    byte as \\x<hex>; other UTF-8 kept."""
    out = text.translate(_XML)
    if out.isprintable() and out.isascii():
        return out
    return "".join(c if c.isprintable() or ord(c) > 0x7F or c in "\t\n\r" else "\\x%x" % ord(c) for c in out)


class PsmlWriter:
    def __init__(self, out, creator: str):
        self.out, self.creator, self.started = out, creator, False
        self.first_ns: int | None = None
        self.time_format = "r"          # -t (the CLI sets it)

    def _start(self) -> None:
        self.started = True
        sections = "".join(f"<section>{xml_escape(t)}</section>\n" for t in columns.TITLES)
        self.out.write('<?xml version="1.0" encoding="utf-8"?>\n'
                       f'<psml version="0" creator="{self.creator}">\n<structure>\n{sections}</structure>\n\n')

    def write(self, packet) -> None:
        if not self.started:
            self._start()
        cells = "".join(f"<section>{xml_escape(v)}</section>\n" for v in columns.values(packet, self.first_ns, self.time_format))
        self.out.write(f"<packet>\n{cells}</packet>\n\n")

    def close(self) -> None:
        if not self.started:
            self._start()
        self.out.write("</psml>\n")
