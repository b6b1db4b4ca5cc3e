# spdl_torch: two commands do all set-up on a fresh Debian 12/13 machine.
#   make demo   - prepare the real-photo set and run the main job (spdl_torch vs torch DataLoader)
#   make test   - run the test suite
# Every step is stamped, so a second run does not redo finished work.

SHELL       := /bin/bash
PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMPS      := .stamps
APT_PKGS    := pkg-config libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev \
               libturbojpeg0-dev ffmpeg
PIP_PKGS    := torch==2.14.1 torchvision==0.29.1 pytest numpy pillow tqdm ninja setuptools wheel
DATA_DIR    ?= data/imagenet_like
SOURCES     := $(shell find csrc -name '*.cpp' -o -name '*.h' 2>/dev/null) setup.py

.PHONY: all deps build test demo bench clean

all: build

$(STAMPS)/apt:
	@mkdir -p $(STAMPS)
	@if dpkg -s $(APT_PKGS) >/dev/null 2>&1; then echo "apt: all packages present"; \
	else SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(APT_PKGS); fi
	@touch $@

$(STAMPS)/venv: Makefile
	@mkdir -p $(STAMPS)
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PIP_PKGS)
	@touch $@

deps: $(STAMPS)/apt $(STAMPS)/venv

# The package is installed editable once; the extension is then built in place by ninja, incrementally.
$(STAMPS)/install: $(STAMPS)/apt $(STAMPS)/venv setup.py
	@echo "pip install --no-build-isolation -e . (log: $(STAMPS)/install.log)"
	@SPDL_TORCH_NO_EXTENSION=1 $(PY) -m pip install --no-build-isolation --no-deps -e . > $(STAMPS)/install.log 2>&1 \
	  || { cat $(STAMPS)/install.log; exit 1; }
	@touch $@

$(STAMPS)/build: $(STAMPS)/install $(SOURCES)
	MAX_JOBS=$$(nproc) $(PY) setup.py -q build_ext --inplace 2>&1 | sed -E "s|^(\[[0-9]+/[0-9]+\]) .* -c (\S+) -o .*|\1 \2|" | grep -v -e "^copying" -e "Deprecat" -e "^ *\*\*\*" -e "^ *!!" -e "^$$" ; \
	  exit $${PIPESTATUS[0]}
	@touch $@

build: $(STAMPS)/build

test: build
	$(PY) -m pytest -q tests

demo: build
	$(PY) -m spdl_torch.datasets.prepare --out $(DATA_DIR)
	$(PY) examples/main_job.py --root $(DATA_DIR)

clean:
	rm -rf build $(STAMPS) spdl_torch/*.so *.egg-info
