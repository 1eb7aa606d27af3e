"""File names for objects whose names come off the wire: never outside the export folder, whatever they say.

Wireshark's export-objects (ui/export_object_ui.c, eo_massage_str) percent-escapes every character that is not
safe in a file name; we do the same, and also refuse what a file system gives meaning to: "." and ".." (no name
starts with a dot), Windows device names (CON, NUL, COM1, ... with any extension), NUL and control bytes, and
names too long for one path component. Duplicates get " (1)", " (2)" before the extension, as Wireshark does.
"""
from __future__ import annotations

import os
import re

MAX_NAME = 160        # bytes of one file name (file systems allow 255; the suffixes we add need room)
SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+=,()[]@ ")
DEVICES = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$", re.IGNORECASE)


def massage(name: str | bytes, fallback: str = "object") -> str:
    """One safe path component for a name from the wire (str or bytes; bytes are read as UTF-8 where valid)."""
    raw = name.encode("utf-8", "surrogateescape") if isinstance(name, str) else bytes(name)
    out = "".join(chr(b) if b in SAFE else f"%{b:02X}" for b in raw).strip(" ")
    if out.startswith("."):
        out = "%2E" + out[1:]
    if not out:
        out = fallback
    if DEVICES.match(out):
        out = "_" + out
    if len(out) > MAX_NAME:
        stem, ext = os.path.splitext(out)
        ext = ext if len(ext) <= 16 else ""
        out = stem[:MAX_NAME - len(ext) - 1] + "~" + ext
    return out


class SafeFolder:
    """Writes files into one folder only: names massaged, duplicates numbered, opened exclusively (no existing
    file or symbolic link is followed or overwritten)."""

    def __init__(self, folder: str):
        os.makedirs(folder, exist_ok=True)
        self.folder = os.path.realpath(folder)
        self.used: set[str] = set()

    def unique(self, name: str) -> str:
        stem, ext = os.path.splitext(name)
        candidate, n = name, 0
        while candidate.lower() in self.used or os.path.lexists(os.path.join(self.folder, candidate)):
            n += 1
            candidate = f"{stem} ({n}){ext}"
        self.used.add(candidate.lower())
        return candidate

    def write(self, name: str | bytes, data: bytes, suffix: str = "") -> str:
        """Write `data` under a safe, unused form of `name` (+ `suffix`, already safe); the name written."""
        safe = self.unique(massage(name) + suffix)
        path = os.path.join(self.folder, safe)
        if os.path.dirname(os.path.realpath(path)) != self.folder:     # cannot happen: massage keeps no separator
            raise ValueError(f"refusing to write {safe!r} outside {self.folder}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(path, flags, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return safe
