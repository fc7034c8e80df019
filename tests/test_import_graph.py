"""adrank's own modules (foundation, configs, components, pipelines, ops) import each other without a cycle, and no
function body imports an adrank module to hide one.

The graph is read from the source with `ast`, nothing is imported: an edge A → B for every `import B` /
`from B import name` in A (at module level or inside a function; a module named by `from package import
module` is the edge's end). Imports under `if TYPE_CHECKING:` never run and are left out.

Function-level imports of adrank modules are allowed in two places only:
- the `pipelines` package: KFP lightweight components ship their function's source, which runs in the
  container with nothing but what it imports itself;
- `LAZY_IMPORTS` below: each named, each with the reason it is imported late (start-up time or an optional
  heavy dependency), never to break a cycle (the cycle check sees those edges too);
- `NOT_YET_MOVED`: a shrinking list of leftovers outside components/train, to be moved to module level.

Two floors stand under everything else:
- `foundation` (atomic writes, process supervision, the log-line format, UTC times, the /gcs/ mount) imports
  nothing of adrank's but itself;
- the local engine, `ops.spec_executor`, imports only itself and `foundation`: no step's code (`components`,
  `pipelines`, `configs`) and nothing else of `ops`; what a step needs from the engine arrives in its executor input
  or its environment (named in `foundation`).

The records one step hands another live in `components.contracts` (the floor under every step package):
- `components.contracts` imports only itself, `configs` and `foundation` (no step package, nothing above);
- a step package is a subpackage of `components` other than `contracts`; no step package imports a `Contract`
  subclass defined in another step package (such a record belongs in `components.contracts`), counting every import,
  `TYPE_CHECKING` ones included;
- every other import from one step package into another is listed in `CROSS_STEP_IMPORTS` with its reason (shared
  functions and file formats, not records), and the list holds nothing that is no longer imported.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("foundation", "configs", "components", "pipelines", "ops")
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
    ("ops.local_run.run", "pipelines.ranking"): "KFP and the DAG, only when a run starts",
    # Keras picks its backend once per process: a lane's trainer loads only after the step chose the backend
    ("components.train.lanes", "components.train.jax_lane.training_run"): "Keras's backend is chosen first",
    ("components.train.lanes", "components.train.training_run"): "Keras's backend is chosen first",
}

# Function-level imports in modules outside components/train, found when this test was written. None of them is
# needed to break a cycle (the cycle test counts their edges and finds none); move each to the top of its module, or
# into LAZY_IMPORTS with its reason, and delete its line here.
NOT_YET_MOVED: set[tuple[str, str]] = set()


CONTRACTS_PACKAGE = "components.contracts"
FOUNDATION_PACKAGE = "foundation"
ENGINE_PACKAGE = "ops.spec_executor"

# (importing step package, imported module of another step package) → why the step uses it. Records are never here:
# they live in components.contracts.
CROSS_STEP_IMPORTS: dict[tuple[str, str], str] = {
    # the ad logs are read through one package; preprocess is its reader
    ("preprocess", "components.logs.csv_shape"): "the CSV log layout, checked before the Beam job starts",
    ("preprocess", "components.logs.readers"): "the log files of a window, matched and read",
    ("preprocess", "components.logs.records"): "the logs' timestamp format, parsed and written",
    ("preprocess", "components.logs.split"): "where the time split falls in a log window",
    ("preprocess", "components.logs.synthetic"): "the synthetic logs' layout and their hidden ground truth",
    ("preprocess", "components.logs.text_files"): "the byte-accounted text reader's tally",
    # the block files preprocess writes and train reads: one encoding, written beside its writer
    ("train", "components.preprocess.block_format"): "the block file encoding (fingerprint, salt, holdout column)",
    ("train", "components.preprocess.vocabulary_file"): "the transform's vocabulary files, read back",
    ("train", "components.preprocess.tft_dependencies"): "tf.Transform's graph lookups in one pass, where the "
                                                          "export loads the transform graph",
    ("registry", "components.preprocess.attribution"): "the name of a task's label column in the examples",
    # the metrics and statistics library every step that judges a model uses
    ("train", "components.evaluate.metrics"): "log-loss, AUC, calibration of the trained model",
    ("train", "components.evaluate.task_metrics"): "a run's per-task metrics record built from the predictions",
    ("registry", "components.evaluate.run_statistics"): "the paired difference the promotion rule weighs",
    ("report", "components.evaluate.run_statistics"): "describe, Welch's test and paired changes over runs",
    ("report", "components.evaluate.calibration_interval"): "the calibration interval over runs",
    ("report", "components.evaluate.experiment_keys"): "the Experiment row key of a target",
    ("registry", "components.lineage.run_day"): "the day a decision is keyed by",
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    function: str | None  # the enclosing function, None at module level


@cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every test here."""
    return ast.parse(path.read_text(), str(path))


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

    visit(parsed(path), None)
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


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def imports_leaving(package: str, allowed: tuple[str, ...]) -> list[str]:
    """Each import of a module of `package` whose target is in none of the `allowed` packages."""
    return [f"{found.importer}:{found.line}: {found.imported}" for found in all_imports()
            if _within(found.importer, package) and not any(_within(found.imported, floor) for floor in allowed)]


def test_foundation_imports_nothing_of_adrank_but_itself():
    upward = imports_leaving(FOUNDATION_PACKAGE, (FOUNDATION_PACKAGE,))
    assert upward == [], "foundation is the floor under every package; it imports:\n" + "\n".join(upward)


def test_the_local_engine_imports_only_itself_and_foundation():
    assert any(_within(found.importer, ENGINE_PACKAGE) and _within(found.imported, FOUNDATION_PACKAGE)
               for found in all_imports())  # the scan sees the engine's imports
    leaving = imports_leaving(ENGINE_PACKAGE, (ENGINE_PACKAGE, FOUNDATION_PACKAGE))
    assert leaving == [], "ops.spec_executor stands alone (a step's needs reach it as arguments, the executor " \
        "input or an environment variable named in foundation); it imports:\n" + "\n".join(leaving)


def step_package(module: str) -> str | None:
    """The step package a module belongs to (`components.<step>…`), None outside them and in the contracts."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "components" or not (ROOT / "components" / parts[1]).is_dir():
        return None
    return None if module.startswith(CONTRACTS_PACKAGE) else parts[1]


def contract_classes(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Per module, the classes deriving from `Contract` (directly or through another such class, by name)."""
    classes = {module: [node for node in ast.walk(parsed(path))
                        if isinstance(node, ast.ClassDef)] for module, path in modules.items()}
    names = {"Contract"}
    while True:
        found = {node.name for nodes in classes.values() for node in nodes
                 if any(isinstance(base, ast.Name) and base.id in names for base in node.bases)}
        if found <= names:
            break
        names |= found
    return {module: {node.name for node in nodes if node.name in names and node.name != "Contract"}
            for module, nodes in classes.items()}


def imported_names(modules: dict[str, Path]) -> list[tuple[str, str, str]]:
    """(importer, imported module, name) for every `from module import name` of an adrank module, anywhere."""
    found = []
    for importer, path in modules.items():
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                found += [(importer, node.module, alias.name) for alias in node.names]
    return found


def contracts_across_steps(names: list[tuple[str, str, str]], contracts: dict[str, set[str]]) -> list[str]:
    """Each import of a step package's `Contract` record into another step package."""
    return [f"{importer} imports {name} from {module}" for importer, module, name in names
            if step_package(importer) and step_package(module) not in (None, step_package(importer))
            and name in contracts.get(module, set())]


def test_the_contract_scan_sees_records_and_would_flag_one_imported_across_steps():
    modules = adrank_modules()
    contracts = contract_classes(modules)
    assert {"Manifest", "BlockLayout"} <= contracts["components.contracts.manifest"]
    assert {"RunSummary", "TaskMetrics"} <= contracts["components.contracts.run_summary"]
    assert "RunRecord" in contracts["ops.local_run.record"]
    assert step_package("components.train.jax_lane.block_reader") == "train"
    assert step_package("components.contracts.manifest") is None and step_package("components.progress") is None
    made_up = [("components.registry.promotion_rule", "components.report.day_series", "DaySeries"),
               ("components.report.html", "components.report.day_series", "DaySeries"),
               ("components.registry.promotion_rule", "components.report.day_series", "render_markdown"),
               ("ops.local_run.replay", "components.report.day_series", "DaySeries")]
    assert contracts_across_steps(made_up, contracts) == [
        "components.registry.promotion_rule imports DaySeries from components.report.day_series"]


def test_the_contracts_package_imports_only_itself_configs_and_foundation():
    upward = [f"{found.importer}:{found.line}: {found.imported}" for found in all_imports()
              if found.importer.startswith(CONTRACTS_PACKAGE)
              and not found.imported.startswith((CONTRACTS_PACKAGE, "configs", FOUNDATION_PACKAGE))]
    assert upward == [], "components.contracts is the floor under the steps; it imports:\n" + "\n".join(upward)


def test_no_step_package_imports_another_step_packages_record():
    modules = adrank_modules()
    crossing = contracts_across_steps(imported_names(modules), contract_classes(modules))
    assert crossing == [], "records that cross steps belong in components.contracts:\n" + "\n".join(crossing)


def test_every_other_import_across_step_packages_is_listed_with_its_reason():
    seen = {(step_package(found.importer), found.imported) for found in all_imports()
            if step_package(found.importer) and step_package(found.imported) not in (None, step_package(found.importer))}
    unlisted = sorted(seen - CROSS_STEP_IMPORTS.keys())
    stale = sorted(CROSS_STEP_IMPORTS.keys() - seen)
    assert unlisted == [], f"imports across step packages (a record: move it to components.contracts; else list it in " \
        f"CROSS_STEP_IMPORTS with its reason): {unlisted}"
    assert stale == [], f"CROSS_STEP_IMPORTS entries no longer imported (delete them): {stale}"
