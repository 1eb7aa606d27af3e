"""How wire bytes become a string value: the way Wireshark's ENC_UTF_8 decoding does it, so the Python decoder
and the Lua plugin (which reads strings with TvbRange:string(ENC_UTF_8)) agree."""

_BAD_BYTES = {c: "\ufffd" for c in range(0xDC80, 0xDD00)}


def wire_string(raw: bytes) -> str:
    """UTF-8 where every byte that is not part of a complete valid sequence becomes one U+FFFD (Wireshark's rule,
    not Python's 'replace', which folds a bad sequence into one)."""
    s = raw.decode("utf-8", "surrogateescape")
    return s if s.isascii() else s.translate(_BAD_BYTES)
