# favor_warnings(<target>): the project's warning set, applied to project code
# only (third-party headers come in as SYSTEM includes and stay quiet).
function(favor_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wno-unused-parameter)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
  if(FAVOR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# LibTorch's CMake package puts its headers on the include path as ordinary
# includes; mark them SYSTEM so its own warnings do not drown ours.
#
# The C++ runtime is named before LibTorch, so that a program looks up
# libstdc++'s symbols in libstdc++.so.6 first. PyTorch's own binaries (the
# pip wheel's LibTorch, pytorch.org's zip) are built with a toolchain that
# links parts of libstdc++ into libtorch.so and exports them; with
# libtorch.so first among a program's libraries, its calls bind to those
# copies, and std::filesystem::remove_all called through them jumped to
# address 0 (PyTorch 2.11's wheel, docs/gpu.md). Debian's LibTorch has no
# such copies; there the order changes nothing.
# tests/platform/link_order_test.sh checks the order.
function(favor_link_torch target visibility)
  target_link_libraries(${target} ${visibility} stdc++ ${TORCH_LIBRARIES}
    OpenMP::OpenMP_CXX)
  target_include_directories(${target} SYSTEM ${visibility} ${TORCH_INCLUDE_DIRS})
endfunction()
