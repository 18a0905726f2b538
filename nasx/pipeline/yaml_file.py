"""Reading a pipeline file: the bytes as UTF-8 text, YAML's safe loader with aliases bounded and
duplicate keys refused, then :func:`~nasx.pipeline.schema.validate`."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from .schema import PipelineError, shown, validate

MAX_YAML_NODES = 100_000
"""The most values a pipeline file may hold once its aliases are expanded. A real file holds
tens; a 20-line alias bomb ("billion laughs") holds billions and is refused at once."""


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and :func:`validate` a pipeline YAML file.

    The YAML is read with the safe loader (no tags construct objects), aliases may expand to at
    most :data:`MAX_YAML_NODES` values, and a key written twice in one mapping is refused with
    both lines (YAML would silently keep the last). Every error is a :class:`PipelineError`
    naming the file, except a missing file (``FileNotFoundError``).
    """
    text = _read_text(path)
    try:
        return validate(_parse_yaml(text))
    except PipelineError as e:
        raise PipelineError(f"{path}: {e}") from None


def _read_text(path: str | os.PathLike[str]) -> str:
    file = Path(path)
    if file.is_dir():
        raise PipelineError(f"{path} is a directory: give the pipeline's YAML file inside it")
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such pipeline file") from None
    except OSError as e:
        raise PipelineError(f"{path}: cannot read the pipeline file ({e.strerror or e})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise PipelineError(
            f"{path}: not a UTF-8 text file (byte {data[e.start]:#04x} at offset {e.start}); a "
            "pipeline is a YAML text file"
        ) from None


def _parse_yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_loader())  # a SafeLoader subclass
    except yaml.YAMLError as e:
        raise PipelineError(f"not valid YAML (or uses tags, which are refused): {e}") from None
    except RecursionError:
        raise PipelineError("not a pipeline: its lists or mappings are nested too deeply") from None


@functools.lru_cache(maxsize=1)
def _loader() -> type:
    """``yaml.SafeLoader`` that bounds alias expansion and refuses duplicate keys."""
    import yaml

    class PipelineLoader(yaml.SafeLoader):
        def get_single_node(self) -> Any:
            node = super().get_single_node()
            if node is not None:
                _check_expansion(node)
            return node

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            _refuse_duplicate_keys(self, node)
            return super().construct_mapping(node, deep=deep)

    return PipelineLoader


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root: Any) -> None:
    """Refuse a document whose aliases expand to more than :data:`MAX_YAML_NODES` values, or
    refer to themselves. Counted on the node graph (each shared node once), so the check is
    as fast as the file is short."""
    expanded: dict[int, int] = {}  # id(node) -> values under it once aliases are expanded
    entered: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:  # depth-first, children before parents, without recursion
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            entered.discard(key)
            expanded[key] = 1 + sum(expanded[id(c)] for c in _children(node))
            if expanded[key] > MAX_YAML_NODES:
                line = node.start_mark.line + 1
                raise PipelineError(
                    f"line {line}: aliases expand to more than {MAX_YAML_NODES} values (an alias "
                    "bomb?); a pipeline file holds far fewer"
                )
            continue
        if key in expanded:
            continue
        if key in entered:
            line = node.start_mark.line + 1
            raise PipelineError(f"line {line}: an alias refers to itself (a recursive structure)")
        entered.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in expanded)


def _refuse_duplicate_keys(loader: Any, node: Any) -> None:
    import yaml

    first_line: dict[Any, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue  # merge keys (<<) may repeat what they merge: explicit keys win there
        key = loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        if key in first_line:
            raise PipelineError(
                f"line {line}: duplicate key {shown(key)} (first at line {first_line[key]}); "
                "YAML would keep only the last one: remove or rename one of them"
            )
        first_line[key] = line
