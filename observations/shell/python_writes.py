"""The files a Python script writes, read from its source without running it: what an
agent's one-off script (``apply_fix.py``: read a file, change its lines, write it back)
names for writing. Exact or nothing, as everywhere in the shell reader: a path is named
only when the script spells it out, as a string, a name bound to strings, or
``Path(...)``, ``os.path.join(...)`` and ``/`` of those; a path computed any other way,
or code that does not parse, names nothing.

Writes are ``open(p, mode)`` with a mode that writes (``w``, ``a``, ``x``, ``+``),
``Path.write_text``/``write_bytes``/``open``, ``fileinput`` in place, matplotlib's
``savefig``, and the destination of ``shutil.copy*``/``move``, ``os.rename``/``replace``
and ``os.symlink``/``link``.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterator

_OPENERS = frozenset({"open", "io.open", "codecs.open"})
_PATHS = frozenset({"Path", "pathlib.Path", "PurePath", "pathlib.PurePath", "PosixPath", "pathlib.PosixPath"})
# Calls whose second argument is a path they make: copies, moves, links.
_DESTINATIONS = frozenset({"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "os.rename",
                           "os.replace", "os.symlink", "os.link"})
_FILEINPUT = frozenset({"fileinput.input", "fileinput.FileInput"})
_PATH_WRITES = frozenset({"write_text", "write_bytes"})
_WRITING = frozenset("wax+")

Paths = frozenset[str]
MAX_SOURCE_CHARS = 256_000  # an agent's one-off script is far smaller
MAX_VALUES = 16  # strings a name or a path may be: past this, not known


def python_writes(source: str) -> tuple[str, ...]:
    """The paths ``source`` writes, in the order it names them, as it spells them
    (relative to where it runs)."""
    if len(source) > MAX_SOURCE_CHARS:
        return ()
    try:
        tree = ast.parse(source)
        resolver = _Resolver(tree)
        calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)),
                       key=lambda node: (node.lineno, node.col_offset))
        return tuple(dict.fromkeys(posixpath.normpath(path) for call in calls
                                   for path in sorted(resolver.written_by(call))))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python, or nested past reading
        return ()


class _Resolver:
    def __init__(self, tree: ast.AST) -> None:
        # Each name's every binding: its possible values, or None once one is not known.
        # Names bound to names settle in a few rounds, each reading the last one's.
        self._bindings: dict[str, list[ast.expr | None]] = {}
        for name, value in _bindings(tree):
            self._bindings.setdefault(name, []).append(value)
        self.names: dict[str, Paths | None] = {}
        for _ in range(4):
            names = {name: _bounded(self._union(values)) for name, values in self._bindings.items()}
            if names == self.names:
                break
            self.names = names

    def _union(self, nodes: list[ast.expr | None]) -> Paths | None:
        found: Paths = frozenset()
        for node in nodes:
            values = self.values(node)
            if values is None:
                return None
            found |= values
        return found

    def written_by(self, call: ast.Call) -> Paths:
        name = _dotted(call.func)
        if name in _OPENERS or (isinstance(call.func, ast.Attribute) and call.func.attr == "open"
                                and self._is_path(call.func.value)):
            on_path = name not in _OPENERS
            target = call.func.value if on_path else _argument(call, 0, "file")
            mode = _argument(call, 0 if on_path else 1, "mode")
            return self._known(target) if self._writes(mode) else frozenset()
        if isinstance(call.func, ast.Attribute) and call.func.attr in _PATH_WRITES:
            return self._known(call.func.value)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "savefig":  # matplotlib's figures
            return self._known(_argument(call, 0, "fname"))
        if name in _DESTINATIONS:
            return self._known(_argument(call, 1, "dst"))
        if name in _FILEINPUT and any(k.arg == "inplace" and _truthy(k.value) for k in call.keywords):
            target = _argument(call, 0, "files")
            if isinstance(target, ast.List | ast.Tuple):
                return frozenset().union(*(self._known(item) for item in target.elts))
            return self._known(target)
        return frozenset()

    def values(self, node: ast.AST | None) -> Paths | None:
        """The strings ``node`` may hold, or None when that is not known."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return frozenset({node.value})
        if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
            return frozenset({"".join(str(v.value) for v in node.values)})
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Call) and _dotted(node.func) in _PATHS and len(node.args) >= 1:
            return self._joined(node.args)
        if isinstance(node, ast.Call) and _dotted(node.func) == "os.path.join" and node.args:
            return self._joined(node.args)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and self._is_path(node.left):
            return self._joined([node.left, node.right])
        return None

    def _joined(self, parts: list[ast.expr]) -> Paths | None:
        joined: Paths | None = frozenset({""})
        for part in parts:
            values = self.values(part)
            if values is None or joined is None:
                return None
            if len(joined) * len(values) > MAX_VALUES:
                return None
            joined = frozenset(posixpath.join(a, b) if a else b for a in joined for b in values)
        return joined

    def _known(self, node: ast.AST | None) -> Paths:
        values = self.values(node)
        return frozenset(v for v in values or () if v and "\0" not in v)

    def _writes(self, mode: ast.AST | None) -> bool:
        """Whether an open's mode writes (not given: it reads)."""
        return mode is not None and any(_WRITING & set(value) for value in self.values(mode) or ())

    def _is_path(self, node: ast.AST | None, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``node`` is a ``Path`` (``seen``: the names being asked about, so a
        name bound to itself, ``p = p / "x"``, ends the question)."""
        if isinstance(node, ast.Call):
            return _dotted(node.func) in _PATHS
        if isinstance(node, ast.BinOp):
            return isinstance(node.op, ast.Div) and self._is_path(node.left, seen)
        if isinstance(node, ast.Name) and node.id not in seen:
            return any(self._is_path(value, seen | {node.id}) for value in self._bindings.get(node.id, ()))
        return False


def _bounded(values: Paths | None) -> Paths | None:
    return None if values is None or len(values) > MAX_VALUES else values


def _bindings(tree: ast.AST) -> Iterator[tuple[str, ast.expr | None]]:
    """Every binding of a name in the script, with the value bound (None: one not known,
    as a parameter's, a ``with``'s or an augmented assignment's)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                value = node.value if isinstance(target, ast.Name) else None
                yield from ((n, value) for n in _names(target))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            simple = isinstance(node, ast.AnnAssign | ast.NamedExpr)
            yield from ((n, node.value if simple else None) for n in _names(node.target))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            items = node.iter.elts if isinstance(node.iter, ast.List | ast.Tuple | ast.Set) else None
            if isinstance(node.target, ast.Name) and items is not None:
                yield from ((node.target.id, item) for item in items)
            else:
                yield from ((n, None) for n in _names(node.target))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            yield from ((n, None) for n in _names(node.optional_vars))
        elif isinstance(node, ast.arg):
            yield node.arg, None
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield from ((alias.asname or alias.name.split(".")[0], None) for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, None


def _names(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    found = next((k.value for k in call.keywords if k.arg == keyword), None)
    return found if found is not None else call.args[position] if len(call.args) > position else None


def _truthy(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)
