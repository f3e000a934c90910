# Writes OUT, the one source file that holds the git revision favor-server
# is built from (server/common/build_info.h), run at every build by the
# favor_build_info_file target. configure_file rewrites OUT only when its
# text changes, so a new commit recompiles this one file and relinks.
# Outside a git checkout (a source tarball) the revision is "unknown".
execute_process(
  COMMAND git -C "${SOURCE_DIR}" rev-parse HEAD
  OUTPUT_VARIABLE FAVOR_GIT_REVISION
  RESULT_VARIABLE git_result
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET)
if(NOT git_result EQUAL 0 OR FAVOR_GIT_REVISION STREQUAL "")
  set(FAVOR_GIT_REVISION unknown)
endif()
configure_file("${TEMPLATE}" "${OUT}" @ONLY)
