# dclab: Dual Connectivity testbed. Run as root (or with sudo).
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
EMU := emu/target/release/dcemu
APT_PACKAGES := iproute2 iperf3 iputils-ping iptables ethtool procps python3 python3-venv ca-certificates

.PHONY: setup build test bench demo clean-net help

help:
	@echo "make demo   install, build, run the default DC throughput experiment"
	@echo "make test   install, build, run every test"
	@echo "make bench  measure dcemu against the kernel path; writes bench/results.json"

# Installs what is missing; does nothing when everything is there.
setup:
	@scripts/setup.sh $(APT_PACKAGES)

build: setup
	cd emu && $(CARGO) build --release --locked

test: build
	cd emu && $(CARGO) test --release --locked

bench: build
	python3 bench/run.py

demo: build
	python3 -m dclab.demo

# Removes namespaces, devices and processes a killed run left behind.
clean-net:
	python3 -m dclab.netns --clean
