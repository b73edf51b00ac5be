#!/usr/bin/env python3
"""Checks dclab's rooms stay in their levels (docs/architecture.md): every import of a dclab
module, also inside functions, names a module on its own level or below, and only
dclab/cli/ imports click. Prints each violation with file and line; exit 1 if any."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# Bottom to top; a module's level is that of its first path part under dclab/.
LEVELS = {
    "paths": 0, "units": 0, "batch": 0, "lte": 0, "nr": 0, "radio": 0, "files": 0, "errors": 0,
    "scenario": 1, "traces": 1, "trace_levels": 1,
    "endpoints": 2,
    "flowplan": 3,
    "dcemu": 4,
    "analysis": 5,
    "testbed": 6,
    "experiments": 7,
    "campaign": 8,
    "cli": 9,
    "__init__": 0, "__main__": 10,
}


def room(module: str) -> str:
    """'dclab.testbed.netns' -> 'testbed'; 'dclab' -> '__init__'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path, package_root: Path) -> str:
    rel = path.relative_to(package_root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dclab modules an import statement names, made absolute."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "dclab"]
    if isinstance(node, ast.ImportFrom):
        if node.level == 0:
            base = node.module or ""
        else:
            pkg = module.split(".") if is_package else module.split(".")[:-1]
            pkg = pkg[: len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([node.module] if node.module else []))
        if base.split(".")[0] != "dclab":
            return []
        if node.module is None:  # from . import a, b: modules, or names defined in the package
            return [f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base for a in node.names]
        return [base]
    return []


PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def _is_module(name: str) -> bool:
    p = PACKAGE_PARENT.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def check(package_root: Path) -> list[str]:
    problems = []
    for path in sorted(package_root.rglob("*.py")):
        module = module_name(path, package_root)
        mine = room(module)
        level = LEVELS.get(mine)
        if level is None:
            problems.append(f"{path}: room {mine!r} has no level in scripts/check_levels.py")
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if mine != "cli" and any(n.split(".")[0] == "click" for n in names):
                    problems.append(f"{path}:{node.lineno}: imports click (only dclab/cli/ may)")
                for target in imported(node, module, path.name == "__init__.py"):
                    theirs = room(target)
                    if theirs == mine:
                        continue
                    their_level = LEVELS.get(theirs)
                    if their_level is None or their_level > level:
                        problems.append(f"{path}:{node.lineno}: {module} (level {level}) imports {target} "
                                        f"(level {their_level}): upwards")
    return problems


def main() -> int:
    global PACKAGE_PARENT
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE_PARENT / "dclab"
    PACKAGE_PARENT = root.parent
    problems = check(root)
    for p in problems:
        print(p)
    print(f"check_levels: {len(problems)} upward import(s) in {root}" if problems else f"check_levels: {root} ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
