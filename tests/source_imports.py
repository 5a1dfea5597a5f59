"""What a Python source imports, read from its syntax tree: the one reader behind the rules
on imports that import-linter cannot see (a module named in a string, one loaded from a
file path), used by the house rules and the migrations check."""

from __future__ import annotations

import ast

PATH_LOADER = "<path loader>"
_PATH_LOADERS = {"spec_from_file_location", "run_path", "SourceFileLoader", "load_source"}
_NAME_LOADERS = {"import_module", "__import__", "import_string"}


def imports(source: str, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``source``: a module, a name taken from one
    (``from a import b`` gives ``a`` and ``a.b``), a relative import resolved from
    ``package``, a constant handed to ``import_module``, ``__import__`` or
    ``import_string``, and ``PATH_LOADER`` for a module loaded from a file path, which no
    rule on names can see through."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".") if package else []
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}".lstrip(".")) for alias in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called in _PATH_LOADERS:
                found.append((node.lineno, PATH_LOADER))
            elif called in _NAME_LOADERS and node.args and isinstance(node.args[0], ast.Constant):
                found.append((node.lineno, str(node.args[0].value)))
    return found
