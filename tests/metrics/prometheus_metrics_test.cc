// The Prometheus implementation of Metrics (prometheus_metrics.h), as
// Metrics::Create builds it: families, values, label bounds and the HTTP
// endpoint, scraped over a real connection on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/buckets.h"
#include "server/metrics/metric_names.h"
#include "server/metrics/metrics.h"
#include "tests/metrics/scrape.h"

namespace favor::metrics {
namespace {

using scrape::FindSample;
using scrape::LabelSet;
using ::testing::HasSubstr;
using ::testing::Optional;

std::string Name(absl::string_view name) { return std::string(name); }
std::string Suffixed(absl::string_view name, absl::string_view suffix) {
  return absl::StrCat(name, suffix);
}

Metrics::Options LoopbackOptions(int port = 0) {
  Metrics::Options options;
  options.bind_address = "127.0.0.1";
  options.port = port;
  options.models = {"bert", "perceiver"};
  return options;
}

Metrics::Options OfflineOptions() {
  Metrics::Options options = LoopbackOptions();
  options.serve_http = false;
  return options;
}

std::unique_ptr<Metrics> CreateOrDie(const Metrics::Options& options) {
  absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Create(options);
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  return metrics.ok() ? std::move(*metrics) : nullptr;
}

// What a small server would record: two Embed calls, one NOT_FOUND call for
// a model the server lacks, one batch.
void RecordSomeTraffic(Metrics& metrics) {
  metrics.RecordRequest("bert", "Embed", absl::StatusCode::kOk,
                        absl::Microseconds(1500));
  metrics.RecordRequest("bert", "Embed", absl::StatusCode::kOk,
                        absl::Milliseconds(3));
  metrics.RecordRequest("no-such-model", "Embed", absl::StatusCode::kNotFound,
                        absl::Microseconds(200));
  metrics.RecordQueue("bert", absl::Milliseconds(1));
  metrics.RecordCompute("bert", absl::Milliseconds(2));
  metrics.RecordTokenization("bert", absl::Microseconds(300));
  metrics.RecordBatch("bert", 4, 100);
  metrics.RecordInputLength("bert", 30);
  metrics.RecordInputLength("bert", 70);
  metrics.AddQueueDepth("bert", 3);
  metrics.AddTokens("bert", 100);
  metrics.SetModelInfo({"bert", "v1", "favor+", "cpu", "float32"});
}

void ExpectEveryFamily(const std::string& text) {
  for (absl::string_view family :
       {kRequestDurationSeconds, kQueueDurationSeconds, kComputeDurationSeconds,
        kBatchSizeRequests, kBatchSizeTokens, kInputLengthTokens,
        kTokenizationDurationSeconds}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("# TYPE ", family, " histogram")));
  }
  for (absl::string_view family :
       {kQueueDepth, kRequestsInFlight, kModelInfo}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("# TYPE ", family, " gauge")));
  }
  for (absl::string_view family : {kRequestsTotal, kTokensProcessedTotal}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("# TYPE ", family, " counter")));
  }
}

// The two OK Embed calls of RecordSomeTraffic: 1.5 ms and 3 ms.
void ExpectRequestHistogram(const std::string& text) {
  const LabelSet ok{{"model", "bert"}, {"method", "Embed"}, {"code", "OK"}};
  const std::string name = Name(kRequestDurationSeconds);
  EXPECT_THAT(FindSample(text, name + "_count", ok), Optional(2.0));
  const std::optional<double> sum = FindSample(text, name + "_sum", ok);
  ASSERT_TRUE(sum.has_value());
  EXPECT_NEAR(*sum, 0.0045, 1e-9);
  auto bucket = [&](const std::string& le) {
    LabelSet labels = ok;
    labels["le"] = le;
    return FindSample(text, name + "_bucket", labels);
  };
  EXPECT_THAT(bucket("0.0001"), Optional(0.0));
  EXPECT_THAT(bucket("0.002"), Optional(1.0));
  EXPECT_THAT(bucket("0.005"), Optional(2.0));
  EXPECT_THAT(bucket("120"), Optional(2.0));
  EXPECT_THAT(bucket("+Inf"), Optional(2.0));
  EXPECT_THAT(FindSample(text, Name(kRequestsTotal), ok), Optional(2.0));
}

// A real HTTP GET on loopback returns every family, with their values.
TEST(MetricsTest, ScrapeShowsEveryFamilyAndItsValues) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(LoopbackOptions());
  ASSERT_NE(metrics, nullptr);
  ASSERT_GT(metrics->port(), 0);
  RecordSomeTraffic(*metrics);
  const Metrics::InFlightGuard in_flight = metrics->TrackInFlight("Embed");

  absl::StatusOr<scrape::HttpResponse> response =
      scrape::HttpGet(metrics->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status_code, 200);
  EXPECT_THAT(response->headers, HasSubstr("text/plain"));
  const std::string& text = response->body;
  ExpectEveryFamily(text);
  ExpectRequestHistogram(text);
  EXPECT_THAT(
      FindSample(
          text, Name(kRequestsTotal),
          {{"model", "(other)"}, {"method", "Embed"}, {"code", "NOT_FOUND"}}),
      Optional(1.0));
  EXPECT_THAT(FindSample(text, Name(kRequestsInFlight), {{"method", "Embed"}}),
              Optional(1.0));
}

// SerializeText() gives what a scrape gives, without the endpoint's 2 s
// shutdown (see metrics.h).
TEST(MetricsTest, PerModelFamiliesHaveTheirValues) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  RecordSomeTraffic(*metrics);
  const std::string text = metrics->SerializeText();
  const LabelSet bert{{"model", "bert"}};

  EXPECT_THAT(FindSample(text, Suffixed(kQueueDurationSeconds, "_count"), bert),
              Optional(1.0));
  EXPECT_THAT(
      FindSample(text, Suffixed(kComputeDurationSeconds, "_count"), bert),
      Optional(1.0));
  EXPECT_THAT(FindSample(text, Suffixed(kBatchSizeRequests, "_sum"), bert),
              Optional(4.0));
  EXPECT_THAT(
      FindSample(text, Suffixed(kTokenizationDurationSeconds, "_sum"), bert),
      Optional(0.0003));
  LabelSet le_ms = bert;
  le_ms["le"] = "0.0005";
  EXPECT_THAT(
      FindSample(text, Suffixed(kTokenizationDurationSeconds, "_bucket"),
                 le_ms),
      Optional(1.0));
  EXPECT_THAT(FindSample(text, Suffixed(kBatchSizeTokens, "_sum"), bert),
              Optional(100.0));
  EXPECT_THAT(FindSample(text, Suffixed(kInputLengthTokens, "_count"), bert),
              Optional(2.0));
  LabelSet le64 = bert;
  le64["le"] = "64";
  EXPECT_THAT(FindSample(text, Suffixed(kInputLengthTokens, "_bucket"), le64),
              Optional(1.0));
  EXPECT_THAT(FindSample(text, Name(kQueueDepth), bert), Optional(3.0));
  EXPECT_THAT(FindSample(text, Name(kTokensProcessedTotal), bert),
              Optional(100.0));
  EXPECT_THAT(FindSample(text, Name(kModelInfo),
                         {{"model", "bert"},
                          {"version", "v1"},
                          {"kernel", "favor+"},
                          {"device", "cpu"},
                          {"dtype", "float32"}}),
              Optional(1.0));
}

// A client naming models the server lacks must not create a series per name.
TEST(MetricsTest, UnregisteredNamesShareOneLabelValue) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  for (int i = 0; i < 100; ++i) {
    metrics->RecordRequest(absl::StrCat("model-", i), absl::StrCat("rpc-", i),
                           absl::StatusCode::kNotFound, absl::Milliseconds(1));
  }
  metrics->RecordRequest("", "Attend", absl::StatusCode::kOk,
                         absl::Milliseconds(1));
  const std::string text = metrics->SerializeText();
  // The first above, and the OK series at zero: those of the two served
  // models' methods that use a model, and "(none)"'s of the others (the
  // Attend call above counted in one of them).
  const int methods = static_cast<int>(Metrics::DefaultMethods().size());
  const int model_free = static_cast<int>(std::size(kModelFreeMethods));
  EXPECT_EQ(scrape::CountSamples(text, Name(kRequestsTotal)),
            1 + 2 * (methods - model_free) + model_free);
  EXPECT_THAT(
      FindSample(
          text, Name(kRequestsTotal),
          {{"model", "(other)"}, {"method", "(other)"}, {"code", "NOT_FOUND"}}),
      Optional(100.0));
  EXPECT_THAT(
      FindSample(text, Name(kRequestsTotal),
                 {{"model", "(none)"}, {"method", "Attend"}, {"code", "OK"}}),
      Optional(1.0));
}

// Before any call, the only request series are the OK ones, at zero (so
// that rate() counts the first call): the served models' for the methods
// that use a model, "(none)"'s for Attend and ListModels, whose calls are
// counted there (a zero series of theirs under a model would be one that no
// call counts in). The other codes and "(other)" appear only once their
// combination occurs.
TEST(MetricsTest, OnlyOkSeriesOfServedModelsBeforeTheFirstRequest) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  const std::string text = metrics->SerializeText();
  const std::vector<std::string> methods = Metrics::DefaultMethods();
  EXPECT_EQ(scrape::CountSamples(text, Name(kRequestsTotal)),
            2 * (static_cast<int>(methods.size()) - 2) + 2);
  for (const std::string model : {"bert", "perceiver", "(none)"}) {
    for (const std::string& method : methods) {
      const bool model_free = method == "Attend" || method == "ListModels";
      const LabelSet labels{
          {"model", model}, {"method", method}, {"code", "OK"}};
      const std::optional<double> expected =
          model_free == (model == "(none)") ? std::optional<double>(0.0)
                                            : std::nullopt;
      EXPECT_EQ(FindSample(text, Name(kRequestsTotal), labels), expected)
          << model << " " << method;
      EXPECT_EQ(
          FindSample(text, Suffixed(kRequestDurationSeconds, "_count"), labels),
          expected)
          << model << " " << method;
    }
  }
  EXPECT_THAT(FindSample(text, Name(kQueueDepth), {{"model", "perceiver"}}),
              Optional(0.0));
}

TEST(MetricsTest, ModelInfoReplacesTheEarlierVersion) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  metrics->SetModelInfo({"bert", "v1", "favor+", "cpu", "float32"});
  metrics->SetModelInfo({"bert", "v2", "favor+", "cuda:0", "bfloat16"});
  metrics->SetModelInfo(
      {"(other)", "v9", "relu", "cpu", "float32"});  // a reserved value
  const std::string text = metrics->SerializeText();
  EXPECT_EQ(scrape::CountSamples(text, Name(kModelInfo)), 1);
  EXPECT_THAT(FindSample(text, Name(kModelInfo),
                         {{"model", "bert"},
                          {"version", "v2"},
                          {"kernel", "favor+"},
                          {"device", "cuda:0"},
                          {"dtype", "bfloat16"}}),
              Optional(1.0));
}

// A model the reloader loads after start-up (not in Options.models) gets
// its own series once its info is published, with its OK series at zero
// from then on, instead of sharing "(other)".
TEST(MetricsTest, ModelLoadedAfterStartUpGetsItsOwnSeries) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  metrics->SetModelInfo({"late", "v1", "favor++", "cpu", "float32"});
  EXPECT_THAT(FindSample(metrics->SerializeText(), Name(kRequestsTotal),
                         {{"model", "late"}, {"method", "Tokenize"},
                          {"code", "OK"}}),
              Optional(0.0));
  metrics->RecordRequest("late", "Embed", absl::StatusCode::kOk,
                         absl::Milliseconds(2));
  metrics->RecordQueue("late", absl::Milliseconds(1));
  const std::string text = metrics->SerializeText();
  EXPECT_THAT(FindSample(text, Name(kRequestsTotal),
                         {{"model", "late"}, {"method", "Embed"},
                          {"code", "OK"}}),
              Optional(1.0));
  EXPECT_THAT(FindSample(text, Suffixed(kQueueDurationSeconds, "_count"),
                         {{"model", "late"}}),
              Optional(1.0));
  EXPECT_THAT(FindSample(text, Suffixed(kQueueDurationSeconds, "_count"),
                         {{"model", "(other)"}}),
              Optional(0.0));
  EXPECT_EQ(FindSample(text, Name(kRequestsTotal),
                       {{"model", "(other)"}, {"method", "Embed"},
                        {"code", "OK"}}),
            std::nullopt);
}

TEST(MetricsTest, MemoryBudgetGaugesStartAtZeroAndFollowTheBudget) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  std::string text = metrics->SerializeText();
  for (const absl::string_view name :
       {kMemoryBudgetBytes, kMemoryResidentBytes, kMemoryReservedBytes}) {
    EXPECT_THAT(FindSample(text, Name(name), {}), Optional(0.0)) << name;
  }
  metrics->SetMemoryBudget(3000000000, 500000000);
  metrics->SetMemoryReserved(1200000000);
  text = metrics->SerializeText();
  EXPECT_THAT(FindSample(text, Name(kMemoryBudgetBytes), {}), Optional(3e9));
  EXPECT_THAT(FindSample(text, Name(kMemoryResidentBytes), {}), Optional(5e8));
  EXPECT_THAT(FindSample(text, Name(kMemoryReservedBytes), {}),
              Optional(1.2e9));
  // Noop() records nothing and never fails.
  Metrics::Noop()->SetMemoryBudget(1, 1);
  Metrics::Noop()->SetMemoryReserved(1);
}

TEST(MetricsTest, InFlightGuardCountsOnceEvenWhenMoved) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  const LabelSet embed{{"method", "Embed"}};
  {
    Metrics::InFlightGuard first = metrics->TrackInFlight("Embed");
    Metrics::InFlightGuard second = metrics->TrackInFlight("Embed");
    Metrics::InFlightGuard moved = std::move(first);
    EXPECT_THAT(
        FindSample(metrics->SerializeText(), Name(kRequestsInFlight), embed),
        Optional(2.0));
  }
  EXPECT_THAT(
      FindSample(metrics->SerializeText(), Name(kRequestsInFlight), embed),
      Optional(0.0));
}

// Threads racing to create the same (model, method, code) series lose no
// sample.
TEST(MetricsTest, ConcurrentFirstRecordsAreAllCounted) {
  std::unique_ptr<Metrics> metrics = CreateOrDie(OfflineOptions());
  ASSERT_NE(metrics, nullptr);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 1000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics] {
      for (int i = 0; i < kPerThread; ++i) {
        metrics->RecordRequest("perceiver", "EmbedStream",
                               absl::StatusCode::kResourceExhausted,
                               absl::Microseconds(50));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(FindSample(metrics->SerializeText(), Name(kRequestsTotal),
                         {{"model", "perceiver"},
                          {"method", "EmbedStream"},
                          {"code", "RESOURCE_EXHAUSTED"}}),
              Optional(double{kThreads * kPerThread}));
}

// A listening socket on 127.0.0.1 at a port the kernel chose; closed with
// the object.
class PortHolder {
 public:
  PortHolder() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    auto* generic = reinterpret_cast<sockaddr*>(&address);
    if (bind(fd_, generic, length) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, generic, &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~PortHolder() { close(fd_); }
  PortHolder(const PortHolder&) = delete;
  PortHolder& operator=(const PortHolder&) = delete;
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST(MetricsTest, PortInUseIsAnErrorNotACrash) {
  PortHolder holder;
  ASSERT_GT(holder.port(), 0);
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Create(LoopbackOptions(holder.port()));
  ASSERT_FALSE(metrics.ok());
  EXPECT_EQ(metrics.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(metrics.status().message(),
              HasSubstr(absl::StrCat("127.0.0.1:", holder.port())));
}

TEST(MetricsTest, SecondEndpointOnTheSamePortFailsAndTheFirstServesOn) {
  std::unique_ptr<Metrics> first = CreateOrDie(LoopbackOptions());
  ASSERT_NE(first, nullptr);
  absl::StatusOr<std::unique_ptr<Metrics>> second =
      Metrics::Create(LoopbackOptions(first->port()));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  absl::StatusOr<scrape::HttpResponse> response =
      scrape::HttpGet(first->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status_code, 200);
}

TEST(MetricsTest, BadOptionsAreInvalidArguments) {
  auto code_of = [](const Metrics::Options& options) {
    return Metrics::Create(options).status().code();
  };
  Metrics::Options options = OfflineOptions();
  options.port = 65536;
  EXPECT_EQ(code_of(options), absl::StatusCode::kInvalidArgument);
  options = OfflineOptions();
  options.port = -1;
  EXPECT_EQ(code_of(options), absl::StatusCode::kInvalidArgument);
  options = OfflineOptions();
  options.num_http_threads = 0;
  EXPECT_EQ(code_of(options), absl::StatusCode::kInvalidArgument);
  options = OfflineOptions();
  options.models.push_back("");
  EXPECT_EQ(code_of(options), absl::StatusCode::kInvalidArgument);
  options = OfflineOptions();
  options.methods.push_back(std::string(kOtherLabelValue));
  EXPECT_EQ(code_of(options), absl::StatusCode::kInvalidArgument);
}

TEST(BucketsTest, SpanTheServiceRanges) {
  const std::vector<double> durations = DurationBucketsSeconds();
  EXPECT_DOUBLE_EQ(durations.front(), 100e-6);
  EXPECT_DOUBLE_EQ(durations.back(), 120.0);
  EXPECT_TRUE(std::is_sorted(durations.begin(), durations.end()));
  EXPECT_EQ(TokenBuckets().front(), 1.0);
  EXPECT_EQ(TokenBuckets().back(), 1048576.0);
  EXPECT_EQ(BatchRequestBuckets().back(), 1024.0);
}

}  // namespace
}  // namespace favor::metrics
