// Positions [begin, end) in one sequence of tokens: a window of a long
// input, or the tokens a late-chunking span covers.
#ifndef FAVOR_SERVER_SERVICE_TOKEN_RANGE_H_
#define FAVOR_SERVER_SERVICE_TOKEN_RANGE_H_

#include <cstdint>

namespace favor::service {

struct TokenRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const TokenRange& other) const {
    return begin == other.begin && end == other.end;
  }
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_TOKEN_RANGE_H_
