"""How wire bytes become a string value, as Wireshark's ENC_UTF_8 decoding does it.

Measured on tshark 4.0.17 (add_packet_field with ENC_UTF_8 over 408 crafted and random byte strings): each
maximal ill-formed subpart becomes one U+FFFD, which is exactly Python's 'replace' error handler (Unicode's
recommended practice). The Lua runtime's rt.utf8 implements the same rule for the plugin's Info column.
"""
import math


def wire_string(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def format_text_string(raw: bytes) -> str:
    """Bytes as Wireshark 4.0's format_text decodes them for a text line (proto_tree_add_format_text: HTTP's and
    Line-based text data's lines), measured on tshark 4.0.17. Not the ENC_UTF_8 rule above: a lead byte takes up
    to its sequence's length of continuation bytes (5- and 6-byte leads too), a sequence cut short by another byte
    is one U+FFFD, a whole one is decoded without the overlong check (C0 AF is "/"), and a surrogate or a value
    past U+10FFFF is one U+FFFD; a stray continuation byte, FE or FF is one U+FFFD each."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out, i, n = [], 0, len(raw)
    while i < n:
        c = raw[i]
        if c < 0x80:
            out.append(chr(c))
            i += 1
            continue
        size = 2 if 0xC0 <= c < 0xE0 else 3 if c < 0xF0 else 4 if c < 0xF8 else 5 if c < 0xFC else 6 if c < 0xFE \
            else 0
        if c < 0xC0 or not size:            # a continuation byte with no lead, or FE / FF
            out.append("\ufffd")
            i += 1
            continue
        value, j = c & (0x7F >> size), i + 1
        while j < n and j < i + size and 0x80 <= raw[j] < 0xC0:
            value = value << 6 | raw[j] & 0x3F
            j += 1
        whole = j == i + size and size <= 4 and value <= 0x10FFFF and not 0xD800 <= value < 0xE000
        out.append(chr(value) if whole else "\ufffd")
        i = j
    return "".join(out)


FORMAT_TEXT_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}


def format_text(raw: bytes) -> str:
    """A text line as tshark labels it (format_text): decoded by format_text_string, control characters escaped,
    those without a letter and DEL in octal (\\017)."""
    return "".join(FORMAT_TEXT_ESCAPES.get(ord(c), f"\\{ord(c):03o}") if ord(c) < 32 or c == "\x7f" else c
                   for c in format_text_string(raw))


def ascii_string(raw: bytes) -> str:
    """A string field added with ENC_ASCII (HTTP's header values): each byte past 0x7F is one U+FFFD."""
    return raw.decode("ascii", "replace")


def c_string(text: str) -> str:
    """A text as Wireshark keeps it where it takes a C string (an item's label, the Info column, an expert's
    message): up to its first NUL."""
    return text.partition("\0")[0] if "\0" in text else text


TRAILING_STRAY = "_ws.string.trailing_stray_characters"     # that check's expert (its group Undecoded, Warning)


def stray_after_nul(raw: bytes) -> bool:
    """Wireshark's own "Trailing stray characters" check on a string item added with ENC_UTF_8 (proto.c,
    detect_trailing_stray_characters): in the decoded text, a non-NUL byte between its first NUL and the item's
    length in wire bytes."""
    if b"\0" not in raw:
        return False
    text = wire_string(raw).encode("utf-8")
    return any(text[text.index(b"\0"):len(raw)].strip(b"\0"))


def g6(x: float) -> str:
    """C's "%.6g" (the plugin's string.format): as Python's, except that a NaN keeps its sign ("-nan")."""
    if x != x:
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%.6g" % x
