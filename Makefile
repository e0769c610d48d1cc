# One command per development verb. `make demo` and `make test` set everything up first.
VENV ?= .venv
BIN := $(VENV)/bin
TASK ?= Convert 100 USD to EUR and tell me if it's enough for a €85 hotel room

.PHONY: setup demo test check lint typecheck fmt pytest bench docs

setup:
	@./scripts/setup.sh

# The embedded 135M model, grammar-constrained: its first reply must be one call,
# valid against the tool's schema, which really runs. What it does next is its
# own choice, and a model this small often calls again instead of answering; a
# run that ends without an answer exits 1, which is not a failure of the demo.
demo: setup
	$(BIN)/tooluse run "$(TASK)" --tools examples.seed_tools:toolbox \
		--tool-choice required --single-call --max-rounds 3 --trace traces/demo.jsonl || [ $$? -eq 1 ]

test: setup lint typecheck pytest

lint:
	$(BIN)/ruff check src tests bench examples scripts
	$(BIN)/ruff format --check src tests bench examples scripts

typecheck:
	$(BIN)/mypy

fmt:
	$(BIN)/ruff format src tests bench examples
	$(BIN)/ruff check --fix src tests bench examples

pytest:
	$(BIN)/pytest -q

docs:
	$(BIN)/python scripts/gen_cli_docs.py > docs/cli.md

bench:
	$(BIN)/python bench/loop_overhead.py
