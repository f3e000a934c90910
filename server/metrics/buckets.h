// Histogram bucket boundaries, sized for this service. One place, so that
// the dashboard's quantile queries and SLO thresholds line up with them.
#ifndef FAVOR_SERVER_METRICS_BUCKETS_H_
#define FAVOR_SERVER_METRICS_BUCKETS_H_

#include <vector>

namespace favor::metrics {

// Durations, in seconds: the 1-2-5 series from 100 µs to 50 s, then 120 s
// (19 bounds). Roughly exponential (×2.15 per step on average) across six
// orders of magnitude: a cached short embedding answers in a few hundred
// microseconds, a million-token sequence or a long queue wait takes tens of
// seconds. Round bounds rather than powers of two, so that thresholds people
// write (100 ms, 1 s) are bucket edges and their fractions are exact.
std::vector<double> DurationBucketsSeconds();

// Token counts (input lengths, batch sizes in tokens): powers of two from 1
// to 2^20 = 1,048,576 (21 bounds), the longest sequence the design serves.
std::vector<double> TokenBuckets();

// Requests per batch: powers of two from 1 to 1024 (11 bounds), the
// batcher's default queue capacity.
std::vector<double> BatchRequestBuckets();

}  // namespace favor::metrics

#endif  // FAVOR_SERVER_METRICS_BUCKETS_H_
