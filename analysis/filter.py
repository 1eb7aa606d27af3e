"""Display filters (tshark -Y), Wireshark 4.0 syntax, compiled once into a tree of closures over Packet.index().

    >>> from protodump.analysis.filter import compile_filter
    >>> f = compile_filter('blank.type == "Login" && blank.login.name matches "^py"')
    >>> f.text
    'blank.type == "Login" && blank.login.name matches "^py"'

`f(packet)` / `f.match(packet)` says whether a packet matches. Semantics are tshark's: a test on a field with
several occurrences holds if any occurrence satisfies it; `!=` is "all not equal" (`~=` is "any not equal");
a test on an absent field is false; `matches` is a case-insensitive regular expression (`(?-i)` to turn that off).
A bad filter raises FilterError(message, position).
"""
from __future__ import annotations

import re

from .filter_functions import Call, call_getter
from .filter_fields import EXPERT_FIELDS, Spec, is_field, registry
from .filter_lex import FilterError
from .filter_parse import Arith, Field, Literal, parse
from .filter_values import (ABSOLUTE_TIMES, Negative, converter, ft_name, is_relative_time, item_bytes, literal,
                            literal_bytes, raw_bytes, slicer, type_name)

__all__ = ["FilterError", "DisplayFilter", "compile_filter"]

# Comparison families: kinds whose values compare with each other (field against field)
FAMILY = {"int": "int", "bool": "bool", "float": "float", "string": "string", "bytes": "bytes",
          "protocol": "bytes", "ipv4": "ipv4", "ipv6": "ipv6", "ether": "ether", "none": "none"}


class DisplayFilter:
    """A compiled display filter: call it (or .match) with a Packet."""

    def __init__(self, text: str, test):
        self.text, self._test = text, test

    def match(self, packet) -> bool:
        return bool(self._test(packet, packet.index()))

    __call__ = match

    def __repr__(self) -> str:
        return f"DisplayFilter({self.text!r})"


def compile_filter(text: str) -> DisplayFilter:
    """Parse and type-check a display filter; raises FilterError (with .position) when it is bad."""
    return DisplayFilter(text, _compile(parse(text, is_field)))


compile = compile_filter     # noqa: A001 - the name analysis.stats_filter's bridge calls


# -- nodes

def _compile(node):
    tag = node[0]
    if tag in ("and", "or"):
        a, b = _compile(node[1]), _compile(node[2])
        if tag == "and":
            return lambda p, ix: a(p, ix) and b(p, ix)
        return lambda p, ix: a(p, ix) or b(p, ix)
    if tag == "not":
        a = _compile(node[1])
        return lambda p, ix: not a(p, ix)
    if tag == "exists" and isinstance(node[1], Arith):      # a bare arithmetic expression: true when non-zero
        get = _getter(node[1])[0]
        return lambda p, ix: any(get(p, ix))
    if tag == "exists":
        get = _getter(node[1])[0]
        return lambda p, ix: bool(get(p, ix))
    if tag in ("any", "all"):         # a quantified relation (tshark 4.0: `all udp.port > 1`)
        return _relation(node[1], tag)
    return _relation(node, "")


def _relation(node, quant: str):
    """A relation over the values of its sides: true when one pair satisfies it (the default, `any`), or, with
    `all`, when every pair does (a set: every value equal to one member, or within one range)."""
    tag = node[0]
    if tag == "cmp":
        return _comparison(*node[1:], quant=quant)
    if tag == "contains":
        return _contains(*node[1:], quant=quant)
    if tag == "matches":
        return _matches(*node[1:], quant=quant)
    if tag == "in":
        return _membership(*node[1:], quant=quant)
    raise AssertionError(tag)


def _every(pairs) -> bool:
    """all() over at least one item (a relation on an absent field is false)."""
    seen = False
    for ok in pairs:
        if not ok:
            return False
        seen = True
    return seen


def _items(ref: Field):
    """(packet, index) -> the tree items of a plain field (for len() and string())."""
    return lambda p, ix: ix.get(ref.name, ())


def _getter(ref: Field):
    """(packet, index) -> the comparable values of a field's occurrences (or a function's values); and the kind
    of those values."""
    if isinstance(ref, Call):
        return call_getter(ref, _getter, _items)
    if isinstance(ref, Arith):
        return _arith(ref, None)
    spec = registry()[ref.name]
    kind = spec.kind
    if ref.name in EXPERT_FIELDS:
        attr = ref.name.rsplit(".", 1)[1]
        items = lambda p, ix: [getattr(it.expert_info, attr) for it in ix.get("_ws.expert", ())]   # noqa: E731
    else:
        name = ref.name
        items = lambda p, ix: ix.get(name, ())   # noqa: E731
    if ref.name in EXPERT_FIELDS:
        value = None                     # already plain values
    elif kind == "protocol":
        value = "protocol"
    else:
        value = "item"

    def values_of(p, ix):
        if value is None:
            return items(p, ix)
        if value == "protocol":
            return [item_bytes(p, it) for it in items(p, ix)]
        return [it.value for it in items(p, ix) if it.value is not None or kind == "none"]

    if ref.ranges is not None:
        to_bytes = (lambda v: v) if kind == "protocol" else raw_bytes(kind)
        if to_bytes is None or ref.name in ABSOLUTE_TIMES:
            raise FilterError(f'"{ref.name}" is a {type_name(spec)} and cannot be sliced into a sequence of bytes.',
                              ref.pos, len(ref.name))
        cut = slicer(ref.ranges)

        def sliced(p, ix):
            out = []
            for v in values_of(p, ix):
                s = cut(to_bytes(v))
                if s is not None:
                    out.append(s)
            return out
        return sliced, "bytes", Spec(ref.name, "bytes", None, "bytes")
    conv = converter(kind)
    if conv is None or kind == "protocol":
        return values_of, kind, spec
    return (lambda p, ix: [conv(v) for v in values_of(p, ix)]), kind, spec


ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "&": lambda a, b: a & b,
         "/": lambda a, b: None if b == 0 else int(a / b), "%": lambda a, b: None if b == 0 else a % b}


def _arith(node: Arith, outer: Spec | None, name: str = ""):
    """tshark 4.0 arithmetic: integer operands, or relative times with + and - (a constant takes the left side's
    type, or on the right of a comparison, the type of the comparison's left side); a division by zero gives no
    value."""
    if node.op == "neg":            # tshark 4.0 cannot negate an unsigned value: it compares as no number
        get, kind, spec = _getter(node.left)
        if kind == "float" and is_relative_time(spec):
            return (lambda p, ix: [-v for v in get(p, ix)]), kind, spec
        if kind != "int":
            raise FilterError(f"{ft_name(spec)} cannot -.", node.left.pos, node.left.length)
        if not spec.ftype.startswith("u"):
            return (lambda p, ix: [-v for v in get(p, ix)]), kind, spec
        if outer is not None and outer.ftype.startswith("u"):     # compared with an unsigned field: no number
            return (lambda p, ix: [Negative(-v & 0xFFFFFFFFFFFFFFFF) for v in get(p, ix)]), kind, spec
        # an unsigned value negated becomes a signed 64-bit one (a constant beside it is read as one too)
        return (lambda p, ix: [-v for v in get(p, ix)]), kind, Spec(spec.abbrev, "int", spec.values, "int64")
    if isinstance(node.left, Literal):
        if outer is None:
            raise FilterError("Constant arithmetic expression on the LHS is invalid.", node.left.pos)
        lget, lkind, lspec = _operand(node.left, outer, name)
    elif isinstance(node.left, Arith):       # (a negation inside a sum is a signed number whatever it meets)
        lget, lkind, lspec = _arith(node.left, None if node.left.op == "neg" else outer, name)
    else:
        lget, lkind, lspec = _getter(node.left)
    time = lkind == "float" and is_relative_time(lspec)
    if isinstance(node.right, Literal) and node.right.kind != "WORD":
        raise FilterError(f'{_quoted(node.right)} is not a valid arithmetic operand.', node.right.pos,
                          node.right.length)
    if node.op == "&" and lkind in ("ipv4", "ipv6"):          # an address masked: an address
        rget, rkind, rspec = _operand(node.right, lspec, node.name or name)
        if rkind != lkind:
            raise _incompatible(node, rkind, rspec)
        return (lambda p, ix: [_address_and(a, b) for a in lget(p, ix) for b in rget(p, ix)]), lkind, lspec
    if node.op == "&" and lkind in ("bytes", "ether"):         # the bits both have, over the shorter
        rget, rkind, rspec = _operand(node.right, lspec, node.name or name)
        if rkind not in ("bytes", "ether"):
            raise _incompatible(node, rkind, rspec)
        return (lambda p, ix: [bytes(x & y for x, y in zip(a, b)) for a in lget(p, ix) for b in rget(p, ix)]), \
            "bytes", Spec(lspec.abbrev, "bytes", None, "bytes")
    if lkind != "int" and not (time and node.op in "+-"):
        raise FilterError(f"{ft_name(lspec)} cannot {node.op}.", node.left.pos, node.left.length)
    rget, rkind, rspec = _operand(node.right, lspec, node.name or name)
    if (rkind == "float" and is_relative_time(rspec)) != time or rkind not in ("int", "float"):
        # a field, call or sum on the right of another type (a constant took the left's type): "not compatible"
        # when that type has the operation, else that type's refusal
        raise _incompatible(node, rkind, rspec)
    fn = ARITH[node.op]

    def values(p, ix):
        out = []
        for a in lget(p, ix):
            for b in rget(p, ix):
                v = fn(a, b)
                if v is not None:
                    out.append(round(v, 9) if time else v)      # (times: nanoseconds, as tshark's nstime)
        return out
    return values, lkind, lspec


def _incompatible(node: Arith, rkind: str, rspec: Spec) -> FilterError:
    """The right operand of `node` has another type than its left: "not type compatible" when that type has the
    operation, else that type's refusal."""
    right = node.right
    if node.op == "&":
        capable = rkind in BITWISE_AND
    else:
        capable = rkind == "int" or node.op in "+-" and rkind == "float" and is_relative_time(rspec)
    if capable:
        return FilterError(f"{node.left.name} and {right.name} are not type compatible.", right.pos, right.length)
    return FilterError(f"{ft_name(rspec)} cannot {node.op}.", *_span(right))


def _span(node) -> tuple[int, int]:
    """Where an error about an operand points: a function call at its name."""
    return (node.pos, len(node.name)) if isinstance(node, Call) else (node.pos, node.length)


def _quoted(lit: Literal) -> str:
    return f'"{lit.text}"' if lit.kind == "STRING" else f"'{lit.text}'" if lit.kind == "CHAR" else lit.text


def _operand(value, spec: Spec, name: str):
    """The right side: a getter for a field, or a constant list for a literal converted to the left's type."""
    if isinstance(value, Arith):
        return _arith(value, spec, name)
    if isinstance(value, (Field, Call)):
        return _getter(value)
    const = [literal(value, spec, name)]
    return (lambda p, ix: const), spec.kind, spec


def _order(family: str):
    """eq(a, b), lt(a, b) for values of this family; b may be an address literal (network, mask)."""
    if family in ("ipv4", "ipv6"):
        def eq(a, b):
            return (a & b[1]) == b[0] if b.__class__ is tuple else a == b

        def lt(a, b):
            return a < (b[0] if b.__class__ is tuple else b)

        def gt(a, b):
            return a > (b[0] if b.__class__ is tuple else b)
        return eq, lt, gt
    if family in ("bytes", "ether"):
        # Wireshark orders byte strings by length first, then bytes
        return (lambda a, b: a == b, lambda a, b: (len(a), a) < (len(b), b), lambda a, b: (len(a), a) > (len(b), b))
    return (lambda a, b: a == b, lambda a, b: a < b, lambda a, b: a > b)


def _check_types(left: Field, lkind: str, lspec: Spec, right, rkind: str, rspec: Spec, op_text: str, op_tok):
    if FAMILY[lkind] == "none":
        raise _cannot(left, lspec, op_text)
    if isinstance(right, (Field, Call)) and FAMILY[lkind] != FAMILY[rkind]:
        raise FilterError(f"{left.name} and {right.name} are not of compatible types.", right.pos, right.length)


def _cannot(left, lspec: Spec, op: str) -> FilterError:
    """tshark 4.0's refusal of a type in a relation (a function named as such, at its name)."""
    who, length = (f"Function {left.name}", len(left.name)) if isinstance(left, Call) else (left.name, left.length)
    return FilterError(f"{who} (type={type_name(lspec)}) cannot participate in {op} comparison.", left.pos, length)


# what tshark 4.0's bitwise and takes: integers and addresses (an address literal: its network), byte strings
# (true when the two share a set bit within the shorter)
def _address_and(a: int, b) -> int:
    return a & (b[0] if b.__class__ is tuple else b)


BITWISE_AND = {"int": lambda a, b: a & b, "ipv4": _address_and, "ipv6": _address_and,
               "bytes": lambda a, b: any(x & y for x, y in zip(a, b)),
               "ether": lambda a, b: any(x & y for x, y in zip(a, b))}


def _comparison(op: str, left: Field, right, op_tok, quant: str = ""):
    lget, lkind, lspec = _getter(left)
    if op == "&":
        bitand = BITWISE_AND.get(lkind)
        if bitand is None or is_relative_time(lspec):
            raise FilterError(f"{ft_name(lspec)} cannot &.", left.pos, left.length)
        if isinstance(right, Literal) and right.kind != "WORD":      # (tshark 4.0's & is arithmetic)
            raise FilterError(f'{_quoted(right)} is not a valid arithmetic operand.', right.pos, right.length)
        rget, rkind, _ = _operand(right, lspec, left.name)
        _check_types(left, lkind, lspec, right, rkind, _, op, op_tok)
        return lambda p, ix: any(bitand(a, b) for b in rget(p, ix) for a in lget(p, ix))
    if lkind == "none":
        _check_types(left, lkind, lspec, right, lkind, lspec, op, op_tok)
    rget, rkind, _ = _operand(right, lspec, left.name)
    _check_types(left, lkind, lspec, right, rkind, _, op, op_tok)
    eq, lt, gt = _order(FAMILY[lkind])
    if quant == "all" and op != "!=":
        test = {"==": eq, "~=": lambda a, b: not eq(a, b), "<": lt, ">": gt, "<=": lambda a, b: lt(a, b) or eq(a, b),
                ">=": lambda a, b: gt(a, b) or eq(a, b), "&": lambda a, b: a & b}[op]
        return lambda p, ix: _every(b.__class__ is Negative or test(a, b) for b in rget(p, ix) for a in lget(p, ix))
    if quant == "any" and op == "!=":
        op = "~="
    if op == "==":
        return lambda p, ix: any(eq(a, b) for b in rget(p, ix) for a in lget(p, ix))
    if op == "!=":       # all not equal: false when either side is absent, as tshark 4.0
        def all_ne(p, ix):
            a_values, b_values = lget(p, ix), rget(p, ix)
            return bool(a_values and b_values) and not any(eq(a, b) for b in b_values for a in a_values)
        return all_ne
    if op == "~=":
        return lambda p, ix: any(not eq(a, b) for b in rget(p, ix) if b.__class__ is not Negative
                                 for a in lget(p, ix))
    test = {"<": lt, ">": gt, "<=": lambda a, b: lt(a, b) or eq(a, b), ">=": lambda a, b: gt(a, b) or eq(a, b)}[op]
    return lambda p, ix: any(test(a, b) for b in rget(p, ix) for a in lget(p, ix))


def _contains(left: Field, right, op_tok, quant: str = ""):
    lget, lkind, lspec = _getter(left)
    if lkind not in ("string", "bytes", "protocol", "ether") or lspec.abbrev in ABSOLUTE_TIMES:
        raise _cannot(left, lspec, "contains")
    if lkind == "ether" and isinstance(right, Literal):       # a byte string, not an address
        if right.kind == "STRING":
            raise FilterError(f'{type_name(lspec)} cannot be converted from a string ("{right.text}").', right.pos,
                              right.length)
        const = [literal_bytes(right)]
        if len(const[0]) > 6:
            raise FilterError(f'"{right.text}" contains too many bytes to be a valid Ethernet address.', right.pos,
                              right.length)
        rget, rkind, rspec = (lambda p, ix: const), "ether", lspec
    else:
        rget, rkind, rspec = _operand(right, lspec, left.name)
    _check_types(left, lkind, lspec, right, rkind, rspec, "contains", op_tok)
    if quant == "all":
        return lambda p, ix: _every(b in a for b in rget(p, ix) for a in lget(p, ix))
    return lambda p, ix: any(b in a for b in rget(p, ix) for a in lget(p, ix))


def _matches(left: Field, right, op_tok, quant: str = ""):
    lget, lkind, lspec = _getter(left)
    if lkind not in ("string", "bytes", "protocol", "ether") or lspec.abbrev in ABSOLUTE_TIMES:
        raise _cannot(left, lspec, "matches")
    if not isinstance(right, Literal):
        raise FilterError(f'Right side of "matches" expression must be a string, not {right.name}.',
                          right.pos, right.length)
    pattern, flags = right.text, re.IGNORECASE       # Wireshark 4.0 compiles with PCRE2_CASELESS
    if pattern.startswith("(?-i)"):
        pattern, flags = pattern[5:], 0
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        raise FilterError(f"Invalid regular expression: {exc}.", right.pos, right.length) from None
    search = regex.search
    agg = _every if quant == "all" else any
    if lkind == "string":
        return lambda p, ix: agg(search(a) for a in lget(p, ix))
    # bytes are matched as Latin-1 text (one character per byte)
    return lambda p, ix: agg(search(a.decode("latin-1")) for a in lget(p, ix))


def _membership(left: Field, elements, op_tok, quant: str = ""):
    lget, lkind, lspec = _getter(left)
    if lkind in ("none",):
        raise _cannot(left, lspec, "in")
    eq, lt, gt = _order(FAMILY[lkind])
    tests = []
    for low, high in elements:
        lo = _operand(low, lspec, left.name)
        _check_types(left, lkind, lspec, low, lo[1], lo[2], "in", op_tok)
        if high is None:
            tests.append((lo[0], None))
        else:
            hi = _operand(high, lspec, left.name)
            _check_types(left, lkind, lspec, high, hi[1], hi[2], "in", op_tok)
            tests.append((lo[0], hi[0]))

    agg = all if quant == "all" else any       # all: every value equals one member (tshark 4.0 ORs the members)

    def member(p, ix):
        values = lget(p, ix)
        if not values:
            return False
        for lo_get, hi_get in tests:
            for b in lo_get(p, ix):
                if hi_get is None:
                    if agg(eq(a, b) or quant == "all" and b.__class__ is Negative for a in values):
                        return True
                else:
                    for c in hi_get(p, ix):
                        if b.__class__ is Negative or c.__class__ is Negative:
                            # tshark 4.0: a failed bound holds for `all` (nothing to test), never for `any`
                            vacuous = quant == "all"
                            if agg((vacuous if b.__class__ is Negative else not lt(a, b))
                                   and (vacuous if c.__class__ is Negative else not gt(a, c)) for a in values):
                                return True
                        elif agg(not lt(a, b) and not gt(a, c) for a in values):
                            return True
        return False
    return member
