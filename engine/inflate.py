"""zlib inflate with a cap, for every block that reassembles a compressed buffer (chunk transfers, file
transfers), and the deflate block walk. Their plugin twins are in lua/rt_inflate.lua: rt.inflate_strict (the same
cap, the same refusals) and rt.deflate_walk (`deflate_walk` below, line for line).

The walk answers what zlib's API does not tell: where a raw deflate stream stands when its input runs out
(permessage-deflate, dissectors/websocket.py): after a final block, between two blocks on a byte boundary, or
inside a block. zlib's own inflate makes the bytes; the walk only decodes the symbols and counts, with the limits
of its Lua twin (the output cap, the window a distance may reach). Hand-written because no library exposes the
block structure of a deflate stream (zlib's Z_BLOCK flush is not in Python's binding). Python asks zlib first
(`zlib_stands`: "final" or "clean" from zlib's own state, the walk's answer wherever it gives one) and walks only
what is left, a message that ended inside a block; the plugin, with no zlib, always walks.
"""
from __future__ import annotations

import zlib


def inflate(data: bytes, limit: int, ctx=None, name: str = "") -> bytes | None:
    """zlib-inflate at most `limit` bytes; None when the stream is corrupt, incomplete or too large. With `ctx`,
    an inflated stream's own bytes become the data source "NAME (zlib)" first, as the plugin's rt.inflate_strict
    makes a tvb of the stream before uncompressing it (tshark -x shows it)."""
    z = zlib.decompressobj()
    try:
        out = z.decompress(data, limit + 1)
    except zlib.error as exc:
        if ctx is not None and "incorrect data check" in str(exc):
            _unchecked_source(data, limit, ctx, name)
        return None
    if len(out) > limit or not z.eof:
        return None
    if ctx is not None:
        ctx.new_source(f"{name} (zlib)", data[:len(data) - len(z.unused_data)])
    return out


def _unchecked_source(data: bytes, limit: int, ctx, name: str) -> None:
    """A stream whose only fault is its Adler-32: the plugin has made its "NAME (zlib)" tvb by the time it finds
    that out (rt.inflate_strict checks after uncompressing), so the source is there too (none for an empty
    output, which the plugin makes no tvb for)."""
    raw = zlib.decompressobj(-15)
    try:
        out = raw.decompress(data[2:], limit + 1)
    except zlib.error:
        return
    if out and len(out) <= limit and raw.eof and len(raw.unused_data) >= 4:
        ctx.new_source(f"{name} (zlib)", data[:len(data) - len(raw.unused_data) + 4])


class InflateError(ValueError):
    """A rule of RFC 1951 broken (zlib's wording), or the output over the walk's limit ("over the limit")."""


class _EndOfInput(Exception):
    pass


FAST = 9                      # bits of the look-up tables (as rt_inflate.lua)
LBASE = (3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227,
         258)
LEXTRA = (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0)
DBASE = (1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
         6145, 8193, 12289, 16385, 24577)
DEXTRA = (0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13)
ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
REVERSED = [int(f"{i:0{FAST}b}"[::-1], 2) for i in range(1 << FAST)]     # FAST-bit numbers, bits reversed


class _Code:
    """A canonical Huffman code (puff.c's count/symbol form) plus a table of the codes of up to FAST bits, indexed
    by their bits as they come off the stream."""

    __slots__ = ("count", "symbol", "fast")

    def __init__(self, lengths: list[int], kind: str):
        order = sorted((n, s) for s, n in enumerate(lengths) if n)     # the canonical order: by length, then symbol
        count = [0] * 16
        for n, _ in order:
            count[n] += 1
        left = 1
        for n in range(1, 16):
            left = left * 2 - count[n]
            if left < 0:
                raise InflateError(f"invalid {kind} code (over-subscribed)")
        if order and left > 0 and (kind == "code lengths" or order[-1][0] != 1):
            raise InflateError(f"invalid {kind} code (incomplete)")
        fast: list = [None] * (1 << FAST)
        code, prev = 0, order[0][0] if order else 0
        for n, s in order:            # canonical codes in that order: +1 each, shifted left at a longer length
            if n != prev:
                code <<= n - prev
                prev = n
            if n <= FAST:             # its bits reversed (sent first bit first), at every FAST-bit index it starts
                fast[REVERSED[code] >> (FAST - n)::1 << n] = [(s, n)] * (1 << (FAST - n))
            code += 1
        self.count, self.symbol, self.fast = count, [s for _, s in order], fast


def _fixed() -> tuple[_Code, _Code]:
    lengths = [8] * 144 + [9] * 112 + [7] * 24 + [8] * 8
    return _Code(lengths, "literal/length"), _Code([5] * 32, "distance")   # 30, 31 complete it, never valid


FIXED_L, FIXED_D = _fixed()


# The smallest whole deflate stream: a final block of fixed codes holding only its end-of-block code (3 bits of
# header and 7 of code, padded to two bytes).
EMPTY_FINAL_BLOCK = b"\x03\x00"


def zlib_stands(z) -> str | None:
    """Where a raw-deflate zlib decompressor stands once it has taken all its input without an error, when zlib
    can tell it at no cost: "final" after a final block, "clean" between two blocks on a byte boundary; None for
    inside a block (or a block header), where only deflate_walk tells it apart from what the plugin refuses.

    Wherever this answers, deflate_walk on the same input answers the same (tests/test_inflate_walk.py): the walk
    refuses what zlib refuses (the same code, length and distance rules), so over blocks zlib has ended it raises
    nothing, and it ends where zlib ends (given the walk's window is zlib's 32 KiB, as permessage-deflate's, and
    the caller has checked the output against the walk's limit). Between two blocks on a byte boundary, and only
    there, an empty final block taken on a copy of `z` ends the stream without output: from inside a block, its
    bits are codes or a header whose block needs more input (the only bits set in it are the first two).
    permessage-deflate ends nearly every message so (its 00 00 ff ff is an empty stored block), which spares the
    walk's per-symbol loop."""
    if z.eof:
        return "final"
    probe = z.copy()
    try:
        ended = probe.decompress(EMPTY_FINAL_BLOCK) == b"" and probe.eof and not probe.unused_data
    except zlib.error:
        return None
    return "clean" if ended else None


def deflate_walk(s: bytes, at: int, limit: int, history: int, wsize: int, resumable: bool):
    """Walk the raw deflate data of `s` from offset `at`; InflateError on a rule broken or more than `limit` bytes
    of output. `history`: bytes of output before this data a distance may reach (at most `wsize`). Returns
    (output size, offset of the first byte after the stream, "final", True); with `resumable`, input running out
    is no error: then (output so far, None, "eof", clean), clean when the data ended between two blocks on a byte
    boundary (a new walk can start at the next byte). rt.deflate_walk in lua/rt_inflate.lua, its twin."""
    n = len(s)
    st = [at, 0, 0, 0, False]        # pos, bit buffer, bits in it, output, at a block header

    def short():
        if resumable:
            raise _EndOfInput
        raise InflateError("stream ends early")

    def bits(k: int) -> int:
        pos, buf, nb = st[0], st[1], st[2]
        while nb < k:
            if pos >= n:
                st[0], st[1], st[2] = pos, buf, nb
                short()
            buf |= s[pos] << nb
            pos += 1
            nb += 8
        st[0], st[1], st[2] = pos, buf >> k, nb - k
        return buf & ((1 << k) - 1)

    def decode(h: _Code) -> int:
        pos, buf, nb = st[0], st[1], st[2]
        while nb < FAST and pos < n:
            buf |= s[pos] << nb
            pos += 1
            nb += 8
        hit = h.fast[buf & ((1 << FAST) - 1)]
        if hit is not None and hit[1] <= nb:
            st[0], st[1], st[2] = pos, buf >> hit[1], nb - hit[1]
            return hit[0]
        st[0], st[1], st[2] = pos, buf, nb
        code = first = index = 0                  # a longer code (or too few bits): puff.c's way
        count, symbol = h.count, h.symbol
        for length in range(1, 16):
            code |= bits(1)
            c = count[length]
            if code - c < first:
                return symbol[index + code - first]
            index += c
            first = (first + c) * 2
            code *= 2
        raise InflateError("invalid code")

    def dynamic() -> tuple[_Code, _Code]:
        nlen, ndist, ncode = bits(5) + 257, bits(5) + 1, bits(4) + 4
        if nlen > 286 or ndist > 30:
            raise InflateError("too many length or distance symbols")
        cl = [0] * 19
        for i in range(ncode):
            cl[ORDER[i]] = bits(3)
        lencode = _Code(cl, "code lengths")
        lengths: list[int] = []
        while len(lengths) < nlen + ndist:
            sym = decode(lencode)
            if sym < 16:
                lengths.append(sym)
                continue
            if sym == 16:
                if not lengths:
                    raise InflateError("invalid bit length repeat")
                value, rep = lengths[-1], 3 + bits(2)
            elif sym == 17:
                value, rep = 0, 3 + bits(3)
            else:
                value, rep = 0, 11 + bits(7)
            if len(lengths) + rep > nlen + ndist:
                raise InflateError("invalid bit length repeat")
            lengths += [value] * rep
        if lengths[256] == 0:
            raise InflateError("invalid code -- missing end-of-block")
        return _Code(lengths[:nlen], "literal/length"), _Code(lengths[nlen:], "distance")

    def codes(lit: _Code, dist: _Code) -> None:
        reach = min(history, wsize)
        fast, mask = lit.fast, (1 << FAST) - 1
        pos, buf, nb, out = st[0], st[1], st[2], st[3]
        while True:
            while nb < FAST and pos < n:          # decode(lit)'s fast path, inlined, on local state
                buf |= s[pos] << nb
                pos += 1
                nb += 8
            hit = fast[buf & mask]
            if hit is not None and hit[1] <= nb:
                sym, k = hit
                buf >>= k
                nb -= k
                if sym < 256:
                    out += 1
                    if out > limit:
                        raise InflateError("over the limit")
                    continue
            else:
                st[0], st[1], st[2], st[3] = pos, buf, nb, out
                sym = decode(lit)
                pos, buf, nb = st[0], st[1], st[2]
                if sym < 256:
                    out += 1
                    if out > limit:
                        raise InflateError("over the limit")
                    continue
            if sym == 256:
                break
            st[0], st[1], st[2], st[3] = pos, buf, nb, out    # bits() and decode() work on the shared state
            sym -= 257
            if sym >= 29:
                raise InflateError("invalid literal/length code")
            length = LBASE[sym] + (bits(LEXTRA[sym]) if LEXTRA[sym] else 0)
            d = decode(dist)
            if d >= 30:
                raise InflateError("invalid distance code")
            back = DBASE[d] + (bits(DEXTRA[d]) if DEXTRA[d] else 0)
            if back > out + reach or back > wsize:
                raise InflateError("invalid distance too far back")
            out += length
            if out > limit:
                raise InflateError("over the limit")
            pos, buf, nb = st[0], st[1], st[2]
        st[0], st[1], st[2], st[3] = pos, buf, nb, out

    def blocks() -> None:
        while True:
            st[4] = True
            head = bits(3)            # all three at once: input running out here has consumed none of them
            st[4] = False
            final, btype = head & 1, head >> 1
            if btype == 0:
                pos = st[0] - st[2] // 8          # to a byte boundary; whole bytes read ahead go back
                st[1] = st[2] = 0
                if pos + 4 > n:
                    st[0] = pos
                    short()
                length, nlength = s[pos] | s[pos + 1] << 8, s[pos + 2] | s[pos + 3] << 8
                if length + nlength != 65535:
                    raise InflateError("invalid stored block lengths")
                pos += 4
                if pos + length > n:
                    st[0] = pos
                    if resumable:
                        st[3] += n - pos
                    short()
                st[0] = pos + length
                st[3] += length
                if st[3] > limit:
                    raise InflateError("over the limit")
            elif btype == 3:
                raise InflateError("invalid block type")
            else:
                codes(*(dynamic() if btype == 2 else (FIXED_L, FIXED_D)))
            if final:
                return

    try:
        blocks()
    except _EndOfInput:
        return st[3], None, "eof", st[4] and st[2] == 0 and st[0] >= n
    finally:
        # compiled (api/hot_path.py), the inner functions share one closure scope that holds them all: a cycle the
        # read loop's collector (off) would keep; unbound here, so the walk leaves no garbage either way
        short = bits = decode = dynamic = codes = blocks = None  # noqa: F841
    return st[3], st[0] - st[2] // 8, "final", True
