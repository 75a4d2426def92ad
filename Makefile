# The course's commands. Each target first runs `setup`, which creates/updates .venv and skips what is
# already installed, so every target works on a fresh machine and is cheap the second time.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The course's torch range (the one source: README, docs, the notebooks' first cell and the lab zips state it
# from here, tests/test_torch_versions.py checks them). The floor is what the lessons and labs use
# (torch.accelerator with check_available=, 2.7): the `versions` job of .github/workflows/tests.yml runs
# the tests on it; the ceiling admits the newest releases (2.14, 2.15), which the `linux` and `macos` jobs get.
TORCH_SPEC ?= torch>=2.7,<2.16
# The release the notebooks' stored outputs come from (`make labs` ran on it; the `pinned` job runs it).
# Where PyTorch's CPU index does not answer, a Linux machine without an NVIDIA GPU gets it from the default
# index: on the course machines that index holds a CPU-only 2.13.0+cpu, while any range that lets pip pick
# 2.14 there brings the CUDA build (about 5 GB of nvidia-* packages).
TORCH_PINNED ?= 2.13
TORCH_FALLBACK_SPEC ?= torch==$(TORCH_PINNED).*
# Where a Linux machine without an NVIDIA GPU gets CPU-only torch: an index (pip --index-url). From mainland
# China, see docs/running.md: Alibaba Cloud's pytorch-wheels mirror is a flat list of files (pip -f), not an index.
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# Extra pytest arguments, e.g. PYTEST_ARGS=--nbval-lax for a torch whose messages differ from the stored ones.
PYTEST_ARGS ?=
# `make test` runs the suite in two processes; loadfile keeps a notebook's cells (one kernel) together.
# PYTEST_XDIST= runs it in one process. Plain `pytest` never uses xdist (pyproject.toml).
PYTEST_XDIST ?= -n 2 --dist loadfile
STAMP := $(VENV)/.installed
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup serve test lab labs build students dist lint bench gpu-check gpu-wheels clean

setup: $(STAMP)

$(STAMP): pyproject.toml tools/pyproject.toml package-lock.json Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10+ is needed; set PYTHON=python3.x")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# Linux without an NVIDIA GPU: PyTorch's CPU-only index (a few hundred MB instead of several GB of CUDA
	@# build). pip resolves first (--dry-run --report) and only a CPU build (+cpu) is installed: pip also
	@# reads the machine's own indexes, which may offer a newer CUDA build. Else, or when the CPU index does
	@# not answer, the pinned release from the default index (TORCH_FALLBACK_SPEC).
	@if $(BIN)/python -c 'import torch' 2>/dev/null; then :; \
	elif [ "$$(uname -s)" = Linux ] && ! command -v nvidia-smi >/dev/null 2>&1; then \
	  echo "no NVIDIA GPU: looking for CPU-only torch ($(TORCH_SPEC)) at $(TORCH_CPU_INDEX)"; \
	  cpu=$$($(BIN)/python -m pip install -q --dry-run --ignore-installed --report - --timeout 10 --retries 0 \
	    --index-url "$(TORCH_CPU_INDEX)" "$(TORCH_SPEC)" 2>/dev/null | $(BIN)/python tools/course_tools/torch_versions.py cpu-build); \
	  if [ -n "$$cpu" ] && $(BIN)/python -m pip install -q --timeout 10 --retries 0 --index-url "$(TORCH_CPU_INDEX)" "torch==$$cpu"; then \
	    echo "installed CPU-only torch $$cpu"; \
	  else echo "no CPU-only build of $(TORCH_SPEC) from $(TORCH_CPU_INDEX): $(TORCH_FALLBACK_SPEC) from the default index"; \
	    $(BIN)/python -m pip install -q "$(TORCH_FALLBACK_SPEC)"; fi; \
	else $(BIN)/python -m pip install -q "$(TORCH_SPEC)"; fi
	$(BIN)/python -m pip install -q -e ".[docs,lab,test]" -e tools
	@# Pyodide for the site's "paste your code" page (served from the site itself, no CDN); optional
	@if command -v npm >/dev/null 2>&1 && [ -f package-lock.json ]; then \
	  npm ci --no-audit --no-fund --silent || echo "npm ci failed: the paste-your-code page will say the linter is not bundled"; fi
	@touch $(STAMP)

# --dirty rebuilds only the edited pages (about 3 s instead of a full bilingual rebuild); restart it after
# changing the nav or adding a page. A dirty build is never strict (mkdocs warns that it is dirty), so
# serve is --no-strict; `make build` and the tests stay strict. PORT=8001 ADDR=0.0.0.0 change where.
PORT ?= 8000
ADDR ?= 127.0.0.1
serve: setup
	$(BIN)/mkdocs serve --dirty --no-strict -a $(ADDR):$(PORT)

test: setup
	$(BIN)/python -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

# Extra arguments for JupyterLab: make lab ARGS=--allow-root (containers, root shells)
lab: setup
	$(BIN)/jupyter lab labs/ $(ARGS)

labs: setup
	$(BIN)/python -m course_tools.course --write
	$(BIN)/python -m course_tools.generate.labs sync

build: setup
	$(BIN)/mkdocs build --strict

# The site without solutions, for a class that is still working on the labs.
students: setup
	COURSE_STUDENTS_ONLY=1 $(BIN)/mkdocs build --strict -d site-students

# One zip per lab (student notebooks, both languages) in dist/.
dist: setup
	$(BIN)/python -m course_tools.generate.dist --out dist

# Speed against the peers (accelerate, Lightning); prints ratios. Not part of `make test`.
bench: setup
	$(BIN)/python -m pip install -q -e ".[bench]"
	$(BIN)/python benchmarks/bench_transfer.py
	$(BIN)/python benchmarks/bench_check.py
	$(BIN)/python benchmarks/bench_kernels.py

# Every GPU check into results/gpu-check.json; on a CPU machine: make gpu-check GPU_CHECK_ARGS=--dry-run
gpu-check: setup
	$(BIN)/python scripts/gpu-check $(GPU_CHECK_ARGS)

# Wheels of the Jupyter stack for an offline GPU machine (CPython 3.12, x86-64), into wheels/
gpu-wheels: setup
	$(BIN)/python scripts/prepare-gpu-wheels

lint: setup
	$(BIN)/ruff check src tests tools benchmarks scripts

clean:
	rm -rf site site-students .cache docs/labs docs/solutions build dist
