"""The layer map (README "Architecture") and the import graph that must follow it.

Every module of ``pi_compact`` belongs to one layer, and imports (at module level, inside functions, or for type
checking alike) only from its own layer or the layers before it; and no two parts import each other, directly or
round a cycle. The package's ``__init__`` (the lazy public API) stands outside the layers.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pi_compact

PACKAGE = Path(pi_compact.__file__).parent

# Layers in order, each a package (the root's few leaf modules aside); a module belongs to the longest part that
# prefixes its name.
LAYERS: list[tuple[str, list[str]]] = [
    ("root", ["version", "bundled", "errors", "js", "redact"]),
    ("session", ["session"]),
    ("pi", ["pi"]),
    ("llm", ["llm"]),
    ("checkpoint", ["checkpoint"]),
    ("search", ["search"]),
    ("archive", ["archive"]),
    ("lookup", ["lookup"]),
    ("ops", ["ops"]),
    ("extension", ["extension"]),
    ("cli", ["cli", "__main__"]),
]

LAYER_OF = {f"pi_compact.{part}": index for index, (_, parts) in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(module: str) -> str | None:
    """The part of the layer map a module belongs to (the longest prefix), None for the package itself."""
    if module == "pi_compact":
        return None
    candidates = [p for p in LAYER_OF if module == p or module.startswith(p + ".")]
    return max(candidates, key=len) if candidates else ""


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / Path(*name.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import statements under ``if TYPE_CHECKING:`` (they load nothing when the program runs)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return found


def imports(path: Path, module: str, *, runtime_only: bool = False) -> set[str]:
    """Every pi_compact module ``path`` imports, wherever the import statement is (``runtime_only``: not those
    for type checking alone). ``from pkg import submodule`` counts as importing the submodule."""
    tree = ast.parse(path.read_bytes(), str(path))
    skip = _type_checking_nodes(tree) if runtime_only else set()
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pi_compact"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if not base.startswith("pi_compact"):
                continue
            submodules = {f"{base}.{a.name}" for a in node.names if _is_module(f"{base}.{a.name}")}
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(base)
    return found


@functools.cache  # the same source files for every test here: parse them once (no test changes the graph)
def graph(*, runtime_only: bool = False) -> dict[str, set[str]]:
    return {
        module_name(path): imports(path, module_name(path), runtime_only=runtime_only)
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _cycles(edges: dict[str, set[str]]) -> list[str]:
    cycles: list[str] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return cycles


def test_every_module_has_a_place_in_the_layer_map() -> None:
    unplaced = sorted(m for m in graph() if part_of(m) == "")
    assert not unplaced, f"add these modules to LAYERS (and the README's Architecture section): {unplaced}"


def test_each_module_imports_only_from_its_layer_or_the_layers_before() -> None:
    wrong = []
    for module, targets in graph().items():
        part = part_of(module)
        if not part:
            continue
        for target in sorted(targets):
            other = part_of(target)
            if other and LAYER_OF[other] > LAYER_OF[part]:
                wrong.append(f"{module} ({LAYERS[LAYER_OF[part]][0]}) imports {target} ({LAYERS[LAYER_OF[other]][0]})")
    assert not wrong, "imports against the layer map:\n" + "\n".join(wrong)


def test_no_two_parts_import_each_other() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph().items():
        part = part_of(module)
        for target in targets:
            other = part_of(target)
            if part and other and other != part:
                edges[part].add(other)
    cycles = _cycles(edges)
    assert not cycles, "import cycles between parts:\n" + "\n".join(cycles)


def test_no_import_cycles_between_modules() -> None:
    """Within a part too (type-checking imports aside: they load nothing); the package's lazy ``__init__`` aside."""
    edges = {
        module: {t for t in targets if t != module and t != "pi_compact"}
        for module, targets in graph(runtime_only=True).items()
    }
    cycles = _cycles(edges)
    assert not cycles, "import cycles between modules:\n" + "\n".join(cycles)


def test_the_map_names_only_existing_modules() -> None:
    modules = set(graph())
    stale = sorted(p for p in LAYER_OF if p not in modules)
    assert not stale, f"the layer map names modules that do not exist: {stale}"


def test_the_readme_draws_every_layer_and_part() -> None:
    section = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [name for name, _ in LAYERS if name not in section]
    missing += [part for _, parts in LAYERS for part in parts if part.split(".")[-1] not in section]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_no_layer_imports_the_package_root() -> None:
    """The package's ``__init__`` is the public API over every layer: a module inside a layer that imports it
    (for ``__version__``, say) points up at all of them. Leaf modules of the root layer hold what they share."""
    wrong = sorted(module for module, targets in graph().items() if part_of(module) and "pi_compact" in targets)
    assert not wrong, f"these modules import the package root: {wrong}"


def private_imports() -> list[str]:
    """``from pi_compact.x import _name`` where ``_name`` is defined in another module: a name shared across
    modules is part of the module's interface and is spelled as such."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pi_compact") and not node.level:
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{module} imports {node.module}.{alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    wrong = private_imports()
    assert not wrong, "make these names public where they are shared:\n" + "\n".join(wrong)
