// favor-bench's report of one run: what was run, what the client measured
// (throughput, latency percentiles, errors by code) and, when /metrics was
// scraped, what the server measured. As JSON for machines (`--json`) or as
// a few aligned lines for people.
#ifndef FAVOR_CLIENT_LOADGEN_REPORT_H_
#define FAVOR_CLIENT_LOADGEN_REPORT_H_

#include <optional>
#include <string>

#include "client/loadgen/load_generator.h"
#include "client/loadgen/server_metrics.h"
#include "nlohmann/json.hpp"

namespace favor::bench {

struct BenchReport {
  LoadOptions options;
  // The model the calls went to, as the server names it.
  std::string model;
  LoadResult result;
  // Set when /metrics was scraped before and after the run.
  std::optional<ServerMetricsDelta> server;
};

// Throughputs of the counted OK calls over the measured time; 0 when it is
// 0.
struct Throughput {
  double requests_per_second = 0;
  double sequences_per_second = 0;
  double tokens_per_second = 0;
};
Throughput ThroughputOf(const LoadResult& result);

// {"config": {...}, "model", "measured_seconds", "warmup_calls",
//  "requests": {"total", "ok", "errors": {"CODE_NAME": n}}, "sequences",
//  "tokens", "throughput": {"requests_per_second", "sequences_per_second",
//  "tokens_per_second"}, "latency_ms": {"count", "min", "mean", "p50",
//  "p90", "p99", "p99_9", "max"} (null but "count" when no call
//  succeeded), "server": {...} (with a scrape)}.
nlohmann::json ReportToJson(const BenchReport& report);

std::string ReportToText(const BenchReport& report);

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_REPORT_H_
