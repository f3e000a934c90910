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
function(favor_link_torch target visibility)
  target_link_libraries(${target} ${visibility} ${TORCH_LIBRARIES} OpenMP::OpenMP_CXX)
  target_include_directories(${target} SYSTEM ${visibility} ${TORCH_INCLUDE_DIRS})
endfunction()
