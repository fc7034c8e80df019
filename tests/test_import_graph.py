"""adrank's own modules (configs, components, pipelines, ops) import each other without a cycle, and no function
body imports an adrank module to hide one.

The graph is read from the source with `ast`, nothing is imported: an edge A → B for every `import B` /
`from B import name` in A (at module level or inside a function; a module named by `from package import
module` is the edge's end). Imports under `if TYPE_CHECKING:` never run and are left out.

Function-level imports of adrank modules are allowed in two places only:
- the `pipelines` package: KFP lightweight components ship their function's source, which runs in the
  container with nothing but what it imports itself;
- `LAZY_IMPORTS` below: each named, each with the reason it is imported late (start-up time or an optional
  heavy dependency), never to break a cycle (the cycle check sees those edges too);
- `NOT_YET_MOVED`: a shrinking list of leftovers outside components/train, to be moved to module level.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("configs", "components", "pipelines", "ops")
KFP_COMPONENT_PACKAGES = ("pipelines",)

# (importing module, or a package prefix ending in "."; imported module) → why it is imported inside a function.
LAZY_IMPORTS: dict[tuple[str, str], str] = {
    # `adrank <command>` imports what that command needs when it runs, so `adrank --help` and every command
    # start without loading TensorFlow, Beam, KFP or the Vertex clients of the others.
    ("ops.commands.", "*"): "each CLI sub-command loads its implementation when it runs",
    # a local cluster's server process must ask to die with its parent before the seconds-long TensorFlow import
    ("components.train.local_cluster", "components.train.ps_server"): "server start-up: die with the parent first",
    # google-cloud-aiplatform only for the Vertex registry
    ("components.registry.champion", "components.registry.vertex"): "Vertex client, only on the vertex backend",
    ("components.registry.promote_challenger", "components.registry.vertex"): "Vertex client, only on the vertex backend",
    ("ops.local_dag", "pipelines.ranking"): "KFP and the DAG, only when a run starts",
    # Keras picks its backend once per process: a lane's trainer loads only after the step chose the backend
    ("components.train.lanes", "components.train.jax_lane.training_run"): "Keras's backend is chosen first",
    ("components.train.lanes", "components.train.training_run"): "Keras's backend is chosen first",
}

# Function-level imports in modules outside components/train that issue 20's other parts own, found when this test
# was written. None of them is needed to break a cycle (the cycle test counts their edges and finds none); move
# each to the top of its module, or into LAZY_IMPORTS with its reason, and delete its line here.
NOT_YET_MOVED: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    function: str | None  # the enclosing function, None at module level


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def adrank_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, modules: dict) -> list[str]:
    """The adrank modules an import statement loads (a `from package import module` names the module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] in PACKAGES]
    base = node.module or ""
    if node.level:  # relative: from the importer's package, `level - 1` packages up
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    if base.split(".")[0] not in PACKAGES:
        return []
    submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
    plain_names = len(submodules) < len(node.names)
    return submodules + ([base] if plain_names or not submodules else [])


def imports_of(module: str, path: Path, modules: dict) -> list[Import]:
    found: list[Import] = []
    is_package = path.name == "__init__.py"

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for orelse in child.orelse:
                    visit(orelse, function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(child, module, is_package, modules):
                    found.append(Import(module, target, child.lineno, function))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, function or child.name)
            else:
                visit(child, function)

    visit(ast.parse(path.read_text(), str(path)), None)
    return found


def all_imports() -> list[Import]:
    modules = adrank_modules()
    return [found for module, path in modules.items() for found in imports_of(module, path, modules)]


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (or a module importing itself), sorted."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan; the graph has a few hundred nodes, recursion is fine
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges.get(node, ())):
            if successor not in index:
                connect(successor)
                lowlink[node] = min(lowlink[node], lowlink[successor])
            elif successor in on_stack:
                lowlink[node] = min(lowlink[node], index[successor])
        if lowlink[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1 or node in edges.get(node, ()):
                components.append(sorted(members))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return sorted(components)


def allowed_lazy(found: Import) -> bool:
    if found.importer.split(".")[0] in KFP_COMPONENT_PACKAGES or (found.importer, found.imported) in NOT_YET_MOVED:
        return True
    for (importer, imported), _reason in LAZY_IMPORTS.items():
        importer_matches = found.importer == importer or (importer.endswith(".") and found.importer.startswith(importer))
        if importer_matches and imported in ("*", found.imported):
            return True
    return False


def test_the_scan_sees_every_package_and_resolves_submodule_imports():
    modules = adrank_modules()
    assert {name.split(".")[0] for name in modules} == set(PACKAGES)
    imported_by = {importer: {found.imported for found in all_imports() if found.importer == importer}
                   for importer in ("components.train.training_run", "components.train.loop")}
    assert "components.train.loop" in imported_by["components.train.training_run"]  # `from components.train.loop import`
    assert "components.train.models" in imported_by["components.train.loop"]  # a package's __init__ exports names
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}) == [["a", "b", "c"], ["e"]]
    assert import_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_cycle_among_adrank_modules():
    edges: dict[str, set[str]] = {}
    for found in all_imports():
        # a KFP component's shipped source imports its own module's helpers by name (`pipelines.steps`)
        if found.importer != found.imported:
            edges.setdefault(found.importer, set()).add(found.imported)
    cycles = import_cycles(edges)
    assert cycles == [], "import cycles (each a group of modules that import each other):\n" + "\n".join(
        " ⇄ ".join(cycle) for cycle in cycles
    )


def test_no_adrank_module_is_imported_inside_a_function_outside_kfp_components_and_the_lazy_list():
    hidden = [found for found in all_imports() if found.function is not None and not allowed_lazy(found)]
    assert hidden == [], "imports inside functions (move them to the top, or add a reasoned LAZY_IMPORTS entry):\n" + (
        "\n".join(f"{f.importer}:{f.line} in {f.function}(): {f.imported}" for f in hidden)
    )
