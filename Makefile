# Favor: the two commands of the README's Quick start, and a few helpers.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps configure build test serve bench format clean

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# favor-server on 127.0.0.1:50051 (metrics on 127.0.0.1:9464) with the
# default model, which the build generates into $(BUILD_DIR)/models.
serve: build
	@exec $(BUILD_DIR)/server/favor-server --model_repository=$(BUILD_DIR)/models

bench: build
	@OMP_WAIT_POLICY=passive $(BUILD_DIR)/bench/attention_bench --benchmark_repetitions=5 --benchmark_display_aggregates_only=true
	@OMP_WAIT_POLICY=passive $(BUILD_DIR)/bench/model_bench --benchmark_repetitions=3

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR)
