// favor-bench: a load generator for a Favor server, in the spirit of
// Triton's perf_analyzer, on favor::Client (client/loadgen/load_generator.h
// says what the load is). Flags live here only and are copied into the
// library's options.
//
// The run: GetModel (vocabulary size and limits, so that token ids and
// lengths stay valid), with --corpus the corpus tokenised once by the
// model's tokenizer (Tokenize) so that texts can be cut to token lengths, a
// warm-up that is not counted, the measured phase, and the report:
// throughput (requests/s, sequences/s, tokens/s), latency percentiles (p50,
// p90, p99, p99.9) and errors by code; with --metrics_address, the server's
// own queue, compute and tokenisation times of the measured phase from
// /metrics scraped before and after it.
//
// Exit code: 0 when the run completed with at least one successful call;
// the most frequent error code when every counted call failed; the gRPC
// code of a failure before the run (3 for bad usage, 14 when the server
// cannot be reached, ...), with one line on stderr.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/loadgen/http_get.h"
#include "client/loadgen/length_distribution.h"
#include "client/loadgen/load_generator.h"
#include "client/loadgen/prometheus_text.h"
#include "client/loadgen/report.h"
#include "client/loadgen/server_metrics.h"
#include "client/loadgen/text_corpus.h"
#include "client/cli/connection.h"
#include "client/cli/connection_flags.h"
#include "client/cli/flag_parsing.h"
#include "client/cli/read_file.h"
#include "client/cli/tool_main.h"
#include "favor/client.h"

// ---- Connection (the rest: client/cli/connection_flags.h) ----
ABSL_FLAG(absl::Duration, deadline, absl::Seconds(60),
          "deadline of each call (or stream message), from its sending");
ABSL_FLAG(int, max_attempts, 1,
          "attempts per call; 1 (the default) counts every refusal as an "
          "error instead of retrying it");

// ---- The load ----
ABSL_FLAG(std::string, model, "", "model name; empty: the server's default");
ABSL_FLAG(int, concurrency, 1,
          "closed loop: callers, each with one call in flight");
ABSL_FLAG(double, request_rate, 0,
          "open loop when > 0: calls per second, Poisson arrivals "
          "(--concurrency is then ignored)");
ABSL_FLAG(std::string, lengths, "fixed:128",
          "input lengths in tokens: fixed:N, uniform:MIN:MAX or "
          "lognormal:MEDIAN:SIGMA (capped at the model's limits)");
ABSL_FLAG(std::string, corpus, "",
          "send text: a file of documents, one per line, cut into texts of "
          "--lengths tokens as the model's tokenizer counts them; empty: "
          "random token ids");
ABSL_FLAG(int, inputs_per_call, 1, "inputs (sequences) per Embed call");
ABSL_FLAG(bool, streaming, false,
          "use EmbedStream (one stream, --concurrency messages in flight) "
          "instead of unary Embed");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10),
          "length of the measured phase (0: bounded by --requests only)");
ABSL_FLAG(int64_t, requests, 0,
          "calls of the measured phase (0: bounded by --duration only); "
          "with both, whichever ends first");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(2),
          "calls sent during this first stretch are not counted");
ABSL_FLAG(uint64_t, seed, 1,
          "seed of lengths, token ids, text cuts and arrivals");

// ---- Output ----
ABSL_FLAG(std::string, metrics_address, "",
          "HOST:PORT of the server's /metrics (e.g. localhost:9464): scraped "
          "before and after the measured phase for the server's queue and "
          "compute times; empty: no scrape");
ABSL_FLAG(bool, json, false, "print the report as one JSON object");

namespace {

using favor::cli::UsageError;

constexpr char kProgram[] = "favor-bench";

// The server records a batch's compute time and tokens just after it has
// answered the batch's calls, so a scrape taken the moment the last answer
// arrives can miss them: each scrape waits this long after the calls.
constexpr absl::Duration kMetricsSettle = absl::Milliseconds(250);

absl::StatusOr<std::unique_ptr<favor::Client>> NewClient() {
  favor::cli::ConnectionSettings settings =
      favor::cli::ConnectionSettingsFromFlags();
  settings.deadline = absl::GetFlag(FLAGS_deadline);
  settings.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  settings.user_agent_prefix = "favor-bench/0.1.0";
  return favor::cli::NewClient(settings);
}

// Keeps every call within the model's limits: inputs per call, and lengths
// capped so that each input fits max_tokens_per_input and each call
// max_tokens_per_call.
absl::Status FitToModel(const favor::ModelInfo& model,
                        favor::bench::LoadOptions* options) {
  const favor::ModelLimits& limits = model.limits;
  if (options->inputs_per_call < 1 ||
      options->inputs_per_call > limits.max_inputs_per_call) {
    return UsageError(
        absl::StrCat("--inputs_per_call=", options->inputs_per_call,
                     " is outside [1, ", limits.max_inputs_per_call,
                     "] (model '", model.name, "' max_inputs_per_call)"));
  }
  absl::StatusOr<favor::bench::LengthDistribution> lengths =
      favor::bench::LengthDistribution::Parse(absl::GetFlag(FLAGS_lengths));
  if (!lengths.ok()) return lengths.status();
  const int64_t cap =
      std::min(limits.max_tokens_per_input,
               limits.max_tokens_per_call / options->inputs_per_call);
  absl::StatusOr<favor::bench::LengthDistribution> capped =
      lengths->CappedAt(cap);
  if (!capped.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        capped.status().message(), " (model '", model.name,
        "': max_tokens_per_input ", limits.max_tokens_per_input,
        ", max_tokens_per_call ", limits.max_tokens_per_call, " over ",
        options->inputs_per_call, " input(s) per call)"));
  }
  options->lengths = *std::move(capped);
  return absl::OkStatus();
}

// --corpus, tokenised by `model`'s tokenizer; null without --corpus.
absl::StatusOr<std::shared_ptr<const favor::bench::TextCorpus>> CorpusFromFlags(
    favor::Client* client, const favor::ModelInfo& model) {
  const std::string path = absl::GetFlag(FLAGS_corpus);
  if (path.empty()) return nullptr;
  absl::StatusOr<std::string> text = favor::cli::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<favor::bench::TextCorpus> corpus =
      favor::bench::TokenizeCorpus(client, model,
                                   favor::bench::SplitDocuments(*text));
  if (!corpus.ok()) {
    return absl::Status(
        corpus.status().code(),
        absl::StrCat("--corpus ", path, ": ", corpus.status().message()));
  }
  return std::make_shared<const favor::bench::TextCorpus>(*std::move(corpus));
}

// The load of the flags, with token ids below the model's vocabulary size.
absl::StatusOr<favor::bench::LoadOptions> LoadOptionsFromFlags(
    const favor::ModelInfo& model) {
  favor::bench::LoadOptions options;
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.request_rate_per_second = absl::GetFlag(FLAGS_request_rate);
  options.inputs_per_call = absl::GetFlag(FLAGS_inputs_per_call);
  options.streaming = absl::GetFlag(FLAGS_streaming);
  options.duration = absl::GetFlag(FLAGS_duration);
  options.request_count = absl::GetFlag(FLAGS_requests);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.call_timeout = absl::GetFlag(FLAGS_deadline);
  options.model = model.name;
  options.vocab_size = model.config.vocab_size;
  absl::Status fits = FitToModel(model, &options);
  if (!fits.ok()) return fits;
  absl::Status valid = favor::bench::ValidateLoadOptions(options);
  if (!valid.ok()) return valid;
  return options;
}

absl::StatusOr<std::vector<favor::bench::PrometheusSample>> Scrape(
    const std::string& address) {
  absl::StatusOr<std::string> body = favor::bench::HttpGet(address, "/metrics");
  if (!body.ok()) return body.status();
  return favor::bench::ParsePrometheusText(*body);
}

// The warm-up on its own, so that the scrapes bracket the measured phase.
absl::Status WarmUpAlone(favor::Client* client,
                         const favor::bench::LoadOptions& options,
                         int64_t* warmup_calls) {
  if (options.warmup <= absl::ZeroDuration()) return absl::OkStatus();
  favor::bench::LoadOptions warmup = options;
  warmup.duration = options.warmup;
  warmup.request_count = 0;
  warmup.warmup = absl::ZeroDuration();
  warmup.seed = options.seed + 1;
  absl::StatusOr<favor::bench::LoadResult> result =
      favor::bench::RunLoad(client, warmup);
  if (!result.ok()) return result.status();
  *warmup_calls = result->totals.calls;
  return absl::OkStatus();
}

// The measured run, bracketed by scrapes of /metrics when asked for.
absl::StatusOr<favor::bench::BenchReport> Measure(
    favor::Client* client, favor::bench::BenchReport report) {
  const std::string metrics_address = absl::GetFlag(FLAGS_metrics_address);
  if (metrics_address.empty()) {
    absl::StatusOr<favor::bench::LoadResult> result =
        favor::bench::RunLoad(client, report.options);
    if (!result.ok()) return result.status();
    report.result = *std::move(result);
    return report;
  }
  int64_t warmup_calls = 0;
  absl::Status warmed = WarmUpAlone(client, report.options, &warmup_calls);
  if (!warmed.ok()) return warmed;
  absl::SleepFor(kMetricsSettle);
  auto before = Scrape(metrics_address);
  if (!before.ok()) return before.status();
  favor::bench::LoadOptions measured = report.options;
  measured.warmup = absl::ZeroDuration();
  absl::StatusOr<favor::bench::LoadResult> result =
      favor::bench::RunLoad(client, measured);
  if (!result.ok()) return result.status();
  absl::SleepFor(kMetricsSettle);
  auto after = Scrape(metrics_address);
  if (!after.ok()) return after.status();
  report.result = *std::move(result);
  report.result.warmup_calls = warmup_calls;
  report.server =
      favor::bench::ComputeServerMetricsDelta(*before, *after, report.model);
  return report;
}

// OK when some counted call succeeded (or none was counted) and the
// server stayed reachable; UNAVAILABLE when some call found it gone (a run
// against a server that died mid-way measured no server); else the most
// frequent failure.
absl::Status RunOutcome(const favor::bench::RunTotals& totals) {
  const auto unavailable = totals.errors.find(absl::StatusCode::kUnavailable);
  if (totals.ok_calls > 0 && unavailable != totals.errors.end()) {
    return absl::UnavailableError(absl::StrCat(
        unavailable->second, " of ", totals.calls,
        " calls found the server unavailable: the run did not measure it"));
  }
  if (totals.ok_calls > 0 || totals.errors.empty()) return absl::OkStatus();
  auto worst = std::max_element(
      totals.errors.begin(), totals.errors.end(),
      [](const auto& a, const auto& b) { return a.second < b.second; });
  return absl::Status(
      worst->first,
      absl::StrCat("every call failed (", totals.calls, " calls; most often ",
                   absl::StatusCodeToString(worst->first), ")"));
}

absl::Status Run(const std::vector<std::string>& arguments) {
  if (!arguments.empty()) {
    return UsageError(absl::StrCat("unexpected argument '", arguments[0], "'"));
  }
  absl::StatusOr<std::unique_ptr<favor::Client>> client = NewClient();
  if (!client.ok()) return client.status();
  absl::StatusOr<favor::ModelInfo> model =
      (*client)->GetModel(absl::GetFlag(FLAGS_model));
  if (!model.ok()) return model.status();
  favor::bench::BenchReport report;
  report.model = model->name;
  absl::StatusOr<favor::bench::LoadOptions> options =
      LoadOptionsFromFlags(*model);
  if (!options.ok()) return options.status();
  report.options = *std::move(options);
  absl::StatusOr<std::shared_ptr<const favor::bench::TextCorpus>> corpus =
      CorpusFromFlags(client->get(), *model);
  if (!corpus.ok()) return corpus.status();
  report.options.corpus = *std::move(corpus);
  absl::StatusOr<favor::bench::BenchReport> done =
      Measure(client->get(), std::move(report));
  if (!done.ok()) return done.status();
  if (absl::GetFlag(FLAGS_json)) {
    std::printf("%s\n", favor::bench::ReportToJson(*done).dump().c_str());
  } else {
    std::printf("%s", favor::bench::ReportToText(*done).c_str());
  }
  std::fflush(stdout);
  return RunOutcome(done->result.totals);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Load generator for a Favor server: Embed calls of token ids or of "
      "text (--corpus), closed loop (--concurrency) or open loop "
      "(--request_rate, Poisson arrivals), unary or --streaming; reports "
      "throughput, latency percentiles and errors by code (--json for "
      "machines).\n"
      "Usage: favor-bench [flags]");
  return favor::cli::RunToolMain(
      argc, argv, kProgram,
      {"client/loadgen/main.cc", favor::cli::ConnectionFlagsFile()}, Run);
}
