# Two commands for a fresh machine: `make demo` runs the main job, `make test` the test suite.
# Each creates .venv and installs nasx with its dev extras on first use, pinned to the versions
# in constraints/py<X.Y>.txt (the ones the suite last passed with). `make test-latest` runs the
# suite on the newest releases instead, in .venv-latest, to see breakage before users do.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
CONSTRAINTS := constraints/py$(PYVER).txt
# -c FILE when a constraints file exists for this Python, else nothing (and a note at install).
PIN := $(if $(wildcard $(CONSTRAINTS)),-c $(CONSTRAINTS),)
PIP_QUIET := --quiet --disable-pip-version-check
# pip --quiet still prints setuptools' editable-install banner and, on machines whose pip.conf
# names local indexes that are absent, one warning per package: neither is news to a user.
# (pipefail is not set, so a failing pip still fails at the import check below.)
PIP_NOISE_FILTER := grep -v -e "^ *$$" -e BuildBackendWarning -e "^ *!!" -e "^ *\*\*\*" \
	-e "Please be careful" -e "name as your package" -e "with strategy, WheelFile" \
	-e "is ignored: it is neither a file nor a directory" || true

.PHONY: demo docs docs-serve test test-slow test-all test-latest lint format typecheck constraints clean-venv

$(STAMP): pyproject.toml $(wildcard $(CONSTRAINTS))
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing nasx and its dependencies into $(VENV) ($(if $(PIN),pinned by $(CONSTRAINTS),no constraints file for Python $(PYVER): newest releases)); the first time takes a few minutes"
	@$(PY) -m pip install $(PIP_QUIET) --upgrade pip 2>&1 | $(PIP_NOISE_FILTER)
	@$(PY) -m pip install $(PIP_QUIET) $(PIN) -e ".[dev]" 2>&1 | $(PIP_NOISE_FILTER)
	@$(PY) -c "import nasx, torch, pytorch_lightning as pl; print(f'installed: torch {torch.__version__}, pytorch-lightning {pl.__version__}')"
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) tutorials/hello_nas.py

# The documentation site, into docs/_build/html (not committed): the pages of docs/, the API
# reference generated from the docstrings, the tutorials executed in fast mode. Warnings are
# errors (-W, nitpicky in docs/conf.py); --keep-going lists them all before failing. The site is
# built afresh (a stale page would keep old objects and links); the executed tutorials stay
# cached (docs/_build/.jupyter_cache): a rebuild runs only the tutorials that changed.
DOCS_OUT := docs/_build/html

docs: $(STAMP)
	rm -rf $(DOCS_OUT)
	$(PY) -m sphinx -b html -W --keep-going -q docs $(DOCS_OUT)
	@echo "the site: $(DOCS_OUT)/index.html (make docs-serve serves it on http://127.0.0.1:8000)"

docs-serve: docs
	$(PY) -m http.server --directory $(DOCS_OUT) --bind 127.0.0.1 8000

# The suite runs on every core with pytest-xdist; each test file stays on one worker, in order
# (tests/conftest.py groups them), so module fixtures and the shared Ray cluster are built once.
XDIST := -n auto --dist loadgroup

test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" $(XDIST)
	@# Two slow packaging checks that run here too: every module imported with POSIX-only
	@# modules hidden, and nasx installed without extras running the README's search.
	$(PY) -m pytest -q tests/test_portability.py tests/test_install.py

# The slow tier alone (end to end, DDP, Ray driver kill, the crash matrix, real-data tutorials):
# what `make test` leaves out, less the three slow checks that `make test` and `make typecheck`
# run already. CI runs it after `make test`.
ALREADY_RUN := --deselect tests/test_portability.py::test_nasx_imports_and_runs_without_posix_only_modules \
	--deselect tests/test_install.py::test_nasx_without_extras_runs_the_readmes_multi_trial_block \
	--deselect tests/test_typing.py::test_a_users_mypy_sees_real_types_and_no_any

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow $(XDIST) $(ALREADY_RUN)

test-all: $(STAMP)
	$(PY) -m pytest -q $(XDIST)

# The suite on the newest releases of everything (no constraints), in its own venv.
test-latest:
	@test -x .venv-latest/bin/python || $(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install $(PIP_QUIET) --upgrade pip
	.venv-latest/bin/python -m pip install $(PIP_QUIET) --upgrade --upgrade-strategy eager -e ".[dev]"
	.venv-latest/bin/python -m pip freeze --exclude-editable | grep -i -E "^(torch|torchvision|pytorch-lightning|numpy)=="
	@# A machine's pip configuration may cap versions (a constraint file of wheels kept on disk):
	@# then "newest" means newest under that cap. Say so, and how to lift it for this target.
	@.venv-latest/bin/python -m pip config list 2>/dev/null | grep -i "constraint" | \
		sed "s/^/note: pip's configuration caps versions here: /; s/$$/ (PIP_CONFIG_FILE=\/dev\/null make test-latest ignores it)/" || true
	.venv-latest/bin/python -m pytest -q -m "not slow" $(XDIST)

# Refresh the pins on purpose: after `make test-latest` passes, write its versions as the new
# constraints for this Python (then run `make test` and commit the file).
constraints:
	@test -x .venv-latest/bin/python || { echo "run make test-latest first"; exit 1; }
	@mkdir -p constraints
	@{ echo "# Tested with CPython $(PYVER) on $$(uname -m): written by make constraints on $$(date -u +%F)."; \
	   .venv-latest/bin/python -m pip freeze --exclude-editable | grep -v -i "^nasx"; } > $(CONSTRAINTS)
	@echo "wrote $(CONSTRAINTS)"

lint: $(STAMP)
	$(PY) -m ruff check nasx tests tutorials benchmarks docs/conf.py docs/_ext
	$(PY) -m ruff format --check nasx tests tutorials benchmarks docs/conf.py docs/_ext

format: $(STAMP)
	$(PY) -m ruff format nasx tests tutorials benchmarks docs/conf.py docs/_ext
	$(PY) -m ruff check --fix nasx tests tutorials benchmarks docs/conf.py docs/_ext

# mypy reads [tool.mypy] in pyproject.toml: all of nasx/, strict on nasx/space/; then a user's
# script type-checked against nasx's public API (no Any from its signatures), on the warm cache.
typecheck: $(STAMP)
	$(PY) -m mypy
	$(PY) -m pytest -q tests/test_typing.py

clean-venv:
	rm -rf $(VENV) .venv-latest
