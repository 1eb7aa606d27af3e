"""A strict JSON (RFC 8259) parser over bytes that keeps byte offsets, for showing JSON text as a subtree
(engine/blocks_text.JsonString). Its twin is rt.json_parse (lua/rt_json.lua): same algorithm, same limits, so both
stop at the same byte with the same message."""
from __future__ import annotations

import re

JSON_DEPTH = 32               # JSON nesting shown at most (deeper: a warning, no subtree)
JSON_VALUES = 1000            # JSON values shown at most per string


class JsonError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class JsonParser:
    """Nodes are (kind, start, end, children); an object's children are (key_start, key_end, value node)."""

    WS = b" \t\n\r"
    ESCAPES = b"\"\\/bfnrt"

    def __init__(self, raw: bytes):
        self.raw, self.n, self.count = raw, len(raw), 0

    def fail(self, pos: int):
        raise JsonError(f"invalid JSON at byte {pos}")

    def ws(self, pos: int) -> int:
        while pos < self.n and self.raw[pos] in self.WS:
            pos += 1
        return pos

    def parse(self):
        node, pos = self.value(self.ws(0), 1)
        pos = self.ws(pos)
        if pos != self.n:
            self.fail(pos)
        return node

    def value(self, pos: int, depth: int):
        self.count += 1
        if self.count > JSON_VALUES:
            raise JsonError(f"more than {JSON_VALUES} JSON values")
        if depth > JSON_DEPTH:
            raise JsonError(f"JSON nested deeper than {JSON_DEPTH}")
        if pos >= self.n:
            self.fail(pos)
        ch = self.raw[pos]
        if ch == 0x7B:
            return self.container(pos, depth, 0x7D, True)
        if ch == 0x5B:
            return self.container(pos, depth, 0x5D, False)
        if ch == 0x22:
            end = self.string(pos)
            return ("string", pos, end, None), end
        if ch == 0x2D or 0x30 <= ch <= 0x39:
            end = self.number(pos)
            return ("number", pos, end, None), end
        for word in (b"true", b"false", b"null"):
            if self.raw.startswith(word, pos):
                return (word.decode(), pos, pos + len(word), None), pos + len(word)
        self.fail(pos)

    def container(self, start: int, depth: int, close: int, is_object: bool):
        kids, pos = [], self.ws(start + 1)
        if pos < self.n and self.raw[pos] == close:
            return ("object" if is_object else "array", start, pos + 1, kids), pos + 1
        while True:
            if is_object:
                if pos >= self.n or self.raw[pos] != 0x22:
                    self.fail(pos)
                key_end = self.string(pos)
                colon = self.ws(key_end)
                if colon >= self.n or self.raw[colon] != 0x3A:
                    self.fail(colon)
                node, after = self.value(self.ws(colon + 1), depth + 1)
                kids.append((pos, key_end, node))
            else:
                node, after = self.value(pos, depth + 1)
                kids.append(node)
            pos = self.ws(after)
            if pos < self.n and self.raw[pos] == 0x2C:
                pos = self.ws(pos + 1)
                continue
            if pos < self.n and self.raw[pos] == close:
                return ("object" if is_object else "array", start, pos + 1, kids), pos + 1
            self.fail(pos)

    def string(self, pos: int) -> int:
        """The end (after the closing quote) of the string starting at pos."""
        raw, i = self.raw, pos + 1
        while i < self.n:
            c = raw[i]
            if c == 0x22:
                return i + 1
            if c == 0x5C:
                if i + 1 < self.n and raw[i + 1] in self.ESCAPES:
                    i += 2
                elif i + 1 < self.n and raw[i + 1] == 0x75 and re.fullmatch(rb"[0-9a-fA-F]{4}", raw[i + 2:i + 6]):
                    i += 6
                else:
                    self.fail(i)
            elif c < 0x20:
                self.fail(i)
            else:
                i += 1
        self.fail(self.n)

    def number(self, pos: int) -> int:
        raw, n, i = self.raw, self.n, pos

        def digits(i):
            while i < n and 0x30 <= raw[i] <= 0x39:
                i += 1
            return i

        if raw[i] == 0x2D:
            i += 1
        if i < n and raw[i] == 0x30:
            i += 1
        elif i < n and 0x31 <= raw[i] <= 0x39:
            i = digits(i)
        else:
            self.fail(i)
        if i < n and raw[i] == 0x2E:
            if not (i + 1 < n and 0x30 <= raw[i + 1] <= 0x39):
                self.fail(i + 1)
            i = digits(i + 1)
        if i < n and raw[i] in b"eE":
            i += 1
            if i < n and raw[i] in b"+-":
                i += 1
            if not (i < n and 0x30 <= raw[i] <= 0x39):
                self.fail(i)
            i = digits(i)
        return i
