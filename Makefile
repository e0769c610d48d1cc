# One command per development verb. `make demo` and `make test` set up what they need first.
VENV ?= .venv
BIN := $(VENV)/bin
TASK ?= Convert 100 USD to EUR and tell me if it's enough for a €85 hotel room
# The demo agent's own instructions, as any agent built on these tools would have.
SYSTEM ?= You are a helpful assistant. Call a tool only for a fact you do not have yet, and use the calculator for arithmetic. Once the tool results give you what you need, reply to the user in plain text and answer every part of the question.

.PHONY: setup setup-demo demo test test-fast bytecode check lint typecheck fmt pytest bench docs docs-serve

# Each step prints one line with its time; pip's and npm's output is in build/setup/.
setup:
	@./scripts/setup.sh

# Only what the demo runs: bubblewrap, the package with its local extra, the model.
setup-demo:
	@./scripts/setup.sh demo

# The best local model setup installs (qwen2.5-coder-1.5b), tool choice left to
# the model, every call grammar-constrained and run for real; the trace says what
# happened, round by round.
demo: setup-demo
	$(BIN)/tooluse run "$(TASK)" --system "$(SYSTEM)" --tools examples.seed_tools:toolbox \
		--model local --max-rounds 5 --trace traces/demo.jsonl

test: setup lint typecheck pytest

# Everything but what decodes with a local model, drives npm's MCP servers or a
# browser, starts Ray, or builds and benchmarks at length (markers set in
# tests/conftest.py). Two workers more than the cores: much of the tier waits on
# processes it started (servers, sandboxes, the CLI), and the extra workers run
# meanwhile; each worker also collects every module, so more cost more (on 2 cores,
# quiet, alternated in one half hour: 3:01 and 3:05 with 3 workers, 2:47 and 2:51
# with 4; earlier, 3:52 with 2 workers).
FAST := not (model or npm or browser or ray or postgres or slow)
WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))
test-fast: setup bytecode
	$(BIN)/pytest -q -n $(WORKERS) --dist worksteal -m "$(FAST)"

# The tests start several hundred fresh Python processes. Where PYTHONDONTWRITEBYTECODE
# is set (as in many containers), each would compile the package from source again;
# compiled once here, they load it from __pycache__ (Python reads it under that variable).
# pytest's own cache of the test modules with their asserts rewritten is written under
# the same variable's rule: unset for its runs, each worker of the next run (and the
# second tier of this one) reads the modules rewritten instead of rewriting every one
# (3.5 s of each worker's collection here).
unexport PYTHONDONTWRITEBYTECODE
bytecode:
	@$(BIN)/python -m compileall -q src tests examples bench

lint:
	$(BIN)/ruff check src tests bench examples scripts
	$(BIN)/ruff format --check src tests bench examples scripts

typecheck:
	$(BIN)/mypy

fmt:
	$(BIN)/ruff format src tests bench examples
	$(BIN)/ruff check --fix src tests bench examples

# The whole suite: the fast tier on every core, then, one at a time, the tests that
# decode with a model, drive npm's servers or a browser, start Ray or are slow (two
# Ray clusters or model decodes at once would compete for ports, memory and cores).
pytest: bytecode
	$(BIN)/pytest -q -n $(WORKERS) --dist worksteal -m "$(FAST)"
	$(BIN)/pytest -q -m "model or npm or browser or ray or postgres or slow"

# The CLI reference is generated from the CLI's own help; the site (docs/, the
# API reference from the docstrings) is built into site/, every warning an error.
docs:
	$(BIN)/python scripts/gen_cli_docs.py > docs/cli.md
	$(BIN)/python -m mkdocs build --strict --site-dir site

docs-serve:
	$(BIN)/python -m mkdocs serve --dev-addr 127.0.0.1:8000

bench:
	$(BIN)/python bench/loop_overhead.py
