"""The layers import one way: each folder may import only the layers below it (README, "How it is built")."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["reassembly", "engine", "capture", "dissectors", "session", "analysis", "output", "cli"]
EXEMPT = {"protodump/__init__.py"}   # the public API sits on top of everything


def layer_of_import(module: str, package: str) -> str | None:
    """The layer an import names, from `from ..engine.tree import x` (package = this file's layer)."""
    parts = module.split(".")
    return parts[0] if parts[0] in ORDER else None


def imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1 and node.module:
            yield node.module
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("protodump."):
            yield node.module.split(".", 1)[1]


def test_imports_point_down():
    wrong = []
    for layer in ORDER:
        files = [ROOT / "protodump" / "session.py"] if layer == "session" else sorted((ROOT / layer).rglob("*.py"))
        for path in files:
            for module in imports(path):
                target = layer_of_import(module, layer)
                if target and target != layer and ORDER.index(target) > ORDER.index(layer):
                    wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not wrong, "imports pointing up: " + "; ".join(wrong)
