"""Reading a packet tree back (what the game analyses do with the trees the dissectors built)."""
from __future__ import annotations


def child(node, abbrev):
    """The first direct child of `node` with field `abbrev`, or None."""
    for c in node.children or ():
        if c.field is not None and c.field.abbrev == abbrev:
            return c
    return None


def child_value(node, abbrev, default=None):
    c = child(node, abbrev)
    return default if c is None else c.value


def child_values(node, prefix: str, names) -> dict:
    """{name: the value of the child `prefix.name`} for each name (None where the child is absent)."""
    return {name: child_value(node, f"{prefix}.{name}") for name in names}


def value_name(item) -> str:
    """An item's value by its field's value names (the value itself when unnamed; "?" for no item)."""
    if item is None:
        return "?"
    names = (item.field.values or {}) if item.field is not None else {}
    return names.get(item.value, str(item.value))
