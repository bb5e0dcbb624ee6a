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


TRAIN = PACKAGE.parent / "train"
# train/'s parts, lowest first: each imports only the parts before it (and modules of its own folder).
TRAIN_LAYERS = ("model", "arguments", "data", "negatives", "losses", "evaluation", "config", "loop", "commands")


def type_checking_nodes(tree: ast.AST) -> set[ast.AST]:
    """The imports under ``if TYPE_CHECKING:``, which annotations read and nothing runs."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            found |= {inner for statement in node.body for inner in ast.walk(statement)}
    return found


def train_arrows() -> list[tuple[str, str, str, int]]:
    """(file, its part, imported part, line) for every run-time import between two of train/'s parts."""
    arrows = []
    for path in sorted(TRAIN.rglob("*.py")):
        parts = path.relative_to(TRAIN).with_suffix("").parts
        file, source = str(path.relative_to(TRAIN)), parts[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = type_checking_nodes(tree)
        for node in ast.walk(tree):
            if node in skipped:
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                target = list(parts[:-1])[: len(parts) - node.level] + (node.module or "").split(".")
                arrows.append((file, source, target[0], node.lineno))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module]
                for name in names:
                    if name.split(".")[0] in ("train", "density_train") and name.count("."):
                        arrows.append((file, source, name.split(".")[1], node.lineno))
    return arrows


def test_train_parts_import_only_the_parts_below_them():
    arrows = train_arrows()
    assert any(file == "commands/train.py" and part == "loop" for file, _, part, _ in arrows)  # the walk sees imports
    rank = {part: i for i, part in enumerate(TRAIN_LAYERS)}
    upward = [
        (file, part, line)
        for file, source, part, line in arrows
        if source in rank and part in rank and rank[part] > rank[source]
    ]
    assert upward == []
    assert {path.stem if path.parent == TRAIN else path.parent.name for path in TRAIN.rglob("*.py")} == {
        *TRAIN_LAYERS,
        "__init__",
        "__main__",
    }


def test_the_project_imports_the_training_package_by_one_name():
    """density_train, installed and in a checkout: nothing imports train.<module>, which would load a second copy."""
    root = PACKAGE.parent
    paths = [root / "app.py"]
    paths += [
        path
        for folder in ("density_metric", "train", "benchmarks", "tests", "results")
        for path in (root / folder).rglob("*.py")
    ]
    offenders = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            offenders += [f"{path.relative_to(root)}:{node.lineno}" for name in names if name.split(".")[0] == "train"]
    assert offenders == []
