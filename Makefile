# Two commands on a fresh machine; each installs what it needs into .venv the first time.
#   make run                      the main job: python run_suite.py suite=matmul_add
#   make test                     the tests (CPU only; Triton kernels under its interpreter)
#   make run ARGS="timing=quick"  any Hydra overrides
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: run test
# Exit 1 is a run that finished with rows that are not results (failed, incorrect or noisy; its
# last line says which): done, not make's "Error 1", which reads as a crash. Any other code
# (2: bad input or a full disk, 130: interrupted) fails make with that code.
RUN = $(VENV)/bin/python run_suite.py suite=matmul_add $(ARGS)
run: $(STAMP)
	$(info $(RUN))
	@$(RUN); code=$$?; [ $$code -eq 1 ] || exit $$code

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
