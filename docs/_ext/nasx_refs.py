"""Resolve a Python cross-reference to the page that documents its object, or fail the build.

Docstrings and signatures name objects where they are defined (``nasx.hardware.cost.arch_cost``,
``nasx.trial.Trial``) or by their short name (``:func:`choice```), while the API reference
documents each public object once, at its public home (``nasx.hardware.arch_cost``). When Sphinx
cannot find a target, this handler looks it up:

1. the dotted name imported: a public object -> its home's anchor; a module -> the page of the
   nearest public package that contains it;
2. a short name: the one public object of that name (the current module's first, then any).

A target that is neither stays unresolved, and ``-W`` fails the build on it, as it should: a
typo, a name that no longer exists, or an internal object a public signature leaks. Only names
that are private by spelling (a ``_`` segment, a TypeVar) render as plain text.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from functools import cache

import nasx_api
from sphinx.application import Sphinx


@cache
def _tables() -> tuple[dict[int, str], dict[str, list[str]], list[str]]:
    homes = nasx_api.homes()
    by_short: dict[str, list[str]] = {}
    for full in sorted(set(homes.values())):
        by_short.setdefault(full.rsplit(".", 1)[1], []).append(full)
    return homes, by_short, nasx_api.public_modules()


def _import(dotted: str) -> object | None:
    """The object a dotted name denotes (module, then attributes), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _private(dotted: str, obj: object) -> bool:
    return any(p.startswith("_") for p in dotted.split(".")) or isinstance(obj, typing.TypeVar)


def lookup(target: str, current_module: str | None) -> tuple[str, str] | None:
    """(role, target) that documents ``target``, or None. Roles: 'obj' or 'mod'.

    Example:
        >>> lookup("nasx.space.choice.Categorical", None)
        ('obj', 'nasx.space.Categorical')
        >>> lookup("nasx.hardware.cost", None)
        ('mod', 'nasx.hardware')
    """
    homes, by_short, modules = _tables()
    target = target.lstrip("~.")
    candidates = [target]
    if current_module and not target.startswith("nasx"):
        candidates.insert(0, f"{current_module}.{target}")
    for dotted in candidates:
        obj = _import(dotted) if dotted.startswith("nasx") else None
        if obj is None:
            continue
        if inspect.ismodule(obj):
            parents = [m for m in modules if dotted == m or dotted.startswith(m + ".")]
            return ("mod", max(parents, key=len)) if parents else None
        if id(obj) in homes:
            return "obj", homes[id(obj)]
        owner, _, attr = dotted.rpartition(".")  # a method or attribute of a public class
        owner_obj = _import(owner)
        if inspect.isclass(owner_obj) and id(owner_obj) in homes:
            return "obj", f"{homes[id(owner_obj)]}.{attr}"
    short = target.rsplit(".", 1)[-1]
    found = by_short.get(short, [])
    if current_module:
        mine = [f for f in found if f.rsplit(".", 1)[0] == current_module]
        found = mine or found
    if len(found) == 1:
        return "obj", found[0]
    return None


def missing_reference(app: Sphinx, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    current = node.get("py:module")
    if not target.startswith(("nasx", "~nasx", ".")) and "." in target.lstrip("~."):
        first = target.lstrip("~.").split(".")[0]
        if first not in {"nasx", *[m.rsplit(".", 1)[-1] for m in _tables()[2]]}:
            if current is None or not _import(f"{current}.{first}"):
                return None  # another project's name (torch.nn...): nitpick_ignore decides
    found = lookup(target, current)
    domain = env.domains["py"]
    if found is not None:
        role, resolved = found
        return domain.resolve_xref(env, node["refdoc"], app.builder, role, resolved, node, contnode)
    obj = _import(target.lstrip("~.")) if target.lstrip("~.").startswith("nasx") else None
    if obj is not None and _private(target, obj):
        return contnode  # an internal type in a signature: plain text, no link
    return None


def setup(app: Sphinx) -> dict:
    app.connect("missing-reference", missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
