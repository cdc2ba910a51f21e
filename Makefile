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

.PHONY: demo test test-all test-hf bench conformance fuzz build clean link titan

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

# After the test libraries (the titan pip sees the main venv's packages), from
# the main venv's interpreter (the same Python the .pth file's packages need).
$(TITAN_DIR)/.complete: requirements-titan.txt $(VENV_DIR)/.test-complete
	@test -x $(TITAN_DIR)/bin/python || $(VENV_DIR)/bin/python -m venv $(TITAN_DIR)
	@MAIN=$$($(VENV_DIR)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	  OWN=$$($(TITAN_DIR)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	  echo "import site; site.addsitedir('$$MAIN')" > $$OWN/zz_torch_tpu_main.pth
	$(TITAN_DIR)/bin/pip install -q --disable-pip-version-check -r requirements-titan.txt -c requirements.txt
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
