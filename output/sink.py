"""A frame's output written as bytes, one layer's text at a time. CPython copies the UTF-8 of an ASCII text as it
is, but encodes a text holding one non-ASCII character (TCP's flags, "·······A····") character by character, at
about 1 ns each: a frame's whole text encoded at once (what a text stream does with it) costs that for every
character of every layer; its layers encoded one by one cost it only for the few layers that need it, and in a
templated layer only for its non-ASCII lines, which the -V and JSON writers give as texts of their own
(engine.template.positional_runs)."""
from __future__ import annotations

import os


def parts_writer(out):
    """A function that writes a list of texts to `out`'s byte buffer, each encoded on its own as `out` would
    encode it (a -j worker's collector, api/jobs_worker.py, takes the bytes as they are); None when `out` has no
    byte buffer (an in-memory text) or would translate newlines. What was written to `out` as text before goes first (flushed now)."""
    buffer = getattr(out, "buffer", None)
    if buffer is None or os.linesep != "\n" or not getattr(out, "encoding", None):
        return None
    out.flush()
    encoding, errors, write = out.encoding, out.errors or "strict", buffer.write

    def write_parts(parts: list) -> None:
        write(b"".join([part.encode(encoding, errors) for part in parts]))
    return write_parts
