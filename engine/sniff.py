"""What a buffer holds, from its first bytes: the image formats a game ships textures in (PNG, JPEG, GIF, BMP,
WebP, QOI, DDS, KTX2) with their dimensions, and glTF binary meshes. Twin: rt.sniff (lua/rt_sniff.lua)."""
from __future__ import annotations

import struct

SNIFF_LIMIT = 1 << 16         # sniffing looks at most at the first 64 KiB of a buffer


# Formats whose header holds the dimensions at fixed places: name, magic, width at, height at, size, byte order.
HEADERS = (
    ("PNG", b"\x89PNG\r\n\x1a\n", 16, 20, 4, ">"),          # the IHDR chunk comes first
    ("GIF", b"GIF87a", 6, 8, 2, "<"), ("GIF", b"GIF89a", 6, 8, 2, "<"),
    ("QOI", b"qoif", 4, 8, 4, ">"),
    ("DDS", b"DDS ", 16, 12, 4, "<"),
    ("KTX2", b"\xabKTX 20\xbb\r\n\x1a\n", 20, 24, 4, "<"),
)


def _u16be(b, i): return struct.unpack_from(">H", b, i)[0]


def _jpeg_size(b: bytes):
    """(width, height) from the first SOF marker, walking the marker segments."""
    pos, n, steps = 2, len(b), 0
    while pos + 4 <= n and steps < 1000:
        steps += 1
        if b[pos] != 0xFF:
            return None
        marker = b[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD9:
            pos += 2
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return (_u16be(b, pos + 7), _u16be(b, pos + 5)) if pos + 9 <= n else None
        pos += 2 + _u16be(b, pos + 2)
    return None


def sniff(b: bytes) -> tuple[str, int | None, int | None] | None:
    """The format of a buffer from its magic bytes, with the image dimensions where the header gives them."""
    for name, magic, w_at, h_at, size, order in HEADERS:
        if b.startswith(magic):
            if len(b) < max(w_at, h_at) + size:
                return (name, None, None)
            code = order + ("H" if size == 2 else "I")
            return (name, struct.unpack_from(code, b, w_at)[0], struct.unpack_from(code, b, h_at)[0])
    if b.startswith(b"\xff\xd8\xff"):
        size = _jpeg_size(b)
        return ("JPEG", *size) if size else ("JPEG", None, None)
    if b.startswith(b"BM") and len(b) >= 26 and struct.unpack_from("<I", b, 14)[0] >= 12:
        w, h = struct.unpack_from("<ii", b, 18)
        return ("BMP", abs(w), abs(h))
    if b.startswith(b"RIFF") and b[8:12] == b"WEBP":
        return _webp(b)
    if b.startswith(b"glTF"):
        return ("glTF binary", None, None)
    return None


def _webp(b: bytes):
    n, chunk = len(b), b[12:16]
    if chunk == b"VP8 " and n >= 30:
        return ("WebP", struct.unpack_from("<H", b, 26)[0] & 0x3FFF, struct.unpack_from("<H", b, 28)[0] & 0x3FFF)
    if chunk == b"VP8L" and n >= 25:
        b0, b1, b2, b3 = b[21:25]
        return ("WebP", 1 + (((b1 & 0x3F) << 8) | b0), 1 + (((b3 & 0x0F) << 10) | (b2 << 2) | ((b1 & 0xC0) >> 6)))
    if chunk == b"VP8X" and n >= 30:
        return ("WebP", 1 + (b[24] | b[25] << 8 | b[26] << 16), 1 + (b[27] | b[28] << 8 | b[29] << 16))
    return ("WebP", None, None)
