# The two commands a newcomer needs: `make demo` and `make test` (both set everything up).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test bench lint

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt requirements-nodeps.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	$(BIN)/pip install -q --no-deps -r requirements-nodeps.txt
	touch $@

demo: setup
	$(BIN)/dptext demo

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	uptime
	$(BIN)/python benchmarks/bench_mechanisms.py
	$(BIN)/python benchmarks/bench_laplace.py --indexed
	$(BIN)/python benchmarks/bench_lm.py --backends causal,dpprompt
	$(BIN)/python benchmarks/bench_lm.py --long 500 --busy
	$(BIN)/python benchmarks/bench_lm.py --hostile
	uptime

lint: setup
	$(BIN)/ruff check src tests benchmarks
