"""Every ```python block of README.md runs as written, top to bottom, in one namespace."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
# what README code blocks print, as their comments say: each must be in the README and the output
PRINTED = [
    "76 of 96 archs satisfy the constraints (exact, by enumeration)",  # count_valid()
    "3887038 311579072",  # arch_cost(MnasNet(), MNASNET_A1, ...): params, MACs
    "soft MnasNet reward: 0.7438",  # the README's comment; the output is the number
]


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each fenced ```python block.

    Example:
        >>> python_blocks("x\\n```python\\na = 1\\n```\\n```bash\\nls\\n```\\n")
        [(3, 'a = 1\\n')]
    """
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        blocks.append((text[: match.start()].count("\n") + 2, match.group(1)))
    return blocks


def test_readme_has_python_blocks():
    assert len(python_blocks(README.read_text())) >= 4


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # experiments write nasx_experiments/ under the cwd
    namespace: dict = {"__name__": "readme"}
    for line, code in python_blocks(README.read_text()):
        try:
            exec(compile(code, f"README.md:{line}", "exec"), namespace)
        except Exception as e:  # name the block, keep the traceback
            pytest.fail(f"README.md block at line {line} failed: {type(e).__name__}: {e}")
    out = capsys.readouterr().out
    assert "torch.Size([2, 10])" in out  # the space block's printed shape
    assert isinstance(namespace["best_arch"], dict)  # the multi-trial block's export
    assert "normal/op_2_0" in namespace["probs"]  # the one-shot block's DARTS probabilities
    for claim in PRINTED:
        assert claim in README.read_text(), f"README.md no longer says {claim!r}"
        assert claim.rpartition(": ")[2] in out, (
            f"README.md says {claim!r}; the block printed\n{out}"
        )
    # the space block's comment gives the arch that space.sample(seed=0) returns
    comment = re.search(r"arch = space\.sample\(\s*seed=0\s*\)\s*# (\{.*\})", README.read_text())
    assert comment, "README.md's space block no longer shows the sampled arch"
    space = namespace["search_space"](namespace["Net"]())
    assert space.sample(seed=0) == ast.literal_eval(comment.group(1))
