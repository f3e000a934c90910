// What favor-server was built from: Favor's version (CMake's project
// version) and the git commit of the source tree. Both are compiled into
// one small generated file (cmake/BuildInfo.cmake), so a new commit
// recompiles that file only. GET /info reports them.
#ifndef FAVOR_SERVER_COMMON_BUILD_INFO_H_
#define FAVOR_SERVER_COMMON_BUILD_INFO_H_

namespace favor {

// "0.1.0".
const char* FavorVersion();

// The full hash of the commit checked out when favor-server was built
// (`git rev-parse HEAD`), or "unknown" outside a git checkout.
const char* FavorGitRevision();

}  // namespace favor

#endif  // FAVOR_SERVER_COMMON_BUILD_INFO_H_
