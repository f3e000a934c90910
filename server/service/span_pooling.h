// Late chunking's pooling: the mean of each span's rows of one sequence's
// output vectors, all spans in one pass over the rows.
//
// Cost: O(rows × dim + spans × dim) whatever the spans (they may overlap or
// cover the whole input): running sums are kept at every span boundary,
// and a span's sum is the difference of two of them. The sums are doubles,
// so a mean over a million rows keeps float precision.
#ifndef FAVOR_SERVER_SERVICE_SPAN_POOLING_H_
#define FAVOR_SERVER_SERVICE_SPAN_POOLING_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "server/service/token_range.h"

namespace favor::service {

// `rows` holds rows of `dim` floats; every span is non-empty and inside
// them. Returns spans.size() rows of `dim` floats, span j's the mean of rows
// [spans[j].begin, spans[j].end).
std::vector<float> MeanOfSpans(absl::Span<const float> rows, int64_t dim,
                               absl::Span<const TokenRange> spans);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_SPAN_POOLING_H_
