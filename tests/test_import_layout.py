"""No two modules of density_metric/ import each other, counting imports inside functions too."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "density_metric"


def imported_modules(path: Path) -> set[str]:
    """The density_metric modules that ``path`` imports anywhere (``from .x import y`` counts x and x.y)."""
    parts = ["density_metric", *path.relative_to(PACKAGE).with_suffix("").parts]
    package = parts if parts[-1] == "__init__" else parts[:-1]
    package = [p for p in package if p != "__init__"]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            found |= {name} | {f"{name}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("density_metric")}


def module_name(path: Path) -> str:
    parts = ["density_metric", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_import_each_other():
    imports = {module_name(path): imported_modules(path) for path in PACKAGE.rglob("*.py")}
    imports = {module: {name for name in names if name in imports} - {module} for module, names in imports.items()}
    assert "density_metric.encoding.features" in imports["density_metric.scoring"]  # the walk sees imports
    mutual = sorted({tuple(sorted((a, b))) for a in imports for b in imports[a] if a in imports[b]})
    assert mutual == []
