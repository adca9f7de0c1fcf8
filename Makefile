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

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)
