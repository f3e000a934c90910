#include "client/loadgen/report.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace favor::bench {
namespace {

double Milliseconds(absl::Duration duration) {
  return absl::ToDoubleMilliseconds(duration);
}

nlohmann::json ConfigToJson(const LoadOptions& options) {
  const bool open_loop = options.request_rate_per_second > 0;
  nlohmann::json config = {
      {"mode", open_loop ? "open_loop" : "closed_loop"},
      {"streaming", options.streaming},
      {"lengths", options.lengths.ToString()},
      {"inputs_per_call", options.inputs_per_call},
      {"duration_seconds", absl::ToDoubleSeconds(options.duration)},
      {"request_count", options.request_count},
      {"warmup_seconds", absl::ToDoubleSeconds(options.warmup)},
      {"seed", options.seed},
      {"inputs", options.corpus != nullptr ? "text" : "token_ids"}};
  if (options.corpus != nullptr) {
    config["corpus_documents"] = options.corpus->num_documents();
    config["corpus_tokens"] = options.corpus->total_tokens();
  }
  if (open_loop) {
    config["request_rate_per_second"] = options.request_rate_per_second;
  } else {
    config["concurrency"] = options.concurrency;
  }
  return config;
}

nlohmann::json LatencyToJson(const LatencySummary& latency) {
  if (latency.count == 0) {  // no call succeeded: nothing was measured
    return {{"count", 0},      {"min", nullptr},   {"mean", nullptr},
            {"p50", nullptr},  {"p90", nullptr},   {"p99", nullptr},
            {"p99_9", nullptr}, {"max", nullptr}};
  }
  return {{"count", latency.count},
          {"min", Milliseconds(latency.min)},
          {"mean", Milliseconds(latency.mean)},
          {"p50", Milliseconds(latency.p50)},
          {"p90", Milliseconds(latency.p90)},
          {"p99", Milliseconds(latency.p99)},
          {"p99_9", Milliseconds(latency.p99_9)},
          {"max", Milliseconds(latency.max)}};
}

nlohmann::json ServerToJson(const ServerMetricsDelta& server) {
  return {{"queued_inputs", server.queued_inputs},
          {"queue_seconds_total", server.queue_seconds_total},
          {"queue_ms_mean", server.queue_seconds_mean * 1e3},
          {"batches", server.batches},
          {"compute_seconds_total", server.compute_seconds_total},
          {"compute_ms_mean", server.compute_seconds_mean * 1e3},
          {"batch_size_mean", server.batch_size_mean},
          {"requests", server.requests},
          {"request_seconds_total", server.request_seconds_total},
          {"request_ms_mean", server.request_seconds_mean * 1e3},
          {"tokens_processed", server.tokens_processed},
          {"tokenizations", server.tokenizations},
          {"tokenization_seconds_total", server.tokenization_seconds_total},
          {"tokenization_ms_mean", server.tokenization_seconds_mean * 1e3},
          {"tokenization_share", server.tokenization_share}};
}

nlohmann::json ErrorsToJson(const RunTotals& totals) {
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [code, count] : totals.errors) {
    errors[absl::StatusCodeToString(code)] = count;
  }
  return errors;
}

std::string Mode(const LoadOptions& options) {
  const std::string transport = options.streaming ? "streaming" : "unary";
  if (options.request_rate_per_second > 0) {
    return absl::StrFormat("open loop, %.1f calls/s Poisson, %s",
                           options.request_rate_per_second, transport);
  }
  return absl::StrFormat("closed loop, concurrency %d, %s", options.concurrency,
                         transport);
}

}  // namespace

Throughput ThroughputOf(const LoadResult& result) {
  Throughput throughput;
  const double seconds = absl::ToDoubleSeconds(result.measured_time);
  if (seconds <= 0) return throughput;
  throughput.requests_per_second = result.totals.ok_calls / seconds;
  throughput.sequences_per_second = result.totals.sequences / seconds;
  throughput.tokens_per_second = result.totals.tokens / seconds;
  return throughput;
}

nlohmann::json ReportToJson(const BenchReport& report) {
  const RunTotals& totals = report.result.totals;
  const Throughput throughput = ThroughputOf(report.result);
  nlohmann::json json = {
      {"config", ConfigToJson(report.options)},
      {"model", report.model},
      {"measured_seconds", absl::ToDoubleSeconds(report.result.measured_time)},
      {"warmup_calls", report.result.warmup_calls},
      {"requests",
       {{"total", totals.calls},
        {"ok", totals.ok_calls},
        {"errors", ErrorsToJson(totals)}}},
      {"sequences", totals.sequences},
      {"tokens", totals.tokens},
      {"throughput",
       {{"requests_per_second", throughput.requests_per_second},
        {"sequences_per_second", throughput.sequences_per_second},
        {"tokens_per_second", throughput.tokens_per_second}}},
      {"latency_ms", LatencyToJson(report.result.latency)}};
  if (report.server.has_value()) json["server"] = ServerToJson(*report.server);
  return json;
}

std::string ReportToText(const BenchReport& report) {
  const RunTotals& totals = report.result.totals;
  const LatencySummary& latency = report.result.latency;
  const Throughput throughput = ThroughputOf(report.result);
  std::string text = absl::StrFormat(
      "model %s: %s, lengths %s, %d %s input(s) per call\n"
      "measured %.3f s after %d warm-up calls\n"
      "calls: %d (%d ok, %d failed)\n"
      "throughput: %.2f requests/s, %.2f sequences/s, %.1f tokens/s\n",
      report.model, Mode(report.options), report.options.lengths.ToString(),
      report.options.inputs_per_call,
      report.options.corpus != nullptr ? "text" : "token id",
      absl::ToDoubleSeconds(report.result.measured_time),
      report.result.warmup_calls, totals.calls, totals.ok_calls,
      totals.calls - totals.ok_calls, throughput.requests_per_second,
      throughput.sequences_per_second, throughput.tokens_per_second);
  if (latency.count == 0) {
    absl::StrAppend(&text, "latency (ms): none (no call succeeded)\n");
  } else {
    absl::StrAppendFormat(
        &text,
        "latency (ms): p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  "
        "(min %.3f, mean %.3f, max %.3f)\n",
        Milliseconds(latency.p50), Milliseconds(latency.p90),
        Milliseconds(latency.p99), Milliseconds(latency.p99_9),
        Milliseconds(latency.min), Milliseconds(latency.mean),
        Milliseconds(latency.max));
  }
  for (const auto& [code, count] : totals.errors) {
    absl::StrAppend(&text, "errors ", absl::StatusCodeToString(code), ": ",
                    count, "\n");
  }
  if (report.server.has_value()) {
    const ServerMetricsDelta& server = *report.server;
    absl::StrAppendFormat(
        &text,
        "server: queue %.3f ms mean over %d inputs; compute %.3f ms mean "
        "over %d batches (%.2f inputs each, %.3f s in all); %d tokens\n",
        server.queue_seconds_mean * 1e3, server.queued_inputs,
        server.compute_seconds_mean * 1e3, server.batches,
        server.batch_size_mean, server.compute_seconds_total,
        server.tokens_processed);
    if (server.tokenizations > 0) {
      absl::StrAppendFormat(
          &text,
          "server tokenisation: %.3f ms mean over %d calls, %.2f%% of the "
          "calls' %.3f s on the server\n",
          server.tokenization_seconds_mean * 1e3, server.tokenizations,
          server.tokenization_share * 100, server.request_seconds_total);
    }
  }
  return text;
}

}  // namespace favor::bench
