// Status propagation macros. Debian's abseil (20220623) ships none, so the
// project defines these two once, here.
#ifndef FAVOR_SERVER_COMMON_STATUS_MACROS_H_
#define FAVOR_SERVER_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FAVOR_STATUS_CONCAT_INNER_(a, b) a##b
#define FAVOR_STATUS_CONCAT_(a, b) FAVOR_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::absl::Status favor_status_ = (expr);       \
    if (!favor_status_.ok()) return favor_status_; \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares or assigns `x` from a
// StatusOr, returning its status from the enclosing function on error.
#define ASSIGN_OR_RETURN(lhs, rexpr)                                         \
  ASSIGN_OR_RETURN_IMPL_(FAVOR_STATUS_CONCAT_(favor_statusor_, __LINE__), lhs, \
                         rexpr)
#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                           \
  if (!statusor.ok()) return statusor.status();      \
  lhs = std::move(statusor).value()

#endif  // FAVOR_SERVER_COMMON_STATUS_MACROS_H_
