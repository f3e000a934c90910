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

# The server arrives with issue 4; until then this says so instead of
# pretending to serve.
serve: build
	@if [ -x $(BUILD_DIR)/server/favor-server ]; then \
	  exec $(BUILD_DIR)/server/favor-server --model_repository=$(BUILD_DIR)/models; \
	else \
	  echo "make serve: favor-server is not built yet (the gRPC server is issue 4); 'make test' and 'make bench' work" >&2; exit 1; \
	fi

bench: build
	@$(BUILD_DIR)/bench/attention_bench --benchmark_repetitions=5 --benchmark_display_aggregates_only=true

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR)
