#include "server/metrics/buckets.h"

#include <cmath>

namespace favor::metrics {
namespace {

std::vector<double> PowersOfTwo(int max_exponent) {
  std::vector<double> bounds;
  for (int exponent = 0; exponent <= max_exponent; ++exponent) {
    bounds.push_back(std::ldexp(1.0, exponent));
  }
  return bounds;
}

}  // namespace

std::vector<double> DurationBucketsSeconds() {
  // Written out rather than computed: 2 * 1e-4 is not the double nearest
  // 0.0002, and the bounds appear as text in the `le` labels.
  return {0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
          0.2,    0.5,    1.0,    2.0,   5.0,   10.0,  20.0, 50.0, 120.0};
}

std::vector<double> TokenBuckets() { return PowersOfTwo(20); }

std::vector<double> BatchRequestBuckets() { return PowersOfTwo(10); }

}  // namespace favor::metrics
