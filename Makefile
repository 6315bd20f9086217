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

# The fast tier, for every change: each package's core tests (tests/test_structure.py checks that
# every package of src/dptext is imported by one of these files and that each file exists), without
# the tests marked slow and those named in FAST_SKIP (each over about 1 s of CPU: a language
# model, spaCy or Presidio, the CLI in fresh processes, PLD accounting, many draws); how it was
# chosen and what it costs: docs/architecture.md, "Tests".
# `make test` (everything, about 7 minutes on 2 quiet cores with an empty cache) before landing.
FAST_TESTS := tests/test_structure.py tests/project/test_seeded_bytes.py tests/accounting/test_report_state.py \
	tests/core/test_text.py tests/core/test_rng_secure.py tests/core/test_reliability_io.py \
	tests/core/test_embeddings.py tests/accounting/test_accounting.py tests/accounting/test_br_composition.py \
	tests/mechanisms/test_mechanisms.py tests/mechanisms/test_custext_sampling.py tests/accounting/test_document_epsilon.py \
	tests/accounting/test_typical_epsilon.py tests/test_lm_units.py tests/test_corpus_ranges.py \
	tests/test_columns.py tests/test_jobdir.py tests/test_estimate.py tests/ledger/test_ledger.py \
	tests/test_detect.py tests/test_deid.py tests/test_targeted.py tests/integrations/test_integrations_pandas.py \
	tests/test_service_schema.py tests/accounting/test_uedp_accounting.py tests/training/test_training_rng.py \
	tests/evaluation/test_evaluation_metrics.py tests/audit/test_audit_one_run.py tests/robustness/test_robustness.py \
	tests/core/test_datasets.py tests/core/test_cache_integrity.py
FAST_SKIP := not test_dpmlm_on_the_tiny_bert_gives_the_pinned_bytes \
	and not test_build_targeted_with_spacy_detection_end_to_end \
	and not test_spacy_finds_the_entities and not test_presidio_finds_pii_offline \
	and not test_cli_estimate_matches_the_ledger and not test_tiny_end_to_end_run \
	and not test_draw_pool_draws_follow and not test_cli_robustness_runs \
	and not test_gumbel_fixed_k_candidates and not test_cli_document_epsilon \
	and not test_demo_takes_a_document_epsilon and not test_allow_list_drops_detections \
	and not test_epsilon_for_delta_matches_pld and not test_no_server_error_with_a_key \
	and not postgresql and not test_seeded_secure_run_resumes_bit_for_bit \
	and not test_unseeded_secure_run_continues and not test_author_corpora_expose_authors \
	and not test_gguf_conversion_bar and not test_calibration_inverts_the_accountant \
	and not test_pld_counts_self_composition and not test_concurrent_builds_of_one_entry \
	and not test_category_selection_filters and not test_corpus_one_entity_across_users
test-fast: setup
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -m "not slow" -k "$(FAST_SKIP)" $(FAST_TESTS)

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
	DPTEXT_UPDATE_DOCS=1 $(BIN)/python -m pytest -q tests/test_service_browser.py

lint: setup
	$(BIN)/ruff check src tests benchmarks
