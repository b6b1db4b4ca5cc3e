# spdl_torch: two commands do all set-up on a fresh Debian 12 machine (Debian 13: supported by the code, not yet tested).
#   make demo   - prepare the real-photo set and run the main job (spdl_torch vs torch DataLoader)
#   make test   - the fast test tier (no tier marker: slow, corpus, frameworks, torchrun; see CONTRIBUTING.md)
#   make test-frameworks - the DataLoader's tests with PyTorch Lightning and Accelerate (2-process torchrun, ~2 min)
#   make lint   - ruff over the Python code (the rules are in pyproject.toml)
# Every step is stamped, so a second run does not redo finished work.

SHELL       := /bin/bash
PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMPS      := .stamps
APT_PKGS    := pkg-config libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev \
               libturbojpeg0-dev libjpeg62-turbo-dev ffmpeg ccache
# Test-only: frameworks that re-create a DataLoader (tests/dataloader/test_loader_frameworks.py). Pinned; they install
# in ~10 s beside torch 2.14.1 without changing torch or torchvision (pip's resolver keeps the torch pins of PIP_PKGS).
FRAMEWORK_PKGS := pytorch-lightning==2.6.6 accelerate==1.15.0
# nvidia-nvjpeg (header + libnvjpeg, ~3 MB): the CUDA variant's nvJPEG op compiles against it (setup.py finds it
# under site-packages/nvidia/cu13); CUDA 13.0 like torch 2.14.1's wheels.
NVJPEG_PKG  := nvidia-nvjpeg==13.0.4.44
# Test-only reference: timm, whose transforms (create_transform, RandAugment, AutoAugment, AugMix, RandomErasing)
# the fused forms are compared with (tests/transforms/test_timm*.py; spdl_torch never imports it).
TIMM_PKG    := timm==1.0.31
# Hugging Face datasets (the "hf" extra in pyproject.toml: spdl_torch.datasets.HFImageDataset; its tests build their
# datasets in tmp_path, offline). Pinned; 5.2.0 installs pyarrow 26 and pandas 3 beside numpy 2.4 and torch 2.14.1.
HF_PKG      := datasets==5.2.0
# aiohttp: remote tar shards (spdl_torch.datasets.shards, the "remote" extra in pyproject.toml); obstore: shards in
# object storage (the "cloud" extra). Test-only: moto's S3 server (tests/_utils/s3_server.py), boto3 pinned
# where aiobotocore (s3fs, in BENCH_PKGS) accepts its botocore.
OBJECT_PKGS := obstore==0.12.1 'moto[server]==5.2.5' boto3==1.43.117 botocore==1.43.117
# Development only: the linter, pinned so that `make lint` gives the same answer everywhere.
DEV_PKGS    := ruff==0.17.5
PIP_PKGS    := torch==2.14.1 torchvision==0.29.1 pytest numpy pillow tqdm ninja setuptools wheel psutil aiohttp==3.14.5 \
               $(OBJECT_PKGS) $(NVJPEG_PKG) $(FRAMEWORK_PKGS) $(TIMM_PKG) $(HF_PKG) $(DEV_PKGS)
DATA_DIR    ?= data/imagenet_like
SOURCES     := $(shell find csrc -name '*.cpp' -o -name '*.h' -o -name '*.cu' 2>/dev/null) setup.py

.PHONY: all deps build lint test test-slow test-all test-frameworks test-torchrun test-corpus test-audio-corpus \
        test-video-corpus test-no-ffmpeg demo \
        bench clean gpu-check gpu-check-dry

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
$(STAMPS)/install: $(STAMPS)/apt $(STAMPS)/venv setup.py pyproject.toml
	@echo "pip install --no-build-isolation -e . (log: $(STAMPS)/install.log)"
	@SPDL_TORCH_NO_EXTENSION=1 $(PY) -m pip install --no-build-isolation --no-deps -e . > $(STAMPS)/install.log 2>&1 \
	  || { cat $(STAMPS)/install.log; exit 1; }
	@touch $@

# With ccache (in APT_PKGS), unchanged files come from its cache, also in a fresh clone on the same machine.
# Looked up when the recipe runs: the first `make` on a fresh machine installs it before it builds.
CCACHE_ENV   = env $$(command -v ccache >/dev/null 2>&1 && echo PATH=/usr/lib/ccache:$$PATH CCACHE_BASEDIR=$(CURDIR) CCACHE_NOHASHDIR=1)

# setup.py's build output, one line per compiled file (ninja's counter and the source), without its notices.
BUILD_LOG   = sed -E "s|^(\[[0-9]+/[0-9]+\]) .* -c (\S+) -o .*|\1 \2|" | grep -v -e "^copying" -e "Deprecat" -e "^ *\*\*\*" -e "^ *!!" -e "^$$"

$(STAMPS)/build: $(STAMPS)/install $(SOURCES)
	$(CCACHE_ENV) MAX_JOBS=$$(nproc) $(PY) setup.py -q build_ext --inplace 2>&1 | $(BUILD_LOG) ; \
	  exit $${PIPESTATUS[0]}
	@touch $@

build: $(STAMPS)/build

# ruff's rule set and exclusions are in pyproject.toml; it needs only .venv, not the extension.
lint: $(STAMPS)/venv
	$(VENV)/bin/ruff check .

# Test tiers are markers (pytest.ini), and each target selects its tier with -m alone: `make test` is what no
# tier marker takes (FAST_TIER); `make test-slow` the tests marked slow; `make test-frameworks`, `make test-torchrun`
# and `make test-corpus` their markers' tests; `make test-all` every tier but the corpus-wide one (what CI runs,
# target by target, in .ci/run). A plain `pytest tests` runs every tier. The cuda-marked tests skip without a device.
# The media corpus (tools/fetch_media_corpus.py: Debian packages' files into data/media_corpus, once) is set-up, not
# test time; without apt-get and dpkg-deb its tests skip, naming the reason.
FAST_TIER   := not slow and not corpus and not frameworks and not torchrun
test: build
	@$(PY) -c "from tests._utils.corpus import corpus_dir; print('media corpus:', corpus_dir() or 'absent (its tests skip)')"
	$(PY) -m pytest -q -m "$(FAST_TIER)" --durations=15 tests

test-slow: build
	$(PY) -m pytest -q -m "slow and not corpus and not frameworks and not torchrun" --durations=15 tests

test-all: build
	$(PY) -m pytest -q -m "not corpus" --durations=15 tests

# The build without FFmpeg (SPDL_TORCH_FFMPEG=0: JPEG images only), out of the way of the in-place build: its
# objects and library under build/no_ffmpeg, as deep as setup.py's own build/temp.*: with ccache, every file whose
# preprocessed text is the same as in the in-place build then comes from the cache (same relative paths); loaded through SPDL_TORCH_LIBRARY; then the tests that cover it (what it
# decodes, the errors of what it does not; tests that need FFmpeg skip, naming it).
NOFF_DIR    := build/no_ffmpeg
NOFF_TESTS  := tests/project/test_no_ffmpeg.py tests/io/test_image.py tests/io/test_image_orientation.py \
               tests/io/test_batch_partial_decode.py tests/dataloader/test_loader.py
$(NOFF_DIR)/.built: $(STAMPS)/install $(SOURCES)
	$(CCACHE_ENV) SPDL_TORCH_FFMPEG=0 MAX_JOBS=$${MAX_JOBS:-$$(nproc)} $(PY) setup.py -q build_ext \
	  --build-temp $(NOFF_DIR) --build-lib $(NOFF_DIR)/lib 2>&1 | $(BUILD_LOG); \
	  exit $${PIPESTATUS[0]}
	@touch $@

test-no-ffmpeg: $(NOFF_DIR)/.built
	SPDL_TORCH_LIBRARY=$$(ls $(NOFF_DIR)/lib/spdl_torch/_C*.so) $(PY) -m pytest -q -m "$(FAST_TIER)" -p no:cacheprovider \
	  --durations=5 $(NOFF_TESTS)

# The corpus tier (marker corpus), not part of `make test`: every file of the media corpus against the ffmpeg CLI.
# test-audio-corpus: every audio file (make test takes a subsample of 40; ~1 h on 2 cores); test-video-corpus:
# every video (counts, 120 first frames, seeks, then every frame; ~minutes): the tier's tests of one medium.
test-corpus: build
	$(PY) -m pytest -q -m corpus tests

test-audio-corpus: build
	$(PY) -m pytest -q -m corpus tests/io/test_audio_corpus.py

test-video-corpus: build
	$(PY) -m pytest -q -m corpus tests/io/test_video.py

# The frameworks tier, not part of `make test` (each case starts 2 ranks with torchrun, ~20 s each).
test-frameworks: build
	$(PY) -m pytest -q -m frameworks tests

# The torchrun tier, not part of `make test` (~30 s: two torchrun ranks over tar shards, gloo on CPU);
# tests/datasets/shards/test_order.py checks the same rules in-process.
test-torchrun: build
	$(PY) -m pytest -q -m torchrun tests

demo: build
	$(PY) -m tools.prepare_data --out $(DATA_DIR)
	$(PY) examples/main_job.py --root $(DATA_DIR)

clean:
	rm -rf build $(STAMPS) spdl_torch/*.so *.egg-info

# ---- Reliability: sanitizers, fuzzing, soak (see docs/reliability.md) ---------------------------------------
# None of these is part of `make test`'s set-up; each installs what it needs itself.
#   make test-sanitize            - the C++ core's unit tests + every corpus file, under ASan+UBSan (g++)
#   make fuzz FUZZ_SECONDS=60     - libFuzzer targets for the core decoders (clang), each run that long, then
#                                   fuzz-shards: the Python tar / member-table / index readers under atheris
#   make soak                     - 20 epochs over data/imagenet_like/train, printing the RSS curve
FUZZ_SECONDS ?= 60
FUZZ_DIR     := build/fuzz
SAN_DIR      := build/sanitize
FUZZ_TARGETS := decode_image decode_batch jpeg_markers tiff_ifd image_chunks video_decode audio_decode wav_reader
# Every core source and header, at any depth (csrc/core/**): a new core file needs no edit here.
CORE_SRCS    := $(sort $(shell find csrc/core -name '*.cpp'))
CORE_HDRS    := $(sort $(shell find csrc/core -name '*.h'))
CORE_PC      := libavcodec libavformat libavutil libswscale libswresample libturbojpeg libjpeg
SAN_FLAGS    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1 -ffp-contract=off
SAN_CXX      ?= g++
SAN_ENV      := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: test-sanitize fuzz fuzz-build fuzz-shards soak bench-augment-kernels

# Corpus location (fetched on first use by tests/_utils/corpus.py; empty when the corpus is not available).
CORPUS_CMD = $$($(PY) -c "from tests._utils.corpus import corpus_dir; print(corpus_dir() or '')")

# One binary per csrc/tests/*_test.cc (core_test: images; media_test: the demux layer), each given the corpus.
SAN_TESTS    := $(patsubst csrc/tests/%.cc,$(SAN_DIR)/%,$(sort $(wildcard csrc/tests/*_test.cc)))

# The core is compiled once per toolchain into objects (in parallel, incrementally); each test binary and each
# fuzz target only compiles its own file and links them.
SAN_OBJS     := $(patsubst csrc/%.cpp,$(SAN_DIR)/obj/%.o,$(CORE_SRCS))
FUZZ_OBJS    := $(patsubst csrc/%.cpp,$(FUZZ_DIR)/obj/%.o,$(CORE_SRCS))
JOBS         := $(shell nproc)
# Kept between runs (make would delete them as intermediates of the pattern rules).
.SECONDARY: $(SAN_OBJS) $(FUZZ_OBJS)

$(SAN_DIR)/obj/%.o: csrc/%.cpp $(CORE_HDRS) $(STAMPS)/apt
	@mkdir -p $(dir $@)
	@$(SAN_CXX) -std=c++17 $(SAN_FLAGS) -Wall -Wextra -Icsrc $$(pkg-config --cflags $(CORE_PC)) -c -o $@ $<

$(SAN_DIR)/%_test: csrc/tests/%_test.cc $(SAN_OBJS) $(CORE_HDRS)
	@mkdir -p $(SAN_DIR)
	@echo "link $@"; $(SAN_CXX) -std=c++17 $(SAN_FLAGS) -Wall -Wextra -Icsrc $$(pkg-config --cflags $(CORE_PC)) -o $@ \
	  $< $(SAN_OBJS) $$(pkg-config --libs $(CORE_PC))

test-sanitize: $(STAMPS)/venv
	@$(MAKE) --no-print-directory -j$(JOBS) $(SAN_TESTS)
	corpus=$(CORPUS_CMD); for t in $(SAN_TESTS); do time $(SAN_ENV) $$t $$corpus || exit 1; done

$(STAMPS)/apt-fuzz:
	@mkdir -p $(STAMPS)
	@SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	if ! command -v clang++ >/dev/null; then $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends clang; fi; \
	v=$$(clang++ -dumpversion | cut -d. -f1); \
	dpkg -s libclang-rt-$$v-dev >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	  --no-install-recommends libclang-rt-$$v-dev
	@touch $@

FUZZ_CXXFLAGS := -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -ffp-contract=off

$(FUZZ_DIR)/obj/%.o: csrc/%.cpp $(CORE_HDRS) $(STAMPS)/apt $(STAMPS)/apt-fuzz
	@mkdir -p $(dir $@)
	@clang++ $(FUZZ_CXXFLAGS) -fsanitize=fuzzer-no-link -Icsrc $$(pkg-config --cflags $(CORE_PC)) -c -o $@ $<

$(FUZZ_DIR)/fuzz_%: csrc/fuzz/fuzz_%.cc $(FUZZ_OBJS) $(CORE_HDRS)
	@mkdir -p $(FUZZ_DIR)
	@echo "link $@"; clang++ $(FUZZ_CXXFLAGS) -fsanitize=fuzzer -Icsrc $$(pkg-config --cflags $(CORE_PC)) -o $@ $< $(FUZZ_OBJS) \
	  $$(pkg-config --libs $(CORE_PC))

fuzz-build: $(STAMPS)/apt $(STAMPS)/apt-fuzz
	@$(MAKE) --no-print-directory -j$(JOBS) $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build $(STAMPS)/venv fuzz-shards
	@$(PY) csrc/fuzz/seed_corpus.py $(FUZZ_DIR)/seeds
	@mkdir -p $(FUZZ_DIR)/artifacts
	@for t in $(FUZZ_TARGETS); do mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s (log: $(FUZZ_DIR)/fuzz_$$t.log)"; \
	  $(SAN_ENV) $(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- \
	    $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/seeds/$$t > $(FUZZ_DIR)/fuzz_$$t.log 2>&1; rc=$$?; \
	  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^(INFO: seed corpus|Done)" $(FUZZ_DIR)/fuzz_$$t.log; \
	  if [ $$rc != 0 ]; then echo "fuzz_$$t FAILED (rc=$$rc): see $(FUZZ_DIR)/fuzz_$$t.log and $(FUZZ_DIR)/artifacts/"; \
	    grep -m5 -E "ERROR|runtime error|SUMMARY" $(FUZZ_DIR)/fuzz_$$t.log; fail=1; fi; \
	done; exit $${fail:-0}

# The shard readers are Python: atheris (libFuzzer for Python; a manylinux wheel) drives csrc/fuzz/fuzz_shards.py.
ATHERIS_PKG := atheris==3.0.0

$(STAMPS)/atheris: $(STAMPS)/venv
	$(PY) -m pip install -q $(ATHERIS_PKG)
	@touch $@

fuzz-shards: build $(STAMPS)/atheris
	@mkdir -p $(FUZZ_DIR)/corpus/shards $(FUZZ_DIR)/artifacts
	@$(PY) csrc/fuzz/fuzz_shards.py --seeds $(FUZZ_DIR)/seeds/shards
	@echo "== fuzz_shards (atheris) for $(FUZZ_SECONDS) s (log: $(FUZZ_DIR)/fuzz_shards.log)"
	@$(PY) csrc/fuzz/fuzz_shards.py -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=3072 -timeout=10 \
	  -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/artifacts/shards- \
	  $(FUZZ_DIR)/corpus/shards $(FUZZ_DIR)/seeds/shards > $(FUZZ_DIR)/fuzz_shards.log 2>&1; rc=$$?; \
	grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^(INFO: seed corpus|Done)" \
	  $(FUZZ_DIR)/fuzz_shards.log; \
	if [ $$rc != 0 ]; then echo "fuzz_shards FAILED (rc=$$rc): see $(FUZZ_DIR)/fuzz_shards.log and $(FUZZ_DIR)/artifacts/"; \
	  grep -m8 -E "Error|Exception|Traceback|SUMMARY" $(FUZZ_DIR)/fuzz_shards.log; exit 1; fi

soak: build
	$(PY) benchmarks/soak.py --root $(DATA_DIR)/train --epochs 20

# ---- Benchmarks (see benchmarks/README.md); not part of `make test` -------------------------------------------
#   make bench                        - every contender and workload, 3 interleaved repetitions (the recipe
#                                       workloads included: ~20 min; BENCH_ARGS=--workloads=recipes: those only)
#   make bench BENCH_ARGS=--quick     - the suite's self-check (< 2 min)
#   make bench-augment-kernels        - the augmentation kernels alone, microseconds per image
# psutil, matplotlib, spdl 0.8 and the peers (NVIDIA DALI's CPU pipeline, torchcodec; webdataset for bench_shards.py; av, soundfile, soxr for
# the video/audio benchmarks; timm for its recipes; s3fs and s3torchconnector for bench_object_store.py)
# go into .venv for the benchmark only: none is a dependency of spdl_torch. The installed torch, torchvision and
# numpy stay as they are (pip gets them as constraints).
BENCH_PKGS  := psutil matplotlib spdl==0.8.0 nvidia-dali-cuda120==2.4.0 torchcodec==0.17.0 webdataset==1.0.2 av \
               soundfile==0.13.1 soxr==1.0.0 timm==1.0.31 s3fs==2026.9.0 s3torchconnector==1.5.0
HIRES_DIR   ?= data/imagenet_hires
BENCH_ARGS  ?=

$(STAMPS)/bench-deps: $(STAMPS)/venv Makefile
	$(PY) -m pip freeze | grep -iE '^(torch|torchvision|numpy)==' > $(STAMPS)/bench-constraints.txt
	$(PY) -m pip install -q -c $(STAMPS)/bench-constraints.txt $(BENCH_PKGS)
	@touch $@

# The augmentation kernels alone (no decode, no resample), microseconds per image at 176 and 224 px.
# Every file of csrc/core/augment but the two that need the rest of the core (the resample, the erase's slot).
AUGMENT_KERNELS := $(filter-out %/resample_program.cpp %/erase.cpp,$(wildcard csrc/core/augment/*.cpp))
bench-augment-kernels:
	@mkdir -p build
	$(CXX) -std=c++20 -O3 -ffp-contract=off -Wall -Wextra -Icsrc -o build/augment_kernels \
	  benchmarks/native/augment_kernels.cc $(AUGMENT_KERNELS)
	build/augment_kernels 176 224

bench: build $(STAMPS)/bench-deps
	$(PY) -m tools.prepare_data --out $(DATA_DIR)
	$(PY) -m tools.prepare_data --out $(HIRES_DIR) --variant hires
	$(PY) -m benchmarks.run --root $(DATA_DIR) --hires-root $(HIRES_DIR) $(BENCH_ARGS)
	$(PY) -m benchmarks.bench_worker_modes --root $(DATA_DIR)/train --workers 2 4 --reps 3
	$(PY) -m benchmarks.bench_object_store --reps 5
	$(PY) -m benchmarks.bench_shards --root $(DATA_DIR)/train --reps 5 --epochs 3 --modes shards,http,s3
	HF_DATASETS_OFFLINE=1 $(PY) -m benchmarks.bench_user_datasets --root $(DATA_DIR) --reps 3 --epochs 1
	$(PY) -m benchmarks.bench_user_datasets --root $(DATA_DIR) --fidelity
	$(PY) -m benchmarks.bench_audio --reps 3

# ---- The GPU check: one script for a GPU machine; see benchmarks/gpu_check.sh ----------------------------
#   make gpu-check-prepare - the bundle a GPU machine without network needs: photos, libjpeg-turbo, wheels
#                            (<= 60 MiB with the tree)
#   make gpu-check-dry     - the rehearsal here: the dry run built from the bundle alone (the machine's FFmpeg and
#                            libjpeg headers hidden), then the torch sources against torch 2.11's headers
#   make gpu-check         - the run on a GPU machine
.PHONY: gpu-check-prepare
gpu-check-prepare: $(STAMPS)/venv
	bash benchmarks/gpu_check_prepare.sh

gpu-check-dry: $(STAMPS)/install
	$(CCACHE_ENV) bash benchmarks/gpu_check_rehearse.sh --out build/gpu_check

gpu-check: $(STAMPS)/install
	bash benchmarks/gpu_check.sh --out build/gpu_check
