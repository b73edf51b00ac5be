# dclab: Dual Connectivity testbed. Run as root (or with sudo).
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
EMU := emu/target/release/dcemu
# What the demo runs needs (aioquic is a Python stack; iptables clamps TCP's MSS, procps
# sets sysctls); the rest is for the other stacks, the browser experiment and the tests.
DEMO_APT_PACKAGES := iproute2 iptables procps python3 python3-venv ca-certificates
APT_PACKAGES := $(DEMO_APT_PACKAGES) iperf3 iputils-ping curl ngtcp2-client ngtcp2-server mptcpize chromium tshark
VENV := .venv
PY := $(VENV)/bin/python
VENV2020 := .venv-aioquic2020
QUICGO_SRC := dclab/endpoints/quicgo/go
QUICGO := build/bin/dclab-quicgo
QUINN_SRC := dclab/endpoints/quinn/rs
QUINN := build/bin/dclab-quinn
NOQ_SRC := dclab/endpoints/noq/rs
# What the quinn and noq programs share (a path dependency of both).
RS_COMMON := dclab/endpoints/rs-common
RS_COMMON_FILES := $(wildcard $(RS_COMMON)/src/*.rs) $(RS_COMMON)/Cargo.toml
NOQ := build/bin/dclab-noq

.PHONY: setup build build-core emu-build emu-demo demo-packages test check bench demo clean-net help docs docs-serve

help:
	@echo "make demo   install, build, run the default DC throughput experiment"
	@echo "make test   install, build, run every check and test"
	@echo "make build  install and build every stack (without Go: all but quic-go, said so)"
	@echo "make build-core  install and build dcemu and every stack but quic-go (no Go needed)"
	@echo "make check  the static checks alone (rustfmt, clippy, levels, ruff, mypy)"
	@echo "make bench  measure dcemu against the kernel path; writes bench/out/ (tracked files unchanged)"
	@echo "make docs   build the documentation site into site/ (mkdocs build --strict)"
	@echo "make docs-serve  serve the documentation site at http://127.0.0.1:8000, rebuilt on every change"

# Installs what is missing; does nothing when everything is there.
setup: $(VENV)/.installed $(VENV2020)/.installed
	@scripts/setup.sh $(APT_PACKAGES)

# The Debian packages the demo needs; quick, and changes nothing, when they are there.
demo-packages:
	@scripts/setup.sh $(DEMO_APT_PACKAGES)

# The Python environment, rebuilt only when the pinned requirements change.
$(VENV)/.installed: requirements.lock pyproject.toml | demo-packages
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# The study-era aioquic 0.8 (QUIC draft 27) of the aioquic-2020 stack, in its own
# environment (dclab itself needs aioquic 1.x); rebuilt from scratch only when its lock
# changes. aioquic 0.8 has no wheel for this Python: pip compiles it (gcc, OpenSSL headers).
$(VENV2020)/.installed: requirements-aioquic2020.lock
	@scripts/setup.sh $(APT_PACKAGES) gcc libssl-dev python3-dev
	rm -rf $(VENV2020)
	python3 -m venv $(VENV2020)
	$(VENV2020)/bin/pip install -q --no-deps --only-binary cryptography -r requirements-aioquic2020.lock
	$(VENV2020)/bin/pip check
	touch $@

# dcemu and every stack but quic-go: all that needs no Go (Debian 12 has none new enough),
# which is every tutorial's stacks but the quic-go runs.
build-core: setup $(QUINN) $(NOQ) emu-build

# build-core and quic-go; without a Go new enough it says so and skips that one stack
# (`make test` needs it, and stops on it).
build: build-core
	@if why=$$(scripts/have_go.sh); then $(MAKE) --no-print-directory $(QUICGO); \
	else echo "make build: skipped the quic-go stack: $$why. Every other stack is built; 'make test' needs it."; fi

# dcemu (cargo decides what to rebuild).
emu-build:
	cd emu && $(CARGO) build --release --locked

# dcemu alone, without the timer probe: what the demo runs. setup.sh with no packages
# only checks the Rust toolchain and TUN, so it runs beside demo-packages' apt-get.
emu-demo:
	@scripts/setup.sh
	cd emu && $(CARGO) build --release --locked --bin dcemu

# The quic-go, quinn and noq stacks' programs (dclab/endpoints/quicgo/go, dclab/endpoints/quinn/rs,
# dclab/endpoints/noq/rs), pinned by go.sum and Cargo.lock; rebuilt only when their sources change.
$(QUICGO): $(wildcard $(QUICGO_SRC)/*.go) $(QUICGO_SRC)/go.mod $(QUICGO_SRC)/go.sum
	@why=$$(scripts/have_go.sh) || { echo "the quic-go stack: $$why; see dclab doctor"; exit 1; }
	cd $(QUICGO_SRC) && go build -trimpath -o $(CURDIR)/$@ .

# The quinn and noq programs share one target directory: their lock files pin the same
# versions of most dependencies (tokio, rustls, ring, ...), which cargo then builds once.
RS_TARGET := build/rs-target

$(QUINN): $(wildcard $(QUINN_SRC)/src/*.rs) $(RS_COMMON_FILES) $(QUINN_SRC)/build.rs $(QUINN_SRC)/Cargo.toml $(QUINN_SRC)/Cargo.lock
	$(CARGO) build --release --locked --manifest-path $(QUINN_SRC)/Cargo.toml --target-dir $(RS_TARGET)
	install -D -m755 $(RS_TARGET)/release/dclab-quinn $@

$(NOQ): $(wildcard $(NOQ_SRC)/src/*.rs) $(RS_COMMON_FILES) $(NOQ_SRC)/build.rs $(NOQ_SRC)/Cargo.toml $(NOQ_SRC)/Cargo.lock
	$(CARGO) build --release --locked --manifest-path $(NOQ_SRC)/Cargo.toml --target-dir $(RS_TARGET)
	install -D -m755 $(RS_TARGET)/release/dclab-noq $@

# Static checks: formatting, lints, types, and no import running up a level.
check: setup
	cd emu && $(CARGO) fmt --check
	cd emu && $(CARGO) clippy --release --locked --all-targets -- -D warnings
	cd $(QUINN_SRC) && $(CARGO) fmt --check
	$(CARGO) clippy --release --locked --all-targets --manifest-path $(QUINN_SRC)/Cargo.toml --target-dir $(RS_TARGET) -- -D warnings
	cd $(NOQ_SRC) && $(CARGO) fmt --check
	$(CARGO) clippy --release --locked --all-targets --manifest-path $(NOQ_SRC)/Cargo.toml --target-dir $(RS_TARGET) -- -D warnings
	cd $(RS_COMMON) && $(CARGO) fmt --check
	$(CARGO) clippy --release --locked --all-targets --manifest-path $(RS_COMMON)/Cargo.toml --target-dir $(RS_TARGET) -- -D warnings
	@test -z "$$(gofmt -l $(QUICGO_SRC))" || { gofmt -l $(QUICGO_SRC); echo "gofmt: reformat the files above"; exit 1; }
	cd $(QUICGO_SRC) && go vet ./...
	bash emu/check-levels.sh
	$(PY) scripts/check_levels.py
	$(VENV)/bin/ruff check dclab tests scripts bench docs/hooks.py
	$(VENV)/bin/mypy
	$(MKDOCS) build --strict --quiet

# dcemu's tests run optimised with debug_assert! and overflow checks on (profile `checked`);
# as root they include those #[ignore]d for needing root (namespaces, TUN devices). The
# quinn and noq programs' tests (and their shared crate's) use their release profile in
# their target directory, so they reuse the dependencies `build` built.
ROOT_TESTS := $(if $(filter 0,$(shell id -u)),--include-ignored)
test: build $(QUICGO) check
	cd emu && $(CARGO) test --profile checked --locked -- $(ROOT_TESTS)
	$(CARGO) test --release --locked --manifest-path $(QUINN_SRC)/Cargo.toml --target-dir $(RS_TARGET)
	$(CARGO) test --release --locked --manifest-path $(NOQ_SRC)/Cargo.toml --target-dir $(RS_TARGET)
	$(CARGO) test --release --locked --manifest-path $(RS_COMMON)/Cargo.toml --target-dir $(RS_TARGET)
	$(PY) -m pytest -q --durations=20 tests

# The documentation site (mkdocs.yml; docs/hooks.py generates the pages that must follow the
# code). --strict: a broken link or a page missing from the nav fails the build.
# NO_MKDOCS_2_WARNING silences the Material theme's banner about its successor.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs
docs: setup
	$(MKDOCS) build --strict

docs-serve: setup
	$(MKDOCS) serve

bench: build
	$(PY) bench/run.py

# Installs and builds only what the demo runs (the Python environment and dcemu, side by
# side: pip waits on the network while cargo compiles), so a fresh machine gets to the plot
# quickly; `make build` (or `make test`) adds the rest.
# The packages and the Python environment beside dcemu's build, which is the longest part.
demo:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed emu-demo
	$(VENV)/bin/dclab run throughput
	@echo "demo: done. 'make build' adds the other stacks (quic-go, quinn, noq, ngtcp2, aioquic 2020), iperf3,"
	@echo "      tshark and Chromium; 'make test' installs, builds and checks everything."

# Removes namespaces, devices and processes a killed run left behind.
clean-net: setup
	$(VENV)/bin/dclab clean
