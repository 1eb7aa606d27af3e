"""The display-filter parser: recursive descent over filter_lex tokens into a small tree of tuples.

Grammar (Wireshark 4.0; `and` binds tighter than `or`, as in tshark):
    expr    := and ( ("or" | "||") and )*
    and     := unary ( ("and" | "&&") unary )*
    unary   := ("not" | "!") unary | "(" expr ")" | [ "any" | "all" ] test
    test    := field [ relop value | "&" value | "contains" entity | "matches" entity | ["not" | "!"] "in" set ]
               (before a relop or another "&", "field & value" is arithmetic: the bits both have)
    value   := [ "+" ] entity                             entity := field | WORD | STRING | CHAR
    set     := "{" element ( "," element )* "}"        element := value [ ".." value ]
    field   := WORD [ SLICE ]                             (a WORD naming a known field or protocol)
             | FUNC "(" value ( "," value )* ")"        (filter_functions: len, count, upper, ...)
Nodes: ("or", a, b) ("and", a, b) ("not", a) ("any"|"all", relation) ("exists", Field) ("cmp", op, Field, value, op_token)
("contains"|"matches", Field, value, op_token) ("in", Field, [(value, value|None)], op_token).
"""
from __future__ import annotations

from dataclasses import dataclass

from .filter_functions import FUNCTIONS, Call
from .filter_lex import FilterError, Token, shown_string, tokenize


@dataclass(frozen=True)
class Field:
    name: str
    ranges: tuple | None      # a slice: see filter_lex._range
    pos: int
    length: int


@dataclass(frozen=True)
class Literal:
    text: str
    kind: str                 # WORD (unparsed), STRING, CHAR
    pos: int
    length: int


@dataclass(frozen=True)
class Arith:
    """`left OP right` (tshark 4.0 arithmetic on integer fields: + - * / %)."""
    op: str
    left: object
    right: object
    pos: int
    length: int

    @property
    def name(self) -> str:
        return getattr(self.left, "name", "")


def _arith_op(tok: Token, strong: bool) -> bool:
    ops = ("*", "%") if strong else ("+",)
    words = ("/",) if strong else ("-",)
    return tok.kind in ops or tok.kind == "WORD" and tok.text in words


class Parser:
    def __init__(self, text: str, is_field):
        self.text, self.is_field = text, is_field
        self.tokens = tokenize(text)
        self.i = 0
        # a name error found while parsing: tshark 4.0 parses the whole text first, so a syntax error after it wins
        self.deferred: FilterError | None = None

    def parse(self):
        if self.peek().kind == "EOF":
            raise FilterError("Empty filter expression.", 0)
        node = self.expr()
        tok = self.peek()
        if tok.kind != "EOF":
            raise self.unexpected(tok)
        if self.deferred is not None:
            raise self.deferred
        return node

    def defer(self, error: FilterError) -> None:
        if self.deferred is None:
            self.deferred = error

    # -- token helpers
    def peek(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def unexpected(self, tok: Token) -> FilterError:
        if tok.kind == "EOF":
            return FilterError("Unexpected end of filter expression.")      # tshark 4.0 points at nothing
        shown = shown_string(tok.text) if tok.kind == "STRING" else self.text[tok.pos:tok.pos + tok.length]
        return FilterError(f'"{shown}" was unexpected in this context.', tok.pos, tok.length)

    # -- grammar
    def expr(self):
        node = self.conj()
        while self.peek().kind == "OR":
            self.next()
            node = ("or", node, self.conj())
        return node

    def conj(self):
        node = self.unary()
        while self.peek().kind == "AND":
            self.next()
            node = ("and", node, self.unary())
        return node

    def unary(self):
        tok = self.peek()
        if tok.kind == "NOT":
            self.next()
            return ("not", self.unary())
        if tok.kind == "(":
            self.next()
            node = self.expr()
            close = self.peek()
            if close.kind != ")":
                raise self.unexpected(close)       # at the end: tshark 4.0's "Unexpected end of filter expression."
            self.next()
            return node
        if tok.kind == "WORD" and tok.text in ("any", "all"):      # keywords in tshark 4.0: a quantified relation
            self.next()
            node = self.test()
            if node[0] == "exists" or node[0] == "cmp" and node[1] == "&":   # not relations: `&` is arithmetic
                raise self.unexpected(self.peek())
            return node if node[0] == "not" else (tok.text, node)           # on "not in": no effect (tshark 4.0)
        return self.test()

    def test(self):
        tok = self.peek()
        earlier = self.deferred
        field = self.arith(lambda: self.field(self.peek()))
        if isinstance(field, Arith):
            first = field
            while isinstance(first, Arith):
                first = first.left
            if isinstance(first, Field) and not self.is_field(first.name):
                self.deferred = earlier
                self.defer(FilterError("Constant arithmetic expression on the LHS is invalid.", first.pos,
                                       first.length))
        op = self.peek()
        if isinstance(field, Arith) and op.kind in ("IN", "NOT", "CONTAINS", "MATCHES"):
            raise self.unexpected(op)         # tshark 4.0: arithmetic only takes part in a relation (==, <, ...)
        if op.kind == "IN" or op.kind == "NOT" and self.tokens[self.i + 1].kind == "IN":
            self.member_of_set(field, earlier)
        while op.kind == "OP":
            self.next()
            right = self.arith(self.value)
            if op.text != "&" or self.peek().kind != "OP":
                while op.text != "&" and self.peek().kind == "OP" and self.peek().text == "&":
                    self.next()
                    more = self.arith(self.value)
                    right = Arith("&", right, more, right.pos, more.pos + more.length - right.pos)
                return ("cmp", op.text, field, right, op)
            # `a & b == c`, `a & b & c`: tshark 4.0's & is arithmetic too, binding looser than + and -
            field = Arith("&", field, right, field.pos, right.pos + right.length - field.pos)
            op = self.peek()
        if op.kind in ("CONTAINS", "MATCHES"):
            self.next()
            return (op.kind.lower(), field, self.value(signed=False), op)
        if op.kind == "IN":
            self.next()
            return ("in", field, self.set(), op)
        if op.kind == "NOT":          # after a field, "not" / "!" can only start "not in" (tshark 4.0)
            self.next()
            op = self.next()
            if op.kind != "IN":
                raise self.unexpected(op)
            return ("not", ("in", field, self.set(), op))
        if isinstance(field, Call):
            raise FilterError("You cannot test whether a function is present.", field.pos, field.length)
        return ("exists", field)

    def arith(self, operand):
        """operand ( (+|-) operand )*, each operand a product: * / % bind tighter (tshark 4.0)."""
        node = self.product(operand)
        while _arith_op(self.peek(), False):
            op = self.next()
            right = self.product(self.value)
            node = Arith(op.text, node, right, node.pos, right.pos + right.length - node.pos)
        return node

    def product(self, operand):
        node = operand()
        while _arith_op(self.peek(), True):
            op = self.next()
            right = self.value()
            node = Arith(op.text, node, right, node.pos, right.pos + right.length - node.pos)
        return node

    def member_of_set(self, field, earlier: FilterError | None) -> None:
        """tshark 4.0 tests only a plain field for membership: anything else (a function, a slice, a literal, an
        unknown name) is this one error, at the name (a slice: no position), in place of the name's own error."""
        if isinstance(field, Field) and field.ranges is None and self.is_field(field.name):
            return
        self.deferred = earlier
        if isinstance(field, Call):
            where, length = field.pos, len(field.name)
        elif field.ranges is not None:
            where, length = None, 1
        else:
            where, length = field.pos, field.length
        self.defer(FilterError("Only a field may be tested for membership in a set.", where, length))

    def call(self, tok: Token) -> Call:
        """FUNC ( value, ... ): a display-filter function (the "(" is next)."""
        self.next()
        self.next()
        args = []
        if self.peek().kind != ")":
            while True:
                args.append(self.value())
                sep = self.next()
                if sep.kind == ")":
                    break
                if sep.kind != ",":
                    raise self.unexpected(sep)
        else:
            self.next()
        end = self.tokens[self.i - 1]
        if tok.text not in FUNCTIONS:
            raise FilterError(f"Function '{tok.text}' does not exist", tok.pos, tok.length)
        return Call(tok.text, tuple(args), tok.pos, end.pos + end.length - tok.pos)

    def is_call(self, tok: Token) -> bool:
        """A WORD before "(" is a call (tshark 4.0: whatever the word; an unknown function is refused once the
        call has parsed, so a syntax error inside it comes first: `{foo (}`)."""
        return tok.kind == "WORD" and self.tokens[self.i + 1].kind == "("

    def field(self, tok: Token) -> Field:
        """A field at the left of a test: it must name a known field or protocol (or be a function call)."""
        if tok.kind == "WORD" and tok.text[:1] == "-" and (len(tok.text) > 1 or self.tokens[self.i + 1].kind in (
                "WORD", "STRING", "CHAR", "(")):
            return self.negated(tok)
        if self.is_call(tok):
            return self.call(tok)
        if tok.kind != "WORD":
            if tok.kind in ("STRING", "CHAR") and self.tokens[self.i + 1].kind in ("OP", "CONTAINS", "MATCHES", "IN",
                                                                                  "NOT"):
                self.defer(self.left_side(tok))
                self.next()
                return Field(tok.text, None, tok.pos, tok.length)
            raise self.unexpected(tok)
        if not self.is_field(tok.text):
            after = self.tokens[self.i + 1].kind
            if after == "NOT" and self.tokens[self.i + 2].kind == "IN":
                after = "IN"
            if after in ("WORD", "STRING", "CHAR"):      # a syntax error: reported before any name error
                raise self.unexpected(self.tokens[self.i + 1])
            if after == "SLICE":
                self.defer(FilterError(f"Range is not supported for entity {tok.text}", tok.pos, tok.length))
            elif after in ("OP", "CONTAINS", "MATCHES") or after == "IN" and not _name_like(tok.text):
                self.defer(self.left_side(tok))
            else:
                self.defer(FilterError(f"{tok.text} is neither a field nor a protocol name.", tok.pos, tok.length))
        self.next()
        return self.sliced(tok)

    def negated(self, tok: Token) -> Arith:
        """tshark 4.0's unary minus on an entity (a field, a slice, a call or a constant), "-x" or "- x": not on a
        parenthesis nor on another minus; a constant on the left side is refused once the whole text parsed."""
        if tok.text == "-":
            self.next()
        else:           # the rest of the word is the operand
            self.tokens[self.i] = Token("WORD", tok.text[1:], tok.pos + 1, tok.length - 1)
        operand = self.peek()
        if operand.kind == "WORD" and operand.text[:1] == "-":
            raise FilterError('"-" was unexpected in this context.', operand.pos, 1)
        if self.is_call(operand):
            inner = self.call(operand)
        elif operand.kind == "WORD" and self.is_field(operand.text):
            self.next()
            inner = self.sliced(operand)
        elif operand.kind in ("WORD", "STRING", "CHAR"):
            self.next()
            self.defer(FilterError("Constant arithmetic expression on the LHS is invalid.", operand.pos,
                                   operand.length))
            inner = Literal(operand.text, operand.kind, operand.pos, operand.length)
        else:
            raise self.unexpected(operand)
        return Arith("neg", inner, None, tok.pos, inner.pos + inner.length - tok.pos)

    def left_side(self, tok: Token) -> FilterError:
        """tshark 4.0: a comparison's operator in quotes, contains / matches / ~ bare."""
        op = self.tokens[self.i + 1]
        text = self.text[op.pos:op.pos + op.length]
        shown = f'"{text}"' if op.kind == "OP" else text
        side = shown_string(tok.text) if tok.kind == "STRING" else self.text[tok.pos:tok.pos + tok.length]
        return FilterError(f"Left side of {shown} expression must be a field or function, not {side}.", tok.pos,
                           tok.length)

    def sliced(self, tok: Token) -> Field:
        ranges = None
        length = tok.length
        if self.peek().kind == "SLICE":
            s = self.next()
            ranges, length = s.ranges, s.pos + s.length - tok.pos
        return Field(tok.text, ranges, tok.pos, length)

    def value(self, signed: bool = True):
        """The right side of a test: a field when the word names one (tshark's rule), else a literal; a comparison's
        and a set member's may carry a unary "+" (signed), a no-op."""
        if signed and self.peek().kind == "+":
            self.next()
        if self.is_call(self.peek()):
            return self.call(self.peek())
        tok = self.next()
        if tok.kind == "WORD" and tok.text in ("any", "all"):
            raise self.unexpected(tok)
        if tok.kind == "WORD" and tok.text[:1] == "-" and self.is_field(tok.text[1:]):    # unary minus on a field
            return Arith("neg", Field(tok.text[1:], None, tok.pos + 1, tok.length - 1), None, tok.pos, tok.length)
        if tok.kind == "WORD" and tok.text == "-" and self.peek().kind == "WORD" and self.peek().text[:1] != "-":
            after = self.value(signed=False)        # "- 1", "- udp.port": a unary minus apart from its operand
            if isinstance(after, Literal):
                return Literal("-" + after.text, "WORD", tok.pos, after.pos + after.length - tok.pos)
            return Arith("neg", after, None, tok.pos, after.pos + after.length - tok.pos)
        if tok.kind == "WORD":
            if self.is_field(tok.text):
                return self.sliced(tok)
            if self.peek().kind == "SLICE":
                raise FilterError(f"{tok.text} is neither a field nor a protocol name.", tok.pos, tok.length)
            return Literal(tok.text, "WORD", tok.pos, tok.length)
        if tok.kind in ("STRING", "CHAR"):
            return Literal(tok.text, tok.kind, tok.pos, tok.length)
        raise self.unexpected(tok)

    def set(self) -> list:
        tok = self.next()
        if tok.kind != "{":
            raise self.unexpected(tok)
        elements = []
        while True:
            low = self.value()
            high = None
            if self.peek().kind == "..":
                self.next()
                high = self.value()
            elements.append((low, high))
            tok = self.next()
            if tok.kind == "}":
                return elements
            if tok.kind != ",":
                raise self.unexpected(tok)


def _name_like(word: str) -> bool:
    """A word that could only be a (misspelt) field name, not a number, address or byte string."""
    return (word[0].isalpha() or word[0] == "_") and ":" not in word and "/" not in word \
        and not all(c in "0123456789abcdefABCDEF.-" for c in word)


def parse(text: str, is_field):
    return Parser(text, is_field).parse()
