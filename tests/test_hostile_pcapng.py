"""pcapng blocks of a known type shorter than that type's minimum make the file damaged, as in tshark (wiretap's
pcapng.c): the error names the block and its offset; an unknown type of 12 bytes is skipped."""
from __future__ import annotations

import struct

import pytest

from protodump.capture.files import CaptureError, open_capture
from protodump.capture.pcapngfile import MIN_BLOCK


def block(btype: int, body: bytes) -> bytes:
    size = 12 + len(body)
    return struct.pack("<II", btype, size) + body + struct.pack("<I", size)


SHB = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
IDB = block(1, struct.pack("<HHI", 1, 0, 65535))
FRAME = bytes(60)
EPB = block(6, struct.pack("<IIIII", 0, 0, 0, len(FRAME), len(FRAME)) + FRAME)


def frames(path):
    with open_capture(path) as cap:
        return list(cap)


@pytest.mark.parametrize("btype", sorted(t for t in MIN_BLOCK if t != 0x0A0D0D0A), ids=hex)
def test_short_block_of_a_known_type_is_damage(tmp_path, btype, tshark_run):
    least, name = MIN_BLOCK[btype]
    path = tmp_path / "short.pcapng"
    size = (least - 1) // 4 * 4                      # the longest well-formed block short of the minimum
    short = block(btype, bytes(size - 12))
    path.write_bytes(SHB + IDB + EPB + short + EPB)
    with pytest.raises(CaptureError) as e:
        frames(path)
    assert e.value.offset == len(SHB + IDB + EPB)
    assert name in e.value.message and f"total length {size}" in e.value.message
    if btype not in (0x0000000A,):                   # tshark 4.0 reads a short DSB as cut short, not damaged
        run = tshark_run("-r", str(path))
        assert "appears to be damaged or corrupt" in run.stderr


def test_unknown_block_type_of_twelve_bytes_is_skipped(tmp_path):
    path = tmp_path / "unknown.pcapng"
    path.write_bytes(SHB + IDB + EPB + block(0x77, b"") + EPB)
    assert len(frames(path)) == 2
