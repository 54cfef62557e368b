"""The map matches the house: docs/ARCHITECTURE.md's layers, checked against the code's imports.

Every import between two of contend's units (a subpackage or a top-level module of `contend`,
and the folders installed as contend.impl, contend.models and contend.loadtests) must run from
a higher layer to a lower one; every unit must be on the map; `impl` and `models` import nothing
of contend's but themselves. Function-level imports count as much as module-level ones, and so
does a module named to importlib.import_module (or __import__) by a literal, or by an f-string
whose literal head names it (`f"contend.commands.{name}"` imports from contend.commands).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Folder → the import name it installs as.
FOLDERS = {
    "contend": "contend",
    "impl": "contend.impl",
    "models": "contend.models",
    "loadtests": "contend.loadtests",
}


def layers() -> list[set[str]]:
    """The numbered list under "## Layers" in docs/ARCHITECTURE.md, top layer first."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    found = [
        {name.strip(" `") for name in match.group(1).split("·")}
        for match in re.finditer(r"^\d+\. (.+)$", section, re.MULTILINE)
    ]
    assert found, "docs/ARCHITECTURE.md has no numbered list of layers under '## Layers'"
    return found


def unit_of(module: str) -> str | None:
    """The unit a dotted module name belongs to (None: not contend's)."""
    parts = module.split(".")
    if parts[0] != "contend" or len(parts) < 2:
        return None
    return parts[1]


def imports() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) → the files where that import is written."""
    edges: dict[tuple[str, str], list[str]] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            source = unit_of(".".join([package, *parts]).removesuffix(".__init__")) or parts[0]
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    # `from contend import interrupt` imports the unit `interrupt`
                    names = (
                        [f"contend.{alias.name}" for alias in node.names]
                        if node.module == "contend"
                        else [node.module]
                    )
                elif isinstance(node, ast.Call) and (named := imported_by_name(node)) is not None:
                    names = [named]
                else:
                    continue
                for name in names:
                    target = unit_of(name)
                    if target is not None and target != source:
                        edges.setdefault((source, target), []).append(str(path.relative_to(ROOT)))
    return edges


def imported_by_name(call: ast.Call) -> str | None:
    """The module an importlib.import_module or __import__ call names, as far as the code says it
    (a literal, or an f-string's literal head), or None."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def test_an_import_by_name_is_read():
    """As the command line imports the command it runs."""
    for code, unit in [
        ('importlib.import_module(f"contend.commands.{name}")', "commands"),
        ('__import__("contend.cli")', "cli"),
        ("importlib.import_module(name)", None),
    ]:
        call = ast.parse(code).body[0].value
        assert isinstance(call, ast.Call)
        named = imported_by_name(call)
        assert (unit_of(named) if named else None) == unit, code


def units() -> set[str]:
    """Every unit: contend's subpackages and top-level modules, and the installed folders."""
    found = {p.stem for p in (ROOT / "contend").glob("*.py") if p.stem != "__init__"}
    found |= {p.name for p in (ROOT / "contend").iterdir() if (p / "__init__.py").is_file()}
    return found | {"impl", "models", "loadtests"}


def test_every_unit_is_on_the_map_once():
    mapped = [name for layer in layers() for name in layer]
    assert sorted(set(mapped)) == sorted(mapped), "a unit is on two layers"
    assert set(mapped) == units(), (
        f"not on the map: {sorted(units() - set(mapped))}; on the map but not in the code: "
        f"{sorted(set(mapped) - units())}"
    )


def test_no_import_runs_back_up_or_across():
    level = {name: i for i, layer in enumerate(layers()) for name in layer}
    wrong = [
        f"{source} (layer {level[source] + 1}) imports {target} (layer {level[target] + 1}) in {', '.join(where)}"
        for (source, target), where in sorted(imports().items())
        if source in level and target in level and level[target] <= level[source]
    ]
    assert not wrong, "imports against docs/ARCHITECTURE.md's layers:\n" + "\n".join(wrong)


def test_impl_and_models_import_nothing_of_contends():
    for source in ("impl", "models"):
        others = sorted(target for (s, target) in imports() if s == source)
        assert others == [], f"{source} imports {others}"
