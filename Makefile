# The two commands a newcomer needs: `make demo` and `make test` (both set everything up).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-fast bench bench36 lint screenshots

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

# The fast tier, for every change: every test not marked slow, under 2 minutes of CPU (a test
# leaves it with @pytest.mark.slow, a file with `pytestmark = pytest.mark.slow`; no list of
# names: tests/project/test_structure.py checks that, and that the tier imports every package
# of src/dptext); how it was chosen and what it costs: docs/architecture.md, "Tests".
# `make test` (everything, about 7 minutes on 2 quiet cores with an empty cache) before landing.
test-fast: setup
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -m "not slow"

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
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_lm_targets.py --only b
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_lm_targets.py --only a,b --precision bf16
	OMP_NUM_THREADS=2 $(BIN)/python benchmarks/bench_lm.py --quantization 300
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_corpus.py quick
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_corpus_1m.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_corpus_executors.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_service.py --seconds 20
	$(BIN)/python benchmarks/bench_grid.py --workers 2
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_training.py cost --texts 120 --repeats 4
	$(MAKE) --no-print-directory bench36
	uptime

# Issue 36's rows, in its order, each a same-run ratio or a CPU figure printed beside `uptime`
# and the CPU model/flags (docs/lm_mechanisms.md, docs/mechanisms.md, docs/ledger.md).
bench36: setup
	@echo "== issue 36: speed where users wait =="; uptime; lscpu | grep -E '^(Model name|Flags)'
	@echo "-- masked DP-MLM vs dpmlm 1.3.0's approach (idle, then beside a busy process)"
	$(BIN)/python benchmarks/bench_mlm_speed.py --build results/roberta-stand-in
	$(BIN)/python benchmarks/bench_mlm_speed.py --compare 3 --words 100 --model results/roberta-stand-in
	$(BIN)/python benchmarks/bench_mlm_speed.py --compare 3 --words 100 --model results/roberta-stand-in --busy
	$(BIN)/python benchmarks/bench_mlm_speed.py --inprocess 3 --model results/roberta-stand-in
	@echo "-- --search auto: the choice, its cost, auto vs exact"
	OMP_NUM_THREADS=2 $(BIN)/python benchmarks/bench_search_auto.py
	@echo "-- CLI start-up (cached) and the first -m dpmlm's GGUF conversion"
	$(BIN)/python benchmarks/bench_startup.py --runs 5 --gguf
	@echo "-- first CusText fit at a new epsilon in a fresh process (the cached output sets)"
	$(BIN)/python benchmarks/bench_custext_first_fit.py
	@echo "-- ledger overhead, 100k records: idle, then with a competing fsync writer"
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_ledger.py --records 100000 --sanitize --rounds 2
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_ledger.py --records 100000 --sanitize --rounds 2 --busy-disk
	@echo "-- causal DP-MLM: batched (a) and one 500-word text (c), alone and beside a busy process"
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_lm_targets.py --only a,c
	uptime

# The web page's screenshots in docs/img (README.md, docs/service.md): its browser test, run
# with DPTEXT_UPDATE_DOCS=1 (needs Debian's chromium).
screenshots: setup
	DPTEXT_UPDATE_DOCS=1 $(BIN)/python -m pytest -q tests/service/test_service_browser.py

lint: setup
	$(BIN)/ruff check src tests benchmarks
