"""zlib inflate with a cap, for every block that reassembles a compressed buffer (chunk transfers, file
transfers). Its plugin twin is rt.inflate_strict (lua/rt_inflate.lua): the same cap, the same refusals."""
from __future__ import annotations

import zlib


def inflate(data: bytes, limit: int, ctx=None, name: str = "") -> bytes | None:
    """zlib-inflate at most `limit` bytes; None when the stream is corrupt, incomplete or too large. With `ctx`,
    an inflated stream's own bytes become the data source "NAME (zlib)" first, as the plugin's rt.inflate_strict
    makes a tvb of the stream before uncompressing it (tshark -x shows it)."""
    z = zlib.decompressobj()
    try:
        out = z.decompress(data, limit + 1)
    except zlib.error:
        return None
    if len(out) > limit or not z.eof:
        return None
    if ctx is not None:
        ctx.new_source(f"{name} (zlib)", data[:len(data) - len(z.unused_data)])
    return out
