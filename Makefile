# picompact: make demo | test | lint | smoke | bench
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo pi test lint typecheck smoke bench clean

$(STAMP): pyproject.toml
	@echo "installing picompact and its test tools into $(VENV) (once; about 30 s)"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip
	@$(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

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

## pi: Pi 1.6 and node 22 for the tests that ask Pi (tools/pi/install.sh: npm ci into ~/.cache/picompact-test once,
## linked as tools/pi/node_modules; nothing is fetched after the first time). Without npm, one line says so and those
## tests skip; where Pi is required (PICOMPACT_REQUIRE_PI=1, as in CI) a failed install fails the target.
pi:
	@bash tools/pi/install.sh || { rc=$$?; \
	  if [ "$$PICOMPACT_REQUIRE_PI" = 1 ]; then echo "make: Pi is required (PICOMPACT_REQUIRE_PI=1) but could not be installed" >&2; exit 1; fi; \
	  [ $$rc = 3 ] || echo "make: Pi could not be installed (npm failed, above); the tests that ask Pi will skip" >&2; }

## test: the whole test suite, on every core (a module's tests stay together: they share its fixtures), the longest
## modules first (tests/conftest.py); bytecode is cached even where PYTHONDONTWRITEBYTECODE is set, so each worker
## does not compile and assert-rewrite every module
test: $(STAMP) pi
	@echo "make test: the whole suite on every core; several minutes on two cores (Pi's end-to-end sessions take longest)"
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n auto --dist loadscope --no-loadscope-reorder

## lint: ruff (lint + format check) and mypy on every module, CLI included; tsc on the Pi extension; the generated
## pages of docs/ (the CLI reference, the JSON schemas) are what the code gives
lint: $(STAMP) typecheck
	$(BIN)/ruff check pi_compact tests bench tools/docs.py
	$(BIN)/ruff format --check pi_compact tests bench tools/docs.py
	$(BIN)/mypy pi_compact
	$(BIN)/python tools/docs.py --check

## typecheck: tsc --noEmit on the Pi extension against Pi 1.6's own .d.ts (typescript and Pi from tools/pi)
TS := tools/pi
typecheck: pi
	@if [ -x $(TS)/node_modules/.bin/tsc ]; then \
	  $(TS)/node_modules/.bin/node $(TS)/node_modules/.bin/tsc -p $(TS)/tsconfig.json && echo "typecheck: ok"; \
	else \
	  echo "typecheck: skipped (needs npm, for tools/pi)"; \
	fi

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
	@echo "make bench: about 8 minutes; generates 115 MB of sessions under bench/data/ (once) and writes index files to the cache"
	$(BIN)/python bench/gen_session.py --size 10MB --out bench/data/session-10mb.jsonl
	$(BIN)/python bench/gen_session.py --size 100MB --out bench/data/session-100mb.jsonl
	$(BIN)/python bench/run.py --sizes 10MB,100MB

clean:
	rm -rf $(VENV) build dist .smoke *.egg-info .pytest_cache .mypy_cache .ruff_cache
