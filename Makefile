# Favor: the two commands of the README's Quick start, and a few helpers.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The fuzz targets' own build (clang, libFuzzer, ASan, UBSan;
# docs/reliability.md), and how long `make fuzz` runs each target.
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 3600

.PHONY: deps configure build test test-platform serve bench soak image image-gpu \
	format clean fuzz-build fuzz mutate train-default train-data retrieval-bench \
	transfer-study bench-peers distill swap-report

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The host's suites, then every fuzz target for 30 s (ctest label `fuzz`).
# The platform checks (labels trixie and container) are test-platform's
# (docs/testing.md says what runs where).
PLATFORM_LABELS = trixie|container
test: build fuzz-build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -LE '$(PLATFORM_LABELS)'
	@ctest --test-dir $(FUZZ_BUILD_DIR) --output-on-failure -j $(JOBS) -L fuzz

# Favor on Debian 13 (LibTorch 2.6; the CUDA build compiled and linked) and
# the container image, built and run; CI runs it after `make test`. Needs
# root; the first run makes its roots and caches under ~/.cache/favor.
test-platform: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -L '$(PLATFORM_LABELS)' \
		-E '^container\.GpuImage$$'

# The GPU image (Dockerfile.gpu) built with podman and checked without a GPU
# (tests/container; docs/container.md, "GPU variant"): about 40 GB of free
# disk and 2.7 GB of downloads the first time, so not part of CI.
image-gpu: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -R '^container\.GpuImage$$'


fuzz-build: deps
	@cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DFAVOR_FUZZ=ON \
		-DCMAKE_CXX_COMPILER=clang++ >/dev/null
	@cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS)

# A longer campaign: each target for FUZZ_SECONDS, $(JOBS) at a time, its
# working corpus kept in $(FUZZ_BUILD_DIR)/corpus/<target> between runs and
# libFuzzer's output in $(FUZZ_BUILD_DIR)/campaign/<target>.log; then the
# table of docs/reliability.md (tools/fuzz_summary.py). FUZZ_TARGETS (a
# ctest -R regex, e.g. 'safetensors|model_config') runs some of them: a
# campaign split over several sittings.
FUZZ_TARGETS ?= _fuzz$$
fuzz: fuzz-build
	@FAVOR_FUZZ_SECONDS=$(FUZZ_SECONDS) \
		FAVOR_FUZZ_CORPUS=$(abspath $(FUZZ_BUILD_DIR))/corpus \
		FAVOR_FUZZ_LOGS=$(abspath $(FUZZ_BUILD_DIR))/campaign \
		ctest --test-dir $(FUZZ_BUILD_DIR) --output-on-failure -j $(JOBS) \
		-L fuzz -R '$(FUZZ_TARGETS)' --timeout $$(( $(FUZZ_SECONDS) + 600 ))
	@/usr/bin/python3 tools/fuzz_summary.py $(FUZZ_BUILD_DIR)/campaign

# The mutation campaign (docs/testing.md): every mutant of
# tools/mutants.py planted in turn, the tests that should notice run, the
# file restored; the table goes to $(BUILD_DIR)/mutation-report.md. Hours on
# 2 cores; not part of `make test`. MUTATE_FLAGS="--only ID,..." for a few.
MUTATE_FLAGS ?=
mutate: build
	@/usr/bin/python3 tools/mutate.py --build-dir $(BUILD_DIR) --jobs $(JOBS) \
		--output $(BUILD_DIR)/mutation-report.md $(MUTATE_FLAGS)

# favor-server on 127.0.0.1:50051 (gRPC), 127.0.0.1:8080 (HTTP/JSON, the
# OpenAI-compatible /v1/embeddings) and 127.0.0.1:9464 (/metrics) with the
# default model, which the build generates into $(BUILD_DIR)/models.
serve: build
	@exec $(BUILD_DIR)/server/favor-server --model_repository=$(BUILD_DIR)/models

bench: build
	@OMP_WAIT_POLICY=passive $(BUILD_DIR)/bench/attention_bench --benchmark_repetitions=5 --benchmark_display_aggregates_only=true
	@OMP_WAIT_POLICY=passive $(BUILD_DIR)/bench/model_bench --benchmark_repetitions=3
	@OMP_WAIT_POLICY=passive $(BUILD_DIR)/bench/gemm_bf16_bench --benchmark_repetitions=3 --benchmark_display_aggregates_only=true
	@$(BUILD_DIR)/bench/tokenizer_bench --benchmark_repetitions=3 --benchmark_display_aggregates_only=true

# Favor against ONNX Runtime on the same encoder (bench/peer_ort/): installs
# onnxruntime-node into $(BUILD_DIR)/peers once, exports the default model
# and its softmax twin to ONNX, checks parity with favor-server, then times
# the programs in turns and prints the table with issue 35's goals.
# PEER_BENCH_FLAGS="--rounds 5" for more rounds (3 by default).
PEER_BENCH_FLAGS ?=
bench-peers: build
	@bench/peer_ort/setup.sh $(BUILD_DIR)
	@/usr/bin/python3 bench/peer_ort/peer_bench.py --build-dir $(BUILD_DIR) \
		$(PEER_BENCH_FLAGS)

# A long mixed load with a reload a minute, sampling RSS, file descriptors,
# threads and p99 every 10 s (docs/reliability.md).
SOAK_MINUTES ?= 30
soak: build
	@/usr/bin/python3 bench/soak.py $(BUILD_DIR)/server/favor-server \
		$(BUILD_DIR)/models proto --minutes=$(SOAK_MINUTES)

# The default model (models/default/README.md): Debian's descriptions,
# WordNet and manual pages (tools/train_default/setup.sh installs them), then
# contrastive training on the CPU; writes models/default.
TRAIN_DIR ?= $(BUILD_DIR)/train-default
TRAIN_FLAGS ?=
TRAIN_ARGS = --favor-model $(BUILD_DIR)/server/model/tools/favor-model \
	--tokenizer $(BUILD_DIR)/tokenizers/bert-base-uncased/tokenizer.json \
	--work $(TRAIN_DIR) --output models/default
train-data: build
	@tools/train_default/setup.sh $(TRAIN_DIR)
	@/usr/bin/python3 tools/train_default/train.py $(TRAIN_ARGS) --data-only
train-default: train-data
	@OMP_WAIT_POLICY=passive /usr/bin/python3 tools/train_default/train.py \
		$(TRAIN_ARGS) $(TRAIN_FLAGS)

# Retrieval on the held-out sets: the default model, the random one and
# BM25 (bench/retrieval_bench.py; docs/models.md records a run).
retrieval-bench: train-data
	@/usr/bin/python3 bench/retrieval_bench.py \
		--server $(BUILD_DIR)/server/favor-server \
		--favor-model $(BUILD_DIR)/server/model/tools/favor-model \
		--data $(TRAIN_DIR)/data \
		--model trained=$(BUILD_DIR)/models/default \
		--model random=$(BUILD_DIR)/random-models/random

# Transfer (docs/attention.md): a model trained with softmax
# attention, served with its attention swapped for FAVOR+ and FAVOR++.
TRANSFER_DIR ?= $(BUILD_DIR)/transfer
TRANSFER_STEPS ?= 600
transfer-study: train-data
	@test -f $(TRANSFER_DIR)/softmax/model.safetensors || \
		OMP_WAIT_POLICY=passive /usr/bin/python3 tools/train_default/train.py \
		--favor-model $(BUILD_DIR)/server/model/tools/favor-model \
		--tokenizer $(BUILD_DIR)/tokenizers/bert-base-uncased/tokenizer.json \
		--work $(TRAIN_DIR) --output $(TRANSFER_DIR)/softmax \
		--kernel softmax --steps $(TRANSFER_STEPS)
	@/usr/bin/python3 bench/transfer_study.py \
		--server $(BUILD_DIR)/server/favor-server \
		--data $(TRAIN_DIR)/data --model $(TRANSFER_DIR)/softmax

# Distillation (tools/distill; models/README.md): a softmax teacher's
# weights with the attention swapped, trained to reproduce its hidden
# states and embeddings; the teacher a Favor folder or a Hugging Face
# BERT / RoBERTa / XLM-R / NomicBERT / ModernBERT folder (the student: the
# same layout plus a favor.json naming its attention). Resumable: the same
# command with DISTILL_FLAGS=--resume continues from
# $(DISTILL_OUTPUT).work/checkpoint.pt. The default teacher is the softmax
# twin of the default model (models/softmax-teacher, docs/models.md), or
# where a checkout lacks it, the one transfer-study's training writes.
DISTILL_TEACHER ?= $(if $(wildcard models/softmax-teacher/model.safetensors),models/softmax-teacher,$(TRANSFER_DIR)/softmax)
DISTILL_OUTPUT ?= $(BUILD_DIR)/distilled
DISTILL_DATA ?= $(TRAIN_DIR)/data
DISTILL_STEPS ?= 1000
DISTILL_MINUTES ?= 0
DISTILL_KERNEL ?= favor+
DISTILL_FEATURES ?= 256
# The learning rate and the weight of the pooled embeddings' cosine term
# that did best on the default's shape (docs/models.md: lr 3e-4 over 1e-4
# and 1e-3; the cosine weighted 10 against each layer's hidden states 1).
DISTILL_LR ?= 3e-4
DISTILL_COSINE_WEIGHT ?= 10
# The student's feature epsilon: 1e-8, not the server's default 1e-4, under
# which a softmax teacher's swapped features nearly all sit on the floor
# (make swap-report) and the students plateaued (docs/models.md, fifth
# round: recall@1 0.661 after 120 steps at 1e-8, 0.636 at 1e-4).
DISTILL_EPSILON ?= 1e-8
DISTILL_FLAGS ?=
distill: build
	@test -e $(DISTILL_DATA) || $(MAKE) train-data
	@OMP_WAIT_POLICY=passive /usr/bin/python3 tools/distill/distill.py \
		--teacher $(DISTILL_TEACHER) --output $(DISTILL_OUTPUT) \
		--favor-model $(BUILD_DIR)/server/model/tools/favor-model \
		--data $(DISTILL_DATA) --steps $(DISTILL_STEPS) \
		--minutes $(DISTILL_MINUTES) --kernel $(DISTILL_KERNEL) \
		--features $(DISTILL_FEATURES) --epsilon $(DISTILL_EPSILON) \
		--lr $(DISTILL_LR) --cosine-weight $(DISTILL_COSINE_WEIGHT) \
		$(DISTILL_FLAGS)

# Before distilling: how far the teacher's attention is from the student's
# kernel, layer by layer (query and key norms, row entropy, the kernel's
# error at each m of SWAP_REPORT_FEATURES against uniform attention's;
# tools/distill/swap_report.py, models/README.md).
SWAP_REPORT_FEATURES ?= 256,4096
swap-report: build
	@test -e $(DISTILL_DATA) || $(MAKE) train-data
	@OMP_WAIT_POLICY=passive /usr/bin/python3 tools/distill/swap_report.py \
		--model $(DISTILL_TEACHER) \
		--favor-model $(BUILD_DIR)/server/model/tools/favor-model \
		--data $(DISTILL_DATA) --kernel $(DISTILL_KERNEL) \
		--features $(SWAP_REPORT_FEATURES) --epsilon $(DISTILL_EPSILON)

# The container image (Dockerfile; docs/container.md), with podman (which
# make deps installs) or: docker build -t favor . In a sandbox without
# cgroups: make image PODMAN_FLAGS="--cgroup-manager=cgroupfs" IMAGE_FLAGS="--isolation=chroot"
PODMAN_FLAGS ?=
IMAGE_FLAGS ?=
image:
	@podman $(PODMAN_FLAGS) build --format docker $(IMAGE_FLAGS) -t favor .

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR) $(FUZZ_BUILD_DIR)
