#include "server/service/span_pooling.h"

#include <algorithm>

namespace favor::service {

std::vector<float> MeanOfSpans(absl::Span<const float> rows, int64_t dim,
                               absl::Span<const TokenRange> spans) {
  std::vector<int64_t> marks;
  marks.reserve(2 * spans.size());
  for (const TokenRange& span : spans) {
    marks.push_back(span.begin);
    marks.push_back(span.end);
  }
  std::sort(marks.begin(), marks.end());
  marks.erase(std::unique(marks.begin(), marks.end()), marks.end());
  // sums[m * dim + c]: column c summed over rows [0, marks[m]).
  std::vector<double> sums(marks.size() * dim);
  std::vector<double> running(dim, 0.0);
  int64_t row = 0;
  for (size_t m = 0; m < marks.size(); ++m) {
    for (; row < marks[m]; ++row) {
      for (int64_t c = 0; c < dim; ++c) running[c] += rows[row * dim + c];
    }
    std::copy(running.begin(), running.end(), sums.begin() + m * dim);
  }
  const auto mark = [&](int64_t position) {
    return std::lower_bound(marks.begin(), marks.end(), position) -
           marks.begin();
  };
  std::vector<float> means(spans.size() * dim);
  for (size_t j = 0; j < spans.size(); ++j) {
    const double* begin = &sums[mark(spans[j].begin) * dim];
    const double* end = &sums[mark(spans[j].end) * dim];
    const double count = static_cast<double>(spans[j].size());
    for (int64_t c = 0; c < dim; ++c) {
      means[j * dim + c] = static_cast<float>((end[c] - begin[c]) / count);
    }
  }
  return means;
}

}  // namespace favor::service
