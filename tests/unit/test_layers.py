"""The harness's folders are its pipeline: each stage imports only from the
stages below it (pmr_testbed/__init__.py lists them), and no module imports
itself back through others."""

import ast
from pathlib import Path

import pmr_testbed

PKG = Path(pmr_testbed.__file__).parent
# bottom to top; "" is the package's own modules (errors, paths, ...), cli the top
LAYERS = ["", "config", "guest", "analysis", "report", "workflows", "cli"]


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PKG).with_suffix("").parts)


def _layer(module: str) -> int:
    if module == "cli":
        return LAYERS.index("cli")
    head, _, rest = module.partition(".")
    return LAYERS.index(head) if rest else 0


def _imports(source: str, module: str) -> set[str]:
    """The package's modules that `module` (its `source`) imports, as names
    relative to the package."""
    here = module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here[: len(here) - node.level + 1]
        elif node.module and node.module.split(".")[0] == "pmr_testbed":
            base, node.module = [], node.module.partition(".")[2] or None
        else:
            continue
        parts = base + (node.module.split(".") if node.module else [])
        for alias in node.names:
            candidate = ".".join([*parts, alias.name])
            if (PKG / f"{candidate.replace('.', '/')}.py").exists():
                found.add(candidate)
            elif parts:
                found.add(".".join(parts))
    return found


def _graph() -> dict[str, set[str]]:
    return {
        _module_name(p): _imports(p.read_text(), _module_name(p))
        for p in PKG.rglob("*.py")
        if p.name != "__init__.py"
    }


def test_every_module_has_a_known_layer():
    for module in _graph():
        assert module == "cli" or module.partition(".")[0] in LAYERS or "." not in module


def test_stages_import_only_from_lower_ones():
    wrong = [
        f"{module} imports {dep}"
        for module, deps in _graph().items()
        for dep in deps
        if _layer(dep) > _layer(module)
    ]
    assert wrong == []


def test_no_import_cycle():
    graph = _graph()
    done: set[str] = set()

    def visit(module: str, stack: list[str]) -> None:
        assert module not in stack, " -> ".join([*stack[stack.index(module) :], module])
        if module in done:
            return
        for dep in sorted(graph.get(module, ())):
            visit(dep, [*stack, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_the_checker_sees_an_upward_import():
    source = "from ..workflows import campaign\nfrom ..config.spec import RECLAIM_THREADS\n"
    deps = _imports(source, "analysis.x")
    assert deps == {"workflows.campaign", "config.spec"}
    assert _layer("workflows.campaign") > _layer("analysis.x") > _layer("config.spec")
