# trixie.Cuda's sandbox settings, given to CMake by trixie_test.py alone
# (-DCMAKE_PROJECT_INCLUDE=...): never part of a user's build. In that
# sandbox Debian's libtorch-cuda is unpacked but nvidia-cudnn could not
# download cuDNN, so libtorch_cuda's libcudnn.so.9 is absent:
# - the link ignores the symbols that shared libraries leave unresolved
#   (cuDNN's), so that the binaries link;
# - the one command the build runs with a binary it built, favor-model init
#   (the random model), goes through run_unless_cudnn_missing.sh, which
#   names it instead of failing the build when it cannot load;
# - GoogleTest lists a test binary's tests when ctest runs, not after
#   linking.
string(APPEND CMAKE_EXE_LINKER_FLAGS
       " -Wl,--unresolved-symbols=ignore-in-shared-libs")
set(CMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE PRE_TEST)

# add_custom_command as CMake has it, but `COMMAND favor_model_cli ...`
# becomes `COMMAND run_unless_cudnn_missing.sh <favor-model> ...`.
function(add_custom_command)
  set(args ${ARGV})
  list(FIND args favor_model_cli at)
  if(at GREATER 0)
    math(EXPR before "${at} - 1")
    list(GET args ${before} word)
    if(word STREQUAL "COMMAND")
      list(REMOVE_AT args ${at})
      list(INSERT args ${at}
           ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/run_unless_cudnn_missing.sh
           $<TARGET_FILE:favor_model_cli>)
    endif()
  endif()
  _add_custom_command(${args})
endfunction()
