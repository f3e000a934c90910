# The fuzz build (FAVOR_FUZZ=ON; docs/reliability.md): libFuzzer targets
# with AddressSanitizer and UBSan, from Debian's clang, in a build folder of
# their own (make fuzz-build: build-fuzz/). Only what the targets reach is
# compiled, with the sanitizers: the proto library, the torch-free model
# readers (safetensors, config), the tokenizer, and the service's and HTTP
# front's validation sources that tests/fuzz/CMakeLists.txt names. No
# LibTorch, no OpenMP. System libraries (abseil, protobuf, gRPC) link as
# they are, uninstrumented.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FAVOR_FUZZ needs clang (libFuzzer): "
    "cmake -DCMAKE_CXX_COMPILER=clang++ -DFAVOR_FUZZ=ON")
endif()

# Every project object is instrumented for libFuzzer's coverage and checked
# by ASan and UBSan; UBSan's findings abort, so that the fuzzer counts them
# as crashes. -O1: libFuzzer's advice, and quicker to compile on CI's two
# cores than Release's -O3.
set(favor_fuzz_sanitizers -fsanitize=address,undefined
  -fno-sanitize-recover=all -fno-omit-frame-pointer)
add_compile_options(${favor_fuzz_sanitizers} -fsanitize=fuzzer-no-link -O1 -g)
add_link_options(${favor_fuzz_sanitizers})

find_package(absl REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(glog REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(Threads REQUIRED)
enable_testing()

add_subdirectory(proto)
add_subdirectory(server/common)
add_subdirectory(server/tokenizer)
add_subdirectory(server/attention)
add_subdirectory(server/model)
add_subdirectory(server/http)
add_subdirectory(tests/fuzz)
