# The two commands a newcomer needs: `make demo` and `make test` (both set everything up).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test bench lint screenshots

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

# Every figure of the speed issues in one run (about 30 minutes on 2 quiet cores); each script
# prints `uptime` beside its figures and the reference it is compared with.
bench: setup
	uptime
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_mechanisms.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_mechanisms.py --mechanisms custext,custext+ --cached-tables --non-ascii
	OMP_NUM_THREADS=2 $(BIN)/python benchmarks/bench_laplace.py --epsilons 10,50,200 --indexed
	OMP_NUM_THREADS=2 $(BIN)/python benchmarks/bench_lm.py --backends causal,dpprompt --baseline-words 100
	OMP_NUM_THREADS=2 $(BIN)/python benchmarks/bench_lm.py --long 500 --busy --modes independent,independent-int8,sequential
	$(BIN)/python benchmarks/bench_lm.py --hostile
	$(BIN)/python benchmarks/bench_mlm_speed.py --build results/roberta-stand-in
	$(BIN)/python benchmarks/bench_mlm_speed.py --compare 3 --words 30 --model results/roberta-stand-in
	$(BIN)/python benchmarks/bench_mlm_speed.py --compare 3 --words 30 --model results/roberta-stand-in --busy
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_lm_targets.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_lm_targets.py --only a,b --precision bf16
	OMP_NUM_THREADS=2 $(BIN)/python benchmarks/bench_lm.py --quantization 300
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_ledger.py --records 100000 --sanitize --rounds 2
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_corpus.py quick
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_corpus_1m.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_corpus_executors.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_service.py --seconds 20
	$(BIN)/python benchmarks/bench_grid.py --workers 2
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_training.py cost --texts 120 --repeats 4
	uptime

# The web page's screenshots in docs/img (README.md, docs/service.md): its browser test, run
# with DPTEXT_UPDATE_DOCS=1 (needs Debian's chromium).
screenshots: setup
	DPTEXT_UPDATE_DOCS=1 $(BIN)/python -m pytest -q tests/test_service_browser.py

lint: setup
	$(BIN)/ruff check src tests benchmarks
