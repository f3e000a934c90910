// MeanOfSpans (span_pooling.h) against the mean computed row by row, for
// overlapping, nested and whole-input spans.
#include "server/service/span_pooling.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace favor::service {
namespace {

std::vector<float> NaiveMean(const std::vector<float>& rows, int64_t dim,
                             TokenRange span) {
  std::vector<double> sum(dim, 0.0);
  for (int64_t r = span.begin; r < span.end; ++r) {
    for (int64_t c = 0; c < dim; ++c) sum[c] += rows[r * dim + c];
  }
  std::vector<float> mean(dim);
  for (int64_t c = 0; c < dim; ++c) mean[c] = sum[c] / span.size();
  return mean;
}

TEST(SpanPoolingTest, EachSpanIsTheMeanOfItsRows) {
  constexpr int64_t kRows = 300, kDim = 5;
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0, 10);
  std::vector<float> rows(kRows * kDim);
  for (float& value : rows) value = normal(random);
  const std::vector<TokenRange> spans = {
      {0, 300}, {10, 20}, {15, 16}, {0, 1}, {299, 300}, {100, 250}, {10, 20}};
  const std::vector<float> means = MeanOfSpans(rows, kDim, spans);
  ASSERT_EQ(means.size(), spans.size() * kDim);
  for (size_t j = 0; j < spans.size(); ++j) {
    const std::vector<float> want = NaiveMean(rows, kDim, spans[j]);
    for (int64_t c = 0; c < kDim; ++c) {
      EXPECT_NEAR(means[j * kDim + c], want[c], 1e-4) << j << " " << c;
    }
  }
}

TEST(SpanPoolingTest, NoSpansGiveNothing) {
  EXPECT_TRUE(MeanOfSpans(std::vector<float>(8, 1.0f), 2, {}).empty());
}

}  // namespace
}  // namespace favor::service
