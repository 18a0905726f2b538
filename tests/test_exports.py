"""A name a package exports stays that object after any of its submodules is imported.

Importing ``pkg.sub`` sets the attribute ``pkg.sub`` to the module. A lazy package that also
exports a function ``sub`` from that module would then hand its users the module or the
function depending on what was imported first (``nasx.plot.cell_graph`` did, before its module
became ``nasx.plot.graph``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import nasx

SKIP = ("nasx.dashboard", "nasx.cli")  # optional extras and entry points, no package exports


def test_exported_names_survive_importing_every_submodule():
    packages = ["nasx"]
    for info in pkgutil.walk_packages(nasx.__path__, "nasx."):
        if any(p.startswith("_") for p in info.name.split(".")) or info.name.startswith(SKIP):
            continue
        importlib.import_module(info.name)  # every submodule loaded, as a long session would
        if info.ispkg:
            packages.append(info.name)
    clashes = []
    for package in packages:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", []):
            value = getattr(module, name)
            meant = getattr(value, name, None) if inspect.ismodule(value) else None
            if meant is not None and not inspect.ismodule(meant):  # the module, not its `name`
                clashes.append(f"{package}.{name}")
    assert not clashes, f"exported names replaced by their submodule: {clashes}"
