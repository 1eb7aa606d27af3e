"""The display-filter tokenizer: a hand-written scanner over Wireshark 4.0's token classes.

Wireshark keeps "unparsed" words (field names, numbers, addresses, byte strings, value names) as one token class
and only decides what a word means once it knows the type of the field it is compared with; so do we.
"""
from __future__ import annotations

from dataclasses import dataclass


class FilterError(ValueError):
    """A filter that cannot be compiled: a message and the position (and length) of the culprit in the text."""

    def __init__(self, message: str, position: int | None = None, length: int = 1, echo: str = ""):
        super().__init__(message)
        self.message, self.position, self.length = message, position, max(length, 1)
        self.echo = echo        # what tshark's scanner echoes to stdout before the error (flex's default rule)

    def caret(self, text: str) -> str:
        """The filter, and under it a caret (and tildes) at the culprit, as tshark prints them."""
        if self.position is None:
            return ""
        return f"    {text}\n    {' ' * self.position}^{'~' * (self.length - 1)}"


@dataclass(frozen=True)
class Token:
    kind: str          # WORD STRING CHAR OP AND OR NOT IN CONTAINS MATCHES ( ) { } , .. + SLICE EOF
    text: str          # the source text (for a STRING: the decoded value; for an OP: the canonical operator)
    pos: int
    length: int
    ranges: tuple = ()  # SLICE: ((start, length-or-None, end-or-None), ...)


WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-/")
KEYWORDS = {"and": "AND", "or": "OR", "not": "NOT", "in": "IN", "contains": "CONTAINS", "matches": "MATCHES",
            "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "any_eq": "==",
            "all_ne": "!=", "any_ne": "~="}
SYMBOLS = [("&&", "AND"), ("||", "OR"), ("==", "=="), ("!=", "!="), ("~=", "~="), ("~", "MATCHES"), ("<=", "<="),
           (">=", ">="), ("+", "+"), ("*", "*"), ("%", "%"),
           ("..", ".."), ("<", "<"), (">", ">"), ("!", "NOT"), ("&", "&"), ("(", "("), (")", ")"), ("{", "{"),
           ("}", "}"), (",", ",")]
OPS = {"==", "!=", "~=", "<", "<=", ">", ">=", "&"}
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", '"': '"',
           "'": "'", "0": "\0"}


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == '"' or (c in "rR" and text.startswith('"', i + 1)):
            value, end = _string(text, i) if c == '"' else _raw_string(text, i)
            tokens.append(Token("STRING", value, i, end - i))
            i = end
        elif c == "'":
            value, end = _char(text, i)
            tokens.append(Token("CHAR", value, i, end - i))
            i = end
        elif c == "[":
            if not tokens or tokens[-1].kind != "WORD":
                raise FilterError('"[" was unexpected in this context.', i)
            ranges, end = _slice(text, i)
            tokens.append(Token("SLICE", text[i:end], i, end - i, ranges))
            i = end
        elif c in WORD_CHARS and not text.startswith("..", i):
            start = i
            while i < n and text[i] in WORD_CHARS and not text.startswith("..", i):
                i += 1
            word = text[start:i]
            kind = KEYWORDS.get(word)
            if kind is None:
                tokens.append(Token("WORD", word, start, i - start))
            elif kind in OPS:
                tokens.append(Token("OP", kind, start, i - start))
            else:
                tokens.append(Token(kind, word, start, i - start))
        else:
            for sym, kind in SYMBOLS:
                if text.startswith(sym, i):
                    tokens.append(Token("OP", kind, i, len(sym)) if kind in OPS else Token(kind, sym, i, len(sym)))
                    i += len(sym)
                    break
            else:
                raise FilterError(f'"{c}" was unexpected in this context.', i)
    tokens.append(Token("EOF", "", n, 1))
    return tokens


def _string(text: str, start: int) -> tuple[str, int]:
    """A "quoted string" with C escapes (\\n, \\xHH, \\ooo octal, \\uXXXX, \\UXXXXXXXX)."""
    out, i, n = [], start + 1, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:          # a backslash last: tshark 4.0 points at it, and its scanner echoes it
            raise FilterError("The final quote was missing from a quoted string.", i, echo="\\")
        e = text[i + 1]
        if e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            digits = ""
            while len(digits) < width and i + 2 + len(digits) < n and text[i + 2 + len(digits)] in _HEX:
                digits += text[i + 2 + len(digits)]
            if not digits or (e != "x" and len(digits) != width):
                raise FilterError(f"\\{e} escape without enough hexadecimal digits.", i, 2)
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise FilterError("Escape sequence out of the Unicode range.", i, 2 + len(digits))
            out.append(chr(code))
            i += 2 + len(digits)
        elif e in "01234567":
            digits = e
            while len(digits) < 3 and i + 1 + len(digits) < n and text[i + 1 + len(digits)] in "01234567":
                digits += text[i + 1 + len(digits)]
            out.append(chr(int(digits, 8)))
            i += 1 + len(digits)
        else:
            out.append(ESCAPES.get(e, e))
            i += 2
    raise FilterError("The final quote was missing from a quoted string.", n)


def _raw_string(text: str, start: int) -> tuple[str, int]:
    """A raw string r"..." (or R"..."): no escapes; a backslash keeps the next character, so \\" does not end it."""
    i, n = start + 2, len(text)
    while i < n:
        if text[i] == "\\":
            if i + 1 == n:      # a backslash last: tshark 4.0 points at it, and its scanner echoes it
                raise FilterError("The final quote was missing from a quoted string.", i, echo="\\")
            i += 2
        elif text[i] == '"':
            return text[start + 2:i], i + 1
        else:
            i += 1
    raise FilterError("The final quote was missing from a quoted string.", n)


# how tshark 4.0 shows a string token in a syntax error (wsutil's ws_escape_string: these escaped, the rest as is)
SHOWN_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                 "\\": "\\\\", '"': '\\"', "\0": "\\0"}


def shown_string(value: str) -> str:
    """A string token as a syntax error names it: in quotes, with C escapes (the error adds its own quotes)."""
    return '"' + "".join(SHOWN_ESCAPES.get(ch, ch) for ch in value) + '"'


def _char(text: str, start: int) -> tuple[str, int]:
    """A 'c' character constant (an integer, as in C)."""
    i = start + 1
    if i < len(text) and text[i] == "\\":
        value, end = _string('"' + text[i:i + 12].split("'", 1)[0] + '"', 0)
        end = i + end - 2
    else:
        value, end = text[i:i + 1], i + 1
    if end >= len(text) or text[end] != "'" or len(value) != 1:
        close = text.find("'", start + 1)
        raise FilterError(f"{text[start:close + 1] if close > 0 else text[start:]} is not a valid character "
                          f"constant.", start, (close + 1 - start) if close > 0 else len(text) - start)
    return value, end + 1


_HEX = frozenset("0123456789abcdefABCDEF")


def _slice(text: str, start: int) -> tuple[tuple, int]:
    """[i:j] (start, length), [i-j] (start, end inclusive), [i], [:j], [i:], comma separated; negative from end."""
    close = text.find("]", start)
    if close < 0:
        raise FilterError('"[" without a closing "]".', start)
    body = text[start + 1:close]
    ranges = []
    for part in body.split(","):
        p = part.strip()
        at = start + 1 + body.find(part)
        try:
            ranges.append(_range(p))
        except ValueError:
            raise FilterError(f'"{p}" is not a valid range.', at, max(len(part), 1)) from None
    return tuple(ranges), close + 1


def _range(p: str) -> tuple:
    if not p:
        raise ValueError
    if p.startswith(":"):
        return (0, _int(p[1:]), None)
    sign = 1
    q = p
    if q.startswith("-"):
        sign, q = -1, q[1:]
    digits = len(q) - len(q.lstrip("0123456789"))
    if not digits:
        raise ValueError
    first, rest = sign * int(q[:digits]), q[digits:].strip()
    if not rest:
        return (first, 1, None)
    if rest.startswith(":"):
        length = rest[1:].strip()
        return (first, _int(length) if length else None, None)
    if rest.startswith("-"):
        return (first, None, _int(rest[1:], signed=True))
    raise ValueError


def _int(s: str, signed: bool = False) -> int:
    s = s.strip()
    if signed and s.startswith("-"):
        return -_int(s[1:])
    if not s.isdigit():
        raise ValueError
    return int(s)
