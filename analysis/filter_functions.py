"""Display-filter functions (Wireshark 4.0): len() count() upper() lower() string() abs() max() min().

A call is compiled to a getter like a field's: (packet, index) -> the values it yields, with their kind, so it
stands wherever a field does (either side of a comparison, alone as a test: true when it yields a value).
    len(f)       each occurrence's length in bytes (a string's UTF-8 bytes; any other field its item length)
    count(f)     the number of occurrences (one value, 0 when absent)
    upper/lower  each string occurrence in upper / lower case (string fields only)
    string(f)    each occurrence as the text tshark shows (-T fields); for comparing numbers as text
    abs(f)       each numeric occurrence's absolute value
    max/min(...) the largest / smallest value of every argument's occurrences (numbers of one kind)
"""
from __future__ import annotations

from dataclasses import dataclass

from .filter_fields import Spec
from .filter_lex import FilterError


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    pos: int
    length: int


FUNCTIONS = {"len": 1, "count": 1, "upper": 1, "lower": 1, "string": 1, "abs": 1, "max": None, "min": None}
NUMERIC = ("int", "float")


def as_text(field, value) -> str:
    """A value as string() gives it (measured on tshark 4.0): integers in decimal whatever their base, booleans
    1/0, bytes as colon hex, the rest as it is."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (bytes, bytearray)):
        return value.hex(":")
    return str(value)


def check_arity(call: Call) -> None:
    want = FUNCTIONS[call.name]
    if want is not None and len(call.args) != want:
        raise FilterError(f"Function {call.name} can only accept {want} arguments.", call.pos, len(call.name))
    if want is None and not call.args:
        raise FilterError(f"Function {call.name}() needs at least one argument.", call.pos, call.length)


def check_arguments(call: Call) -> None:
    """A literal where a field (or a call) must be: tshark 4.0's words for each function."""
    for arg in call.args:
        if hasattr(arg, "name") or isinstance(arg, Call):
            continue
        if call.name in ("upper", "lower"):
            message = f"Only string type fields can be used as parameter for {call.name}()"
        elif call.name == "abs":
            message = "Need a field or field-like value on the LHS."
        elif call.name in ("max", "min"):
            message = f"Argument '{arg.text}' is not valid for {call.name}()"
        else:
            message = f"Only fields can be used as parameter for {call.name}()"
        raise FilterError(message, arg.pos, arg.length)


def call_getter(call: Call, getter, items_getter):
    """(values(p, ix), kind, spec) of a call. getter(arg) is filter._getter (a field's values, kind, spec);
    items_getter(arg) the tree items of a plain field argument."""
    check_arity(call)
    check_arguments(call)
    # the result's type, as tshark names it in errors: len() and count() are uint32, abs/max/min their argument's
    spec = lambda kind, ftype=None: Spec(f"{call.name}()", kind, None, ftype or kind)    # noqa: E731
    if call.name == "count":
        get = getter(call.args[0])[0]
        return (lambda p, ix: [len(get(p, ix))]), "int", spec("int", "uint32")
    if call.name == "len":
        arg = call.args[0]
        get, kind, _ = getter(arg)
        if kind in ("string", "bytes", "protocol") or getattr(arg, "ranges", None) is not None:
            measure = (lambda v: len(v.encode()) if isinstance(v, str) else len(v))   # noqa: E731
            return (lambda p, ix: [measure(v) for v in get(p, ix)]), "int", spec("int", "uint32")
        items = items_getter(arg)
        return (lambda p, ix: [it.length or 0 for it in items(p, ix)]), "int", spec("int", "uint32")
    if call.name in ("upper", "lower"):
        get, kind, _ = getter(call.args[0])
        if kind != "string":
            arg = call.args[0]
            raise FilterError(f"Only string type fields can be used as parameter for {call.name}()",
                              arg.pos, arg.length)
        change = str.upper if call.name == "upper" else str.lower
        return (lambda p, ix: [change(v) for v in get(p, ix)]), "string", spec("string")
    if call.name == "string":
        arg = call.args[0]
        if isinstance(arg, Call):
            get = getter(arg)[0]
            return (lambda p, ix: [str(v) for v in get(p, ix)]), "string", spec("string")
        items = items_getter(arg)

        def shown(p, ix):
            return [as_text(it.field, it.value) for it in items(p, ix) if it.field is not None]
        return shown, "string", spec("string")
    getters = [getter(a) for a in call.args]
    kinds = {kind for _, kind, _ in getters}
    if not kinds <= set(NUMERIC) or len(kinds) != 1:
        raise FilterError(f"Argument{'s' if len(getters) > 1 else ''} of {call.name}() must be numbers of one type.",
                          call.pos, call.length)
    kind, ftype = kinds.pop(), getters[0][2].ftype
    if call.name == "abs":
        get = getters[0][0]
        return (lambda p, ix: [abs(v) for v in get(p, ix)]), kind, spec(kind, ftype)
    pick = max if call.name == "max" else min

    def extreme(p, ix):
        values = [v for get, _, _ in getters for v in get(p, ix)]
        return [pick(values)] if values else []
    return extreme, kind, spec(kind, ftype)
