# `make demo` and `make test` install everything they need on a fresh machine:
# a venv keyed by a hash of requirements.txt lives under ~/.cache (so it
# survives between clones and CI runs) and .venv links to it; the native
# core builds incrementally against the venv's torch, never in isolation.
SHELL := /bin/bash
PYTHON ?= python3
REQ_HASH := $(shell cat requirements.txt pyproject.toml | sha256sum | cut -c1-16)
VENV_DIR := $(HOME)/.cache/torch_tpu/venv-$(REQ_HASH)
VENV := .venv
VPY := $(VENV)/bin/python
SRCS := $(shell find csrc -name '*.cc' -o -name '*.cpp' -o -name '*.h') setup.py
BUILD_ENV := TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=2

.PHONY: demo test test-all test-hf bench bench-peers conformance fuzz build clean link titan

# TorchTitan (issue #17) needs datasets, whose huggingface_hub pin conflicts
# with the Transformers stack's: its own venv, keyed by both requirement
# files, layered on the main venv (torch, torch_tpu) through a .pth file, so
# torch is installed once and never resolved again.
TITAN_HASH := $(shell cat requirements-titan.txt requirements-test.txt requirements.txt pyproject.toml | sha256sum | cut -c1-16)
TITAN_DIR := $(HOME)/.cache/torch_tpu/titan-$(TITAN_HASH)

$(VENV_DIR)/.complete: requirements.txt pyproject.toml
	@test -x $(VENV_DIR)/bin/python || $(PYTHON) -m venv $(VENV_DIR)
	$(VENV_DIR)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

# Libraries the tests drive on 'tpu' (Hugging Face stack): installed into the
# same venv, re-installed when their pins change, without rebuilding the venv.
$(VENV_DIR)/.test-complete: requirements-test.txt $(VENV_DIR)/.complete
	$(VENV_DIR)/bin/pip install -q --disable-pip-version-check -r requirements-test.txt
	@touch $@

# $(call layered_venv,DIR,REQUIREMENTS): a venv in DIR made from the main
# venv's interpreter (the same Python the .pth file's packages need) that sees
# the main venv's packages through a .pth file, plus REQUIREMENTS, with the
# main venv's pins as constraints (torch is never resolved again).
define layered_venv
	@test -x $(1)/bin/python || $(VENV_DIR)/bin/python -m venv $(1)
	@MAIN=$$($(VENV_DIR)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	  OWN=$$($(1)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	  echo "import site; site.addsitedir('$$MAIN')" > $$OWN/zz_torch_tpu_main.pth
	$(1)/bin/pip install -q --disable-pip-version-check -r $(2) -c requirements.txt
	@touch $(1)/.complete
endef

# After the test libraries (the titan pip sees the main venv's packages).
$(TITAN_DIR)/.complete: requirements-titan.txt $(VENV_DIR)/.test-complete
	$(call layered_venv,$(TITAN_DIR),requirements-titan.txt)

# The peers of `make bench-peers` (#19): torchax + JAX on our torch, layered
# like the titan venv; torch_xla in a venv of its own, since it is built
# against torch 2.9.0 (a CUDA build from PyPI: several GB the first time).
PEERS_HASH := $(shell cat requirements-peers.txt requirements.txt pyproject.toml | sha256sum | cut -c1-16)
PEERS_DIR := $(HOME)/.cache/torch_tpu/peers-$(PEERS_HASH)
XLA_HASH := $(shell cat requirements-xla.txt | sha256sum | cut -c1-16)
XLA_DIR := $(HOME)/.cache/torch_tpu/xla-$(XLA_HASH)

$(PEERS_DIR)/.complete: requirements-peers.txt $(VENV_DIR)/.complete
	$(call layered_venv,$(PEERS_DIR),requirements-peers.txt)

$(XLA_DIR)/.complete: requirements-xla.txt
	@test -x $(XLA_DIR)/bin/python || $(PYTHON) -m venv $(XLA_DIR)
	$(XLA_DIR)/bin/pip install -q --disable-pip-version-check -r requirements-xla.txt
	@touch $@

# The venv is shared by every clone on the machine, so the editable install is
# re-pointed whenever it names another clone (a stamp inside the venv would lie).
link: $(VENV_DIR)/.complete
	@ln -sfn $(VENV_DIR) $(VENV)
	@grep -qsF "'$(CURDIR)/torch_tpu'" $(VENV_DIR)/lib/python*/site-packages/__editable___torch_tpu_pjrt_*_finder.py || \
	  $(BUILD_ENV) TTPU_SKIP_EXT=1 $(VPY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .

torch_tpu/.built: $(SRCS) | link
	$(BUILD_ENV) $(VPY) setup.py -q build_ext --inplace
	@touch $@

build: link torch_tpu/.built

demo: build
	$(VPY) examples/train_mlp.py

test: build $(VENV_DIR)/.test-complete $(TITAN_DIR)/.complete
	TTPU_TITAN_PYTHON=$(TITAN_DIR)/bin/python $(VPY) -m pytest -q -m "not slow" tests

test-all: build $(VENV_DIR)/.test-complete $(TITAN_DIR)/.complete
	TTPU_TITAN_PYTHON=$(TITAN_DIR)/bin/python $(VPY) -m pytest -q tests

# TorchTitan's llama3 debug model, 20 steps, 2 processes: FSDP, TP, pipeline
# (each against the same run on CPU/gloo) and a resume from its checkpoint.
TITAN_CASES ?= single,single_compiled,fsdp,tp,pp,fsdp_tp,resume
titan: build $(TITAN_DIR)/.complete
	$(TITAN_DIR)/bin/python tools/titan/compare.py --cases $(TITAN_CASES)

bench: build
	$(VPY) bench/run.py

# Every contender in its own process, rounds alternating the order (#19). A
# peer that cannot be installed is reported absent, so its install may fail.
PEERS_ARGS ?=
bench-peers: build
	-$(MAKE) --no-print-directory $(PEERS_DIR)/.complete
	-$(MAKE) --no-print-directory $(XLA_DIR)/.complete
	$(VPY) bench/peers.py --torchax-python $(PEERS_DIR)/bin/python --xla-python $(XLA_DIR)/bin/python $(PEERS_ARGS)

# Full OpInfo conformance run (float32/bf16/f16, forward and gradients);
# writes build/conformance/report.json and prints the summary line.
conformance: build
	$(VPY) tools/conformance.py --dtypes float32,bfloat16,float16 --grad --jobs 2

# Differential fuzzer sweep (tests/fuzz): N random programs per mode against
# CPU; prints each mismatch, minimised repros and a summary per mode.
N ?= 5000
MODES ?= strict,debug,defer,compiled
fuzz: build
	cd tests && ../$(VPY) -m fuzz --n $(N) --modes $(MODES)

# Every Transformers architecture of the causal-LM, masked-LM, seq2seq,
# sequence- and image-classification auto mappings, tiny, on 'tpu' vs CPU:
# forward, backward, greedy generate, bf16; pass counts per stage and family.
# FAMILIES=causal_lm,... and ONLY=llama,gpt2 narrow it.
FAMILIES ?= causal_lm,masked_lm,seq2seq,seq_cls,image_cls
ONLY ?=
test-hf: build $(VENV_DIR)/.test-complete
	cd tests && ../$(VPY) hf_sweep.py --families $(FAMILIES) --only "$(ONLY)" --json ../build/hf_sweep.json

clean:
	rm -rf build torch_tpu/_C*.so torch_tpu/.built
