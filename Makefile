# picompact: make demo | test | lint | smoke | bench
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint smoke bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --config-settings editable_mode=compat -e '.[test]'
	touch $(STAMP)

## demo: check the bundled example session, then preview its verbatim checkpoint (nothing is written)
demo: $(STAMP)
	@echo '$$ picompact check examples/demo-session.jsonl'
	@$(BIN)/picompact check examples/demo-session.jsonl; echo "(exit $$?)"
	@echo
	@echo '$$ picompact check examples/demo-session.jsonl --context-window 32000'
	@$(BIN)/picompact check examples/demo-session.jsonl --context-window 32000; echo "(exit $$?: compaction needed)"
	@echo
	@echo '$$ picompact compact examples/demo-session.jsonl --mode verbatim --context-window 32000 --dry-run | head -40'
	@$(BIN)/picompact compact examples/demo-session.jsonl --mode verbatim --context-window 32000 --dry-run | head -40 || true

## test: the whole test suite
test: $(STAMP)
	$(BIN)/pytest

## lint: ruff (lint + format check) and mypy on every module, CLI included
lint: $(STAMP)
	$(BIN)/ruff check pi_compact tests bench
	$(BIN)/ruff format --check pi_compact tests bench
	$(BIN)/mypy pi_compact

## smoke: build the wheel, install it in a clean venv, run --help and the example scripts
smoke: $(STAMP)
	rm -rf build dist .smoke
	$(BIN)/pip wheel --quiet --no-deps -w dist .
	$(PYTHON) -m venv .smoke
	.smoke/bin/pip install --quiet dist/*.whl
	.smoke/bin/picompact --help > /dev/null
	PATH="$(CURDIR)/.smoke/bin:$$PATH" sh examples/run-all.sh
	rm -rf .smoke
	@echo "smoke: ok"

## bench: generate large sessions (once) and print timings; see bench/README.md
bench: $(STAMP)
	$(BIN)/python bench/gen_session.py --size 10MB --out bench/data/session-10mb.jsonl
	$(BIN)/python bench/gen_session.py --size 100MB --out bench/data/session-100mb.jsonl
	$(BIN)/python bench/run.py --sizes 10MB,100MB

clean:
	rm -rf $(VENV) build dist .smoke *.egg-info .pytest_cache .mypy_cache .ruff_cache
