# Two commands on a fresh machine; each installs what it needs into .venv the first time.
#   make run                      the main job: python run_suite.py suite=matmul_add
#   make test                     the tests (CPU only; Triton kernels under its interpreter)
#   make run ARGS="timing=quick"  any Hydra overrides
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: run test
run: $(STAMP)
	$(VENV)/bin/python run_suite.py suite=matmul_add $(ARGS)

test: $(STAMP)
	$(VENV)/bin/python -m pytest

# Then the project itself, editable (pyproject.toml), so its commands (fusebench-report, ...)
# work from any folder; the venv's setuptools builds it, so nothing more is downloaded.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -r requirements.txt
	$(VENV)/bin/python -m pip install --quiet --no-build-isolation --no-deps -e .
	touch $(STAMP)
