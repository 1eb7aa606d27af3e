"""How wire bytes become a string value, as Wireshark's ENC_UTF_8 decoding does it.

Measured on tshark 4.0.17 (add_packet_field with ENC_UTF_8 over 408 crafted and random byte strings): each
maximal ill-formed subpart becomes one U+FFFD, which is exactly Python's 'replace' error handler (Unicode's
recommended practice). The Lua runtime's rt.utf8 implements the same rule for the plugin's Info column.
"""


def wire_string(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")
