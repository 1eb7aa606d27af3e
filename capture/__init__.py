"""Capture input -> link / network / transport decode.

    for frame in open_capture(path):       # RawFrame; CaptureError on a bad file
        d = decode(frame)                  # Decoded: addresses, ports, payload; never raises
        d.layers()                         # engine.tree Layers, built only when asked
"""
from .decode import Decoded, decode
from .files import Capture, CaptureError, RawFrame, open_capture

__all__ = ["Capture", "CaptureError", "Decoded", "RawFrame", "decode", "open_capture"]
