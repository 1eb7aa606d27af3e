"""The layers import one way: each folder may import only the layers below it (docs/architecture.md)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["reassembly", "engine", "capture", "dissectors", "session", "analysis", "output", "cli"]
EXEMPT = {"api/__init__.py"}   # the public API sits on top of everything


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
        files = [ROOT / "api" / "session.py"] if layer == "session" else sorted((ROOT / layer).rglob("*.py"))
        for path in files:
            for module in imports(path):
                target = layer_of_import(module, layer)
                if target and target != layer and ORDER.index(target) > ORDER.index(layer):
                    wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not wrong, "imports pointing up: " + "; ".join(wrong)


def test_nothing_at_the_root_shadows_the_installed_package():
    """Python run from the repository root puts the root first on sys.path: a folder or module named `protodump`
    there would hide the installed package (`import protodump.analysis` would fail after a plain `pip install .`)."""
    assert not (ROOT / "protodump").exists() and not (ROOT / "protodump.py").exists()
    assert (ROOT / "api" / "__init__.py").exists()
