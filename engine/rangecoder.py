"""libenet's range coder (compress.c, 1.3.x): an adaptive order-2 PPM model driving a carry-less range coder.

ENet compresses each datagram on its own (the model restarts every time) and ends it with an escape from the
order-0 context rather than a length. This is a bit-exact re-implementation, checked against libenet itself
(tests/test_rangecoder.py calls Debian's libenet7 through ctypes), including what libenet does with garbage:
corrupt input drives the decoder through wrapped C integers (the uint32 coder state, the uint16 `code` read from
it, the uint8 value of a new symbol), and we must take the same path, so those are masked to their C widths.

The Lua twin is lua/rt_rangecoder.lua (rt.range_decompress); keep the two in step.

libenet signals failure by returning 0 bytes: for a symbol missing from an order-1/2 context, for output that
would pass the caller's limit (it never truncates), and for a stream that ends before its first byte.
`decompress` raises RangeCoderError in each case instead. libenet's normalisation loop would spin forever if
the range ever shifted out to 0; that needs low + range to pass 2^32 with equal top bytes, and the only decode
that can push low + range past 2^32 (a corrupt order-0 one) leaves range < 2^24, so the top bytes differ. The
Python and Lua decoders check for a 0 range anyway, so that no input can hang them (libenet relies on the above).

ENet decompresses a datagram into a 4096-byte buffer (ENET_PROTOCOL_MAXIMUM_MTU) after its header: a receiver's
`limit` is RECEIVE_BUFFER minus the header (2 or 4 bytes, plus 4 with checksums on).

Why libenet itself runs when it can: this decoder is one adaptive-model update and one range-coder step per output
byte, and even flattened into one loop over parallel lists CPython does about 1 MB/s, some 25 to 35x slower than
libenet's C (tools/bench_rangecoder.py; docs/benchmarks.md, "The range decoder"). A well-kept library already does
the job, bit for bit: when the system has libenet (Debian's libenet7), `decompress` calls its
enet_range_coder_decompress through ctypes, and `decompress_python` (the code below) is the fallback when it is
missing (or PROTODUMP_RANGECODER=python). The two give the same bytes and the same errors on every input: libenet's
only answer to a failure is 0 bytes, so on a failure, and for what libenet cannot be asked (a limit above
RECEIVE_BUFFER, a limit that is not a positive int), `decompress` runs the Python decoder, which says why
(tests/test_rangecoder.py runs both paths on the same inputs). The Python decoder stays the reference and the twin
of the Lua one.
"""
from __future__ import annotations

import ctypes
import os
import threading

__all__ = ["RECEIVE_BUFFER", "RangeCoderError", "compress", "decompress", "decompress_python", "load_libenet"]

TOP = 1 << 24  # ENET_RANGE_CODER_TOP
BOTTOM = 1 << 16  # ENET_RANGE_CODER_BOTTOM
M32 = 0xFFFFFFFF
RECEIVE_BUFFER = 4096  # ENET_PROTOCOL_MAXIMUM_MTU: libenet's buffer for a decompressed datagram, header included
SYMBOLS = 4096  # symbols in libenet's ENetRangeCoder: the model restarts when (nearly) all are used
ORDER = 2  # ENET_SUBCONTEXT_ORDER
ROOT_DELTA, ROOT_MIN, ESC_MIN = 3, 1, 1  # ENET_CONTEXT_SYMBOL_DELTA / _SYMBOL_MINIMUM / _ESCAPE_MINIMUM
SUB_DELTA, SUB_ESC_DELTA = 2, 5  # ENET_SUBCONTEXT_SYMBOL_DELTA / _ESCAPE_DELTA
RESCALE_TOTAL = BOTTOM - 0x100  # a context's total above this halves its counts
SUB_RESCALE_COUNT = 0xFF - 2 * SUB_DELTA
ROOT_RESCALE_COUNT = 0xFF - 2 * ROOT_DELTA + ROOT_MIN


class RangeCoderError(ValueError):
    """Input libenet's decoder rejects (it returns 0)."""


class _Model:
    """The symbol pool of ENetRangeCoder as parallel lists (one per ENetSymbol member), indexed like
    `rangeCoder->symbols`. A symbol is both a node of its context's binary tree (value, count, under = count plus
    the left subtree's counts, left/right children) and the context of the next order (symbols = its tree's root,
    escapes, total, parent = the context one order lower). Children always have higher indexes than their parent
    (symbols are only appended), so we store absolute indexes where libenet stores offsets; 0 still means none.
    The lists start small and grow in place (most datagrams use a few hundred of libenet's 4096 symbols)."""

    __slots__ = ("count", "escapes", "left", "next", "parent", "right", "symbols", "total", "under", "value")

    def __init__(self, size: int = 256):
        self.value, self.count, self.under = [0] * size, [0] * size, [0] * size
        self.left, self.right, self.symbols = [0] * size, [0] * size, [0] * size
        self.escapes, self.total, self.parent = [0] * size, [0] * size, [0] * size
        self.restart()

    def lists(self) -> tuple[list[int], ...]:
        return (self.value, self.count, self.under, self.left, self.right, self.symbols, self.escapes, self.total,
                self.parent)

    def grow(self):
        """Double every list in place (callers hold references to them)."""
        for lst in self.lists():
            lst.extend([0] * len(lst))

    def restart(self):
        """ENET_CONTEXT_CREATE of the root at symbol 0 (also ENET_RANGE_CODER_FREE_SYMBOLS)."""
        self.next = 0
        self.create(0, 0)
        self.escapes[0] = ESC_MIN
        self.total[0] = ESC_MIN + 256 * ROOT_MIN

    def create(self, value: int, count: int) -> int:
        """ENET_SYMBOL_CREATE: the next free symbol."""
        s = self.next
        if s >= len(self.value):
            self.grow()
        self.next = s + 1
        self.value[s] = value
        self.count[s] = self.under[s] = count
        self.left[s] = self.right[s] = self.symbols[s] = self.escapes[s] = self.total[s] = self.parent[s] = 0
        return s

    def encode(self, ctx: int, value: int, update: int, minimum: int) -> tuple[int, int, int]:
        """ENET_CONTEXT_ENCODE: find or add `value` in context `ctx`, bump its count; return (symbol, under,
        count) where under/count are its cumulative frequency and frequency before the bump (count 0: new)."""
        under, count = value * minimum, minimum
        node = self.symbols[ctx]
        if not node:
            s = self.create(value, update)
            self.symbols[ctx] = s
            return s, under, count
        values, unders, lefts, rights = self.value, self.under, self.left, self.right
        while True:
            v = values[node]
            if value < v:
                unders[node] = (unders[node] + update) & 0xFFFF
                if lefts[node]:
                    node = lefts[node]
                    continue
                s = lefts[node] = self.create(value, update)
                return s, under, count
            if value > v:
                under = (under + unders[node]) & 0xFFFF
                if rights[node]:
                    node = rights[node]
                    continue
                s = rights[node] = self.create(value, update)
                return s, under, count
            c = self.count[node]
            count += c
            under = (under + unders[node] - c) & 0xFFFF
            unders[node] = (unders[node] + update) & 0xFFFF
            self.count[node] = (c + update) & 0xFF
            return node, under, count

    def bump(self, ctx: int, count: int, update: int, minimum: int, limit: int):
        """Add a symbol's delta to the context total; ENET_CONTEXT_RESCALE when a count or the total grew too big."""
        total = self.total[ctx] = (self.total[ctx] + update) & 0xFFFF
        if count > limit or total > RESCALE_TOTAL:
            self.rescale(ctx, minimum)

    def rescale(self, ctx: int, minimum: int):
        """ENET_CONTEXT_RESCALE: halve every count (rounding up) and the escapes, recompute unders and total.
        libenet recurses on left children; a tree can be deep on garbage input, so this walks it with a stack:
        under = own count + all counts of the left subtree, the total = all counts of the tree (both mod 2^16)."""
        total = 0
        root = self.symbols[ctx]
        if root:
            counts, lefts, rights, unders = self.count, self.left, self.right, self.under
            order, stack = [], [root]
            while stack:
                node = stack.pop()
                order.append(node)
                counts[node] -= counts[node] >> 1
                if lefts[node]:
                    stack.append(lefts[node])
                if rights[node]:
                    stack.append(rights[node])
            sums = {}
            for node in reversed(order):  # children before parents
                left = sums[lefts[node]] if lefts[node] else 0
                right = sums[rights[node]] if rights[node] else 0
                unders[node] = (counts[node] + left) & 0xFFFF
                sums[node] = counts[node] + left + right
            total = sums[root]
        e = self.escapes[ctx]
        e -= e >> 1
        self.escapes[ctx] = e
        self.total[ctx] = (total + e + 256 * minimum) & 0xFFFF


class ENetBuffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dataLength", ctypes.c_size_t)]


def load_libenet():
    """libenet (Debian's libenet7) with the range coder's prototypes, or None."""
    for name in ("libenet.so.7", None):
        if name is None:           # ctypes.util only then (it imports subprocess: start-up time)
            from ctypes.util import find_library
            name = find_library("enet")
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            lib.enet_range_coder_create.restype = ctypes.c_void_p
        except (OSError, AttributeError):
            continue
        lib.enet_range_coder_destroy.argtypes = [ctypes.c_void_p]
        lib.enet_range_coder_compress.argtypes = [ctypes.c_void_p, ctypes.POINTER(ENetBuffer), ctypes.c_size_t,
                                                  ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
        lib.enet_range_coder_compress.restype = ctypes.c_size_t
        lib.enet_range_coder_decompress.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                                    ctypes.c_char_p, ctypes.c_size_t]
        lib.enet_range_coder_decompress.restype = ctypes.c_size_t
        return lib
    return None


def _libenet_decoder():
    """A function (data: bytes, limit: 1..RECEIVE_BUFFER) -> libenet's output (b"" for its failure), or None when
    libenet is missing or PROTODUMP_RANGECODER=python. A coder holds libenet's model (and ctypes drops the GIL
    during the call), so each thread gets its own coder and output buffer."""
    if os.environ.get("PROTODUMP_RANGECODER") == "python":
        return None
    lib = load_libenet()
    if lib is None:
        return None
    run, create, destroy = lib.enet_range_coder_decompress, lib.enet_range_coder_create, lib.enet_range_coder_destroy
    local = threading.local()

    class Coder:
        __slots__ = ("ctx", "out")

        def __init__(self):
            self.ctx = create()
            if not self.ctx:
                raise MemoryError("enet_range_coder_create failed")
            self.out = ctypes.create_string_buffer(RECEIVE_BUFFER)

        def __del__(self):
            destroy(self.ctx)

    def decode(data: bytes, limit: int) -> bytes:
        try:
            coder = local.coder
        except AttributeError:
            coder = local.coder = Coder()
        out = coder.out
        return out[:run(coder.ctx, data, len(data), out, limit)]

    return decode


_native = None  # the libenet decoder once looked for (False: not there)


def decompress(data: bytes, limit: int) -> bytes:
    """enet_range_coder_decompress(data, len(data), out, limit): the decoded bytes, or RangeCoderError where
    libenet returns 0. Output never exceeds `limit` bytes: more is an error, as in libenet. libenet's own decoder
    when the system has it, else (and for any failure, to say why) decompress_python: see the module docstring."""
    global _native
    native = _native
    if native is None:
        native = _native = _libenet_decoder() or False
    if native and type(limit) is int and limit > 0 and data:
        out = native(data if type(data) is bytes else bytes(data), min(limit, RECEIVE_BUFFER))
        if out:
            return out
    return decompress_python(data, limit)


def decompress_python(data: bytes, limit: int) -> bytes:
    """enet_range_coder_decompress(data, len(data), out, limit) in Python: the decoded bytes, or RangeCoderError
    where libenet returns 0. Output never exceeds `limit` bytes: more is an error, as in libenet.

    One long function on purpose, shaped for CPython's speed: libenet's macros (ENET_CONTEXT_TRY_DECODE / _ROOT_
    DECODE / _ENCODE, ENET_SYMBOL_CREATE, the total bumps) are inlined, as a call per symbol halves the speed;
    constants are literals; the coder is normalised before each READ rather than after each DECODE (nothing in
    between uses it), with a cheap test first; the output limit bounds the symbol loop.

    The model's uint16/uint8 members are not masked here, because they provably never wrap: a context's total
    is escapes + its counts (+ 256 in the order-0 context), is rescaled as soon as it passes 65280, and bounds
    every `under` and `after`; a count is rescaled as soon as it passes 251. What does wrap on garbage is masked
    (only when it does: a test is cheaper than a mask on CPython's 2-digit ints): the uint32 coder state, the
    uint16 `code` read from it and the uint8 value of a new order-0 symbol. range * count needs no mask: a
    context's total is the sum of its escapes and counts (plus the minimums), so count <= total and the product is
    at most the range before READ divided it."""
    n = len(data)
    if n <= 0:
        raise RangeCoderError("no compressed data")
    m = _Model()
    values, counts, unders, lefts, rights, symbols, escapes, totals, parents = m.lists()
    nxt = m.next
    # A symbol creates at most 3 symbols (order 0, 1, 2): the lists grow, or the model restarts, between symbols.
    bound = min(len(values) - 3, SYMBOLS - ORDER)
    # ENET_RANGE_CODER_SEED: the first four bytes (missing ones read as 0). `code` is libenet's decodeCode minus
    # decodeLow (mod 2^32), the number ENET_RANGE_CODER_READ divides: kept as such, it is updated like both.
    code = int.from_bytes(bytes(data[:4]).ljust(4, b"\0"), "big")
    pos, low, rng = min(4, n), 0, 0xFFFFFFFF
    data = bytes(data) + b"\0"  # one sentinel 0: reads past the end give 0, as libenet's guarded reads do
    out = []
    predicted = order = 0

    # One symbol per turn; limit + 1 turns: the last one's symbol would pass the limit (its end escape would not).
    for _ in range(max(limit, 0) + 1):
        # Escape down from the order-2/1 contexts (sub > 0) until one holds the symbol; an escape from the order-0
        # context (sub = 0) ends the data.
        sub = predicted
        while True:
            if sub:
                e = escapes[sub]
                total = totals[sub]
                if e <= 0 or e >= total:
                    sub = parents[sub]
                    continue
            else:
                e = escapes[0]
                total = totals[0]
            # ENET_RANGE_CODER_NORMALIZE of the previous DECODE, done here, before the READ that needs it (the
            # seed needs none): shift out settled top bytes (and, below 2^16, cut the range to the next 2^16
            # boundary of low). A range >= 2^24 without a carry out of low + range settles it at once.
            while rng < 0x1000000 or low + rng > 0xFFFFFFFF:
                if (low ^ ((low + rng) & 0xFFFFFFFF)) >= 0x1000000:
                    if rng >= 0x10000:
                        break
                    rng = -low & 0xFFFF
                code = ((code << 8) & 0xFFFFFFFF) | data[pos]
                if pos < n:
                    pos += 1
                rng = (rng << 8) & 0xFFFFFFFF
                low = (low << 8) & 0xFFFFFFFF
                if not rng:  # unreachable by the argument in the module docstring; a guard against spinning
                    raise RangeCoderError("range coder state collapsed")
            rng //= total  # ENET_RANGE_CODER_READ
            c = code // rng
            if c > 0xFFFF:
                c &= 0xFFFF
            if c < e:  # ENET_RANGE_CODER_DECODE(0, escapes, total)
                if not sub:
                    if not out:
                        raise RangeCoderError("no data before the end symbol")
                    return bytes(out)
                rng *= e
                sub = parents[sub]
                continue
            if sub:
                # ENET_CONTEXT_TRY_DECODE, minimum 0: a symbol not in the tree is an error. `under` starts at the
                # escapes, so `after - count` is the symbol's place in the whole context.
                under = e
                node = symbols[sub]
                if not node:
                    raise RangeCoderError("symbol missing from an empty context")
                while True:
                    u = unders[node]
                    after = under + u
                    if c >= after:
                        under = after
                        node = rights[node]
                    else:
                        count = counts[node]
                        if c >= after - count:
                            break
                        unders[node] = u + 2
                        node = lefts[node]
                    if not node:
                        raise RangeCoderError("symbol missing from a context")
                value = values[node]
                unders[node] = u + 2
                counts[node] = count + 2
                under = (after - count) * rng  # ENET_RANGE_CODER_DECODE(escapes + under, count, total)
                t = totals[sub] = total + 2
                if count > 251 or t > 65280:
                    m.rescale(sub, 0)
            else:
                # ENET_CONTEXT_ROOT_DECODE, minimum 1: a value not in the tree is a new symbol.
                c -= e
                under, count = 0, 1
                node = symbols[0]
                while node:
                    u = unders[node]
                    v = values[node]
                    after = under + u + v + 1
                    if c >= after:
                        under += u
                        child = rights[node]
                        if child:
                            node = child
                            continue
                        value, under = (v + 1 + c - after) & 0xFF, c
                        rights[node] = nxt
                    else:
                        before = counts[node] + 1
                        unders[node] = u + 3
                        if c < after - before:
                            child = lefts[node]
                            if child:
                                node = child
                                continue
                            value, under = (v - after + before + c) & 0xFF, c
                            lefts[node] = nxt
                        else:
                            value, count = v, before
                            under = after - before
                            counts[node] = before + 2
                            break
                    node = 0  # a new symbol: created below
                    break
                else:
                    value, under = c & 0xFF, c
                    symbols[0] = nxt
                if not node:  # ENET_SYMBOL_CREATE (the links of a free symbol are 0 already)
                    node = nxt
                    nxt += 1
                    values[node] = value
                    counts[node] = unders[node] = 3
                under = (under + e) * rng  # ENET_RANGE_CODER_DECODE(escapes + under, count, total)
                t = totals[0] = total + 3
                if count > 250 or t > 65280:
                    m.rescale(0, 1)
            low += under
            if low > 0xFFFFFFFF:
                low &= 0xFFFFFFFF
            code -= under
            if code < 0:
                code &= 0xFFFFFFFF
            rng *= count
            break

        if predicted != sub:
            # patchContexts: teach the contexts we escaped from (ENET_CONTEXT_ENCODE, minimum 0); each one's symbol
            # becomes the context of the next order: `link` is where its index goes (-1: `predicted`).
            bottom = node
            link = -1
            patch = predicted
            while patch != sub:
                count = 0
                node = symbols[patch]
                if node:
                    while True:
                        v = values[node]
                        if value < v:
                            unders[node] += 2
                            child = lefts[node]
                            if child:
                                node = child
                                continue
                            lefts[node] = nxt
                        elif value > v:
                            child = rights[node]
                            if child:
                                node = child
                                continue
                            rights[node] = nxt
                        else:
                            count = counts[node]
                            unders[node] += 2
                            counts[node] = count + 2
                            break
                        node = 0
                        break
                else:
                    symbols[patch] = nxt
                if not node:
                    node = nxt
                    nxt += 1
                    values[node] = value
                    counts[node] = unders[node] = 2
                if link < 0:
                    predicted = node
                else:
                    parents[link] = node
                link = node
                if count <= 0:
                    escapes[patch] += 5
                    t = totals[patch] = totals[patch] + 7
                else:
                    t = totals[patch] = totals[patch] + 2
                if count > 251 or t > 65280:
                    m.rescale(patch, 0)
                patch = parents[patch]
            parents[link] = bottom
        else:
            predicted = node

        out.append(value)  # ENET_RANGE_CODER_OUTPUT
        if order >= 2:
            predicted = parents[predicted]
        else:
            order += 1
        if nxt >= bound:
            if nxt < SYMBOLS - ORDER:
                m.grow()
                bound = min(len(values) - 3, SYMBOLS - ORDER)
                continue
            # ENET_RANGE_CODER_FREE_SYMBOLS; free symbols' links must read 0
            for links in (lefts, rights, symbols, escapes, totals, parents):
                links[:nxt] = bytes(nxt)
            m.restart()
            nxt = m.next
            predicted = order = 0
    raise RangeCoderError(f"decompressed data longer than {limit} bytes")


def compress(data: bytes) -> bytes:
    """enet_range_coder_compress of one buffer with an unlimited output (libenet returns 0 for empty input; so
    do we, as b"")."""
    m = _Model()
    out = bytearray()
    low, rng = 0, M32
    predicted = order = 0
    escapes, totals, parents = m.escapes, m.total, m.parent

    def emit(under, count, total):
        nonlocal low, rng
        rng //= total
        low = (low + under * rng) & M32
        rng = (rng * count) & M32
        while True:
            if (low ^ ((low + rng) & M32)) >= TOP:
                if rng >= BOTTOM:
                    break
                rng = -low & (BOTTOM - 1)
            out.append(low >> 24)
            rng = (rng << 8) & M32
            low = (low << 8) & M32

    if not data:
        return b""
    for value in data:
        link = -1
        sub = predicted
        while sub:
            s, under, count = m.encode(sub, value, SUB_DELTA, 0)
            if link < 0:
                predicted = s
            else:
                parents[link] = s
            link = s
            total = totals[sub]
            if count > 0:
                emit(escapes[sub] + under, count, total)
            else:
                if 0 < escapes[sub] < total:
                    emit(0, escapes[sub], total)
                escapes[sub] = (escapes[sub] + SUB_ESC_DELTA) & 0xFFFF
                totals[sub] = (totals[sub] + SUB_ESC_DELTA) & 0xFFFF
            m.bump(sub, count, SUB_DELTA, 0, SUB_RESCALE_COUNT)
            if count > 0:
                break
            sub = parents[sub]
        else:
            s, under, count = m.encode(0, value, ROOT_DELTA, ROOT_MIN)
            if link < 0:
                predicted = s
            else:
                parents[link] = s
            emit(escapes[0] + under, count, totals[0])
            m.bump(0, count, ROOT_DELTA, ROOT_MIN, ROOT_RESCALE_COUNT)
        if order >= ORDER:
            predicted = parents[predicted]
        else:
            order += 1
        if m.next >= SYMBOLS - ORDER:
            m.restart()
            predicted = order = 0
    while low:  # ENET_RANGE_CODER_FLUSH
        out.append(low >> 24)
        low = (low << 8) & M32
    return bytes(out)
