"""The API reference, generated at build time from the ``__all__`` of nasx's public modules.

Public modules: ``nasx``, every package under ``nasx/`` and every top-level module with an
``__all__`` (no name starting with ``_``). Each public name is documented once, at its *home*:
the shallowest public subpackage that exports it and whose name prefixes the module that defines
it, where users import it from (``LayerChoice`` lives in ``nasx.space``, not ``nasx``;
``DARTS`` in ``nasx.strategy``, not ``nasx.strategy.oneshot``). Every other module that exports it
gets a short entry with the same anchor form (``nasx.LayerChoice``) pointing to the home, so
each (module, name) pair of every ``__all__`` has its own anchor; tests/docs/test_api_pages.py
checks that against the built site.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import nasx

OUT_DIR = "api"  # under docs/, generated, not committed


def public_modules() -> list[str]:
    """Names of nasx's public modules, ``nasx`` first, then sorted."""
    names = ["nasx"]
    for info in pkgutil.walk_packages(nasx.__path__, "nasx."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or parts[-1] == "cli":
            continue
        if info.ispkg or len(parts) == 2:
            module = importlib.import_module(info.name)
            if hasattr(module, "__all__"):
                names.append(info.name)
    for name in list(names):  # modules a public __all__ exports (nasx.hub.modules: NNI's path)
        module = importlib.import_module(name)
        for attr in module.__all__:
            value = getattr(module, attr)
            if (
                inspect.ismodule(value)
                and hasattr(value, "__all__")
                and value.__name__ not in names
            ):
                names.append(value.__name__)
    return ["nasx", *sorted(names[1:])]


@dataclass
class Entry:
    module: str
    name: str
    obj: object
    home: str  # the module whose page documents it in full

    @property
    def full(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def kind(self) -> str:
        obj = self.obj
        if inspect.isclass(obj):
            return "exception" if issubclass(obj, BaseException) else "class"
        if callable(obj) and (inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            return "function"
        if callable(obj) and hasattr(obj, "__wrapped__"):
            return "function"
        return "data"


def _defining_module(obj: object) -> str | None:
    module = getattr(obj, "__module__", None)
    if inspect.isclass(obj) or inspect.isfunction(obj) or callable(obj):
        return module if isinstance(module, str) else None
    return None


def entries() -> dict[str, list[Entry]]:
    """For each public module, its ``__all__`` as entries (in ``__all__`` order)."""
    modules = public_modules()
    exported: dict[int, list[str]] = {}  # id(obj) -> modules exporting it
    table: dict[str, list[tuple[str, object]]] = {}
    for name in modules:
        module = importlib.import_module(name)
        table[name] = []
        for attr in module.__all__:
            obj = getattr(module, attr)
            table[name].append((attr, obj))
            exported.setdefault(id(obj), []).append(name)
    result: dict[str, list[Entry]] = {}
    for name, pairs in table.items():
        result[name] = []
        for attr, obj in pairs:
            candidates = exported[id(obj)]
            defined = _defining_module(obj)
            if inspect.ismodule(obj):
                home = obj.__name__ if obj.__name__ in modules else name
            elif defined is None:  # data: the deepest module exporting it
                home = max(candidates, key=lambda m: (m.count("."), -candidates.index(m)))
            else:
                # the shallowest subpackage that exports it: where users import it from
                # (``nasx.strategy.DARTS``, ``nasx.space.LayerChoice``), not the top-level alias
                prefixes = [m for m in candidates if defined == m or defined.startswith(m + ".")]
                pool = prefixes or candidates
                home = min(pool, key=lambda m: (m == "nasx", m.count("."), candidates.index(m)))
            # a name exported under another name (an alias) is documented where it is exported
            if getattr(obj, "__name__", attr) != attr and not inspect.ismodule(obj):
                home = name
            result[name].append(Entry(name, attr, obj, home))
    return result


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def _page(module: str, items: list[Entry]) -> str:
    lines = [
        f"# `{module}`",
        "",
        "```{eval-rst}",
        f".. automodule:: {module}",
        "   :no-members:",
        "",
    ]
    if items:
        lines += [".. autosummary::", "   :nosignatures:", ""]
        lines += [f"   {e.name}" for e in items if not inspect.ismodule(e.obj)]
        lines.append("")
    for e in items:
        if inspect.ismodule(e.obj):
            target = e.obj.__name__
            text = f":mod:`{target}`" if target in _PUBLIC else f"``{target}``"
            # a subpackage: its own page documents it (indexing the entry here would clash)
            lines += [
                f".. py:data:: {e.name}",
                f"   :module: {module}",
                "   :no-index:",
                "",
                f"   The module {text}.",
                "",
            ]
            continue
        if e.home == module:
            directive = {"class": "autoclass", "exception": "autoexception"}.get(e.kind)
            if directive:
                lines += [f".. {directive}:: {e.full}", "   :members:", "   :show-inheritance:", ""]
            elif e.kind == "function":
                lines += [f".. autofunction:: {e.full}", ""]
            else:
                lines += [f".. autodata:: {e.full}"]
                if len(repr(e.obj)) > 70:
                    lines.append("   :no-value:")
                lines.append("")
        else:
            role = {"class": "class", "exception": "exc", "function": "func"}.get(e.kind, "data")
            kind = {"class": "class", "exception": "exception", "function": "function"}.get(
                e.kind, "data"
            )
            home_name = f"{e.home}.{e.name}"
            lines += [
                f".. py:{kind}:: {e.name}",
                f"   :module: {module}",
                "",
                f"   Re-exported from :mod:`{e.home}`: see :{role}:`{home_name}`.",
                f"   {_first_line(e.obj)}" if _first_line(e.obj) else "",
                "",
            ]
    lines += ["```", ""]
    return "\n".join(lines)


_PUBLIC: set[str] = set()


def write_pages(srcdir: Path) -> list[str]:
    """Write docs/api/*.md (only files whose text changed, for incremental builds)."""
    table = entries()
    _PUBLIC.update(table)
    out = srcdir / OUT_DIR
    out.mkdir(exist_ok=True)
    pages = {f"{m}.md": _page(m, items) for m, items in table.items()}
    index = ["# API reference", "", "Every public name of nasx, one page per public module.", ""]
    index += ["```{toctree}", ":maxdepth: 1", "", *[f"{m}" for m in table], "```", ""]
    pages["index.md"] = "\n".join(index)
    for stale in out.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        path = out / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return list(table)


def homes() -> dict[int, str]:
    """``id(obj) -> 'home.name'``: where each public object is documented in full."""
    return {id(e.obj): f"{e.home}.{e.name}" for items in entries().values() for e in items
            if e.home == e.module and not inspect.ismodule(e.obj)}  # fmt: skip


def public_names() -> set[str]:
    """Every ``module.name`` of every public ``__all__`` (what the site must have an anchor for)."""
    return {e.full for items in entries().values() for e in items}


def documented_here() -> set[str]:
    """The ``module.name`` of every entry documented in full (autodoc runs on these)."""
    return {e.full for items in entries().values() for e in items if e.home == e.module}
