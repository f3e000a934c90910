#include "server/metrics/prometheus_metrics.h"

#include <atomic>
#include <exception>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/common/status_macros.h"
#include "server/metrics/buckets.h"
#include "server/metrics/http_series.h"
#include "server/metrics/metric_names.h"

namespace favor::metrics {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// absl::StatusCode 0 (OK) to 16 (UNAUTHENTICATED): the gRPC codes.
constexpr int kNumCodes = 17;

int CodeIndex(absl::StatusCode code) {
  const int value = static_cast<int>(code);
  return value >= 0 && value < kNumCodes
             ? value
             : static_cast<int>(absl::StatusCode::kUnknown);
}

std::string Text(absl::string_view text) { return std::string(text); }

// civetweb's "listening_ports" syntax: IPv6 addresses go in brackets.
std::string ListenAddress(const std::string& address, int port) {
  if (absl::StrContains(address, ':')) {
    return absl::StrCat("[", address, "]:", port);
  }
  return absl::StrCat(address, ":", port);
}

// Label values must not collide with the values Metrics reserves for
// "no model" and "not registered".
absl::Status CheckNames(const std::vector<std::string>& names,
                        absl::string_view field) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty() || names[i] == kNoModel ||
        names[i] == kOtherLabelValue) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics: Options.", field, "[", i, "] is \"", names[i],
                       "\": names must be non-empty and not \"", kNoModel,
                       "\" or \"", kOtherLabelValue, "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const Metrics::Options& options) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics: Options.port is ", options.port, "; must be 0 to 65535"));
  }
  if (options.num_http_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: Options.num_http_threads is ",
                     options.num_http_threads, "; must be at least 1"));
  }
  if (options.serve_http && options.bind_address.empty()) {
    return absl::InvalidArgumentError("metrics: Options.bind_address is empty");
  }
  RETURN_IF_ERROR(CheckNames(options.models, "models"));
  return CheckNames(options.methods, "methods");
}

}  // namespace

struct PrometheusMetrics::Families {
  Family<Histogram>* request_duration = nullptr;
  Family<Histogram>* queue_duration = nullptr;
  Family<Histogram>* compute_duration = nullptr;
  Family<Histogram>* batch_requests = nullptr;
  Family<Histogram>* batch_tokens = nullptr;
  Family<Histogram>* input_length = nullptr;
  Family<Histogram>* tokenization_duration = nullptr;
  Family<Gauge>* queue_depth = nullptr;
  Family<Gauge>* in_flight = nullptr;
  Family<Gauge>* model_info = nullptr;
  Family<Counter>* requests = nullptr;
  Family<Counter>* tokens_processed = nullptr;
};

// The {model, method, code} series of one (method, code): null until the
// combination first occurs, then kept. Two threads racing to create them get
// the same series, since Family::Add returns an existing child.
struct PrometheusMetrics::RequestSeries {
  std::atomic<Histogram*> duration{nullptr};
  std::atomic<Counter*> count{nullptr};
};

// The series of one `model` label value.
struct PrometheusMetrics::ModelSeries {
  std::string label;
  Histogram* queue_duration = nullptr;
  Histogram* compute_duration = nullptr;
  Histogram* batch_requests = nullptr;
  Histogram* batch_tokens = nullptr;
  Histogram* input_length = nullptr;
  Histogram* tokenization_duration = nullptr;
  Gauge* queue_depth = nullptr;
  Counter* tokens_processed = nullptr;
  // Indexed by method_index * kNumCodes + code.
  std::unique_ptr<RequestSeries[]> requests;
};

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(
    const Options& options) {
  return PrometheusMetrics::Create(options);
}

absl::StatusOr<std::unique_ptr<PrometheusMetrics>> PrometheusMetrics::Create(
    const Options& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  auto metrics = absl::WrapUnique(new PrometheusMetrics());
  RETURN_IF_ERROR(metrics->Build(options));
  if (options.serve_http) RETURN_IF_ERROR(metrics->StartHttp(options));
  return metrics;
}

PrometheusMetrics::PrometheusMetrics()
    : registry_(std::make_shared<prometheus::Registry>()) {}

PrometheusMetrics::~PrometheusMetrics() = default;

absl::Status PrometheusMetrics::Build(const Options& options) {
  // prometheus-cpp throws on invalid names, labels and bucket bounds.
  try {
    BuildFamilies();
    http_ = std::make_unique<HttpSeries>(*registry_);
    return BuildModelSeries(options);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("metrics: building the metric families: ", e.what()));
  }
}

// Called by Build(), inside its try block.
void PrometheusMetrics::BuildFamilies() {
  families_ = std::make_unique<Families>();
  Families& f = *families_;
  auto histogram = [&](absl::string_view name, absl::string_view help) {
    return &prometheus::BuildHistogram()
                .Name(Text(name))
                .Help(Text(help))
                .Register(*registry_);
  };
  auto gauge = [&](absl::string_view name, absl::string_view help) {
    return &prometheus::BuildGauge()
                .Name(Text(name))
                .Help(Text(help))
                .Register(*registry_);
  };
  auto counter = [&](absl::string_view name, absl::string_view help) {
    return &prometheus::BuildCounter()
                .Name(Text(name))
                .Help(Text(help))
                .Register(*registry_);
  };
  f.request_duration = histogram(kRequestDurationSeconds,
                                 "Calls from start to answer, by code.");
  f.queue_duration = histogram(kQueueDurationSeconds,
                               "Requests' wait from admission to their batch.");
  f.compute_duration =
      histogram(kComputeDurationSeconds, "Batches' computation.");
  f.batch_requests = histogram(kBatchSizeRequests, "Requests per batch.");
  f.batch_tokens = histogram(kBatchSizeTokens, "Tokens per batch.");
  f.input_length =
      histogram(kInputLengthTokens, "Tokens per input, after truncation.");
  f.tokenization_duration =
      histogram(kTokenizationDurationSeconds,
                "Tokenisation of one call's texts, on the tokenizer threads.");
  f.queue_depth = gauge(
      kQueueDepth,
      "Requests waiting: queued, or in a formed batch no worker has started.");
  f.in_flight = gauge(kRequestsInFlight, "Calls started, not yet answered.");
  f.model_info = gauge(kModelInfo, "1 per loaded model; labels say what.");
  memory_budget_ =
      &gauge(kMemoryBudgetBytes, "The memory budget; 0: none.")->Add({});
  memory_resident_ =
      &gauge(kMemoryResidentBytes,
             "Counted once against the memory budget: weights, libraries.")
           ->Add({});
  memory_reserved_ =
      &gauge(kMemoryReservedBytes, "Estimated peaks of the batches in flight.")
           ->Add({});
  f.requests = counter(kRequestsTotal, "Answered calls, by code.");
  f.tokens_processed =
      counter(kTokensProcessedTotal, "Tokens computed successfully.");
  load_failures_family_ =
      counter(kModelLoadFailuresTotal,
              "Failed loads of a model folder; what served kept serving.");
}

// Called by Build(), inside its try block.
absl::Status PrometheusMetrics::BuildModelSeries(const Options& options) {
  method_names_ = options.methods;
  method_names_.push_back(Text(kOtherLabelValue));
  for (size_t i = 0; i < method_names_.size(); ++i) {
    method_index_.emplace(method_names_[i], static_cast<int>(i));
    in_flight_.push_back(
        &families_->in_flight->Add({{Text(kMethodLabel), method_names_[i]}}));
  }
  absl::MutexLock lock(&models_mutex_);
  for (const std::string& label : {Text(kNoModel), Text(kOtherLabelValue)}) {
    models_.emplace(label, NewModelSeries(label));
  }
  no_model_ = models_.at(Text(kNoModel)).get();
  other_model_ = models_.at(Text(kOtherLabelValue)).get();
  RETURN_IF_ERROR(AddOkSeries(*no_model_, /*model_free=*/true));
  for (const std::string& model : options.models) {
    RETURN_IF_ERROR(AddModelSeries(model));
  }
  return absl::OkStatus();
}

absl::Status PrometheusMetrics::AddModelSeries(const std::string& model) {
  if (models_.contains(model)) return absl::OkStatus();
  ModelSeries& series = *models_.emplace(model, NewModelSeries(model))
                             .first->second;
  return AddOkSeries(series, /*model_free=*/false);
}

// OK series at zero from the start: rate() never counts a series' first
// sample. A model's for the methods that use one, "(none)"'s for the others.
absl::Status PrometheusMetrics::AddOkSeries(ModelSeries& series,
                                            bool model_free) {
  const int ok = CodeIndex(absl::StatusCode::kOk);
  for (size_t method = 0; method + 1 < method_names_.size(); ++method) {
    const bool method_is_model_free = absl::c_linear_search(
        kModelFreeMethods, absl::string_view(method_names_[method]));
    if (method_is_model_free != model_free) continue;
    if (RequestSeriesOf(series, static_cast<int>(method), ok) == nullptr) {
      return absl::InternalError(absl::StrCat(
          "metrics: cannot create the OK series of model '", series.label,
          "' and method '", method_names_[method], "'"));
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<PrometheusMetrics::ModelSeries>
PrometheusMetrics::NewModelSeries(const std::string& label) {
  const Families& f = *families_;
  const prometheus::Labels model{{Text(kModelLabel), label}};
  auto series = std::make_unique<ModelSeries>();
  series->label = label;
  series->queue_duration =
      &f.queue_duration->Add(model, DurationBucketsSeconds());
  series->compute_duration =
      &f.compute_duration->Add(model, DurationBucketsSeconds());
  series->batch_requests = &f.batch_requests->Add(model, BatchRequestBuckets());
  series->batch_tokens = &f.batch_tokens->Add(model, TokenBuckets());
  series->input_length = &f.input_length->Add(model, TokenBuckets());
  series->tokenization_duration =
      &f.tokenization_duration->Add(model, DurationBucketsSeconds());
  series->queue_depth = &f.queue_depth->Add(model);
  series->tokens_processed = &f.tokens_processed->Add(model);
  series->requests =
      std::make_unique<RequestSeries[]>(method_names_.size() * kNumCodes);
  return series;
}

void PrometheusMetrics::RecordHttpRequest(absl::string_view route,
                                          int status_code,
                                          absl::Duration duration) {
  http_->Record(route, status_code, duration);
}

absl::Status PrometheusMetrics::StartHttp(const Options& options) {
  const std::string address = ListenAddress(options.bind_address, options.port);
  // civetweb throws CivetException (a std::runtime_error) when it cannot
  // listen, e.g. when the port is taken.
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(
        address, static_cast<size_t>(options.num_http_threads));
    exposer_->RegisterCollectable(registry_, "/metrics");
  } catch (const std::exception& e) {
    exposer_.reset();
    return absl::UnavailableError(absl::StrCat(
        "metrics: cannot serve /metrics on ", address,
        " (Options.bind_address and Options.port): is the port in use, or "
        "the address not this machine's? civetweb says: ",
        e.what()));
  }
  const std::vector<int> ports = exposer_->GetListeningPorts();
  if (ports.empty() || ports.front() <= 0) {
    return absl::InternalError(absl::StrCat(
        "metrics: civetweb reports no listening port for ", address));
  }
  port_ = ports.front();
  return absl::OkStatus();
}

PrometheusMetrics::ModelSeries& PrometheusMetrics::SeriesOf(
    absl::string_view model) const {
  if (model.empty()) return *no_model_;
  absl::ReaderMutexLock lock(&models_mutex_);
  const auto it = models_.find(model);
  return it != models_.end() ? *it->second : *other_model_;
}

int PrometheusMetrics::MethodIndex(absl::string_view method) const {
  const auto it = method_index_.find(method);
  return it != method_index_.end() ? it->second
                                   : static_cast<int>(method_names_.size()) - 1;
}

void PrometheusMetrics::RecordRequest(absl::string_view model,
                                      absl::string_view method,
                                      absl::StatusCode code,
                                      absl::Duration duration) {
  const RequestSeries* series =
      RequestSeriesOf(SeriesOf(model), MethodIndex(method), CodeIndex(code));
  if (series == nullptr) return;
  series->duration.load(std::memory_order_acquire)
      ->Observe(absl::ToDoubleSeconds(duration));
  series->count.load(std::memory_order_acquire)->Increment();
}

const PrometheusMetrics::RequestSeries* PrometheusMetrics::RequestSeriesOf(
    ModelSeries& model, int method_index, int code_index) {
  RequestSeries& series = model.requests[method_index * kNumCodes + code_index];
  // `count` is stored last, so a non-null count means both are there.
  if (series.count.load(std::memory_order_acquire) != nullptr) return &series;
  const prometheus::Labels labels{
      {Text(kModelLabel), model.label},
      {Text(kMethodLabel), method_names_[method_index]},
      {Text(kCodeLabel),
       absl::StatusCodeToString(static_cast<absl::StatusCode>(code_index))}};
  try {
    series.duration.store(
        &families_->request_duration->Add(labels, DurationBucketsSeconds()),
        std::memory_order_release);
    series.count.store(&families_->requests->Add(labels),
                       std::memory_order_release);
  } catch (const std::exception& e) {
    LOG_EVERY_N(ERROR, 1000)
        << "metrics: dropped a request sample: " << e.what();
    return nullptr;
  }
  return &series;
}

void PrometheusMetrics::RecordQueue(absl::string_view model,
                                    absl::Duration duration) {
  SeriesOf(model).queue_duration->Observe(absl::ToDoubleSeconds(duration));
}

void PrometheusMetrics::RecordCompute(absl::string_view model,
                                      absl::Duration duration) {
  SeriesOf(model).compute_duration->Observe(absl::ToDoubleSeconds(duration));
}

void PrometheusMetrics::RecordTokenization(absl::string_view model,
                                           absl::Duration duration) {
  SeriesOf(model).tokenization_duration->Observe(
      absl::ToDoubleSeconds(duration));
}

void PrometheusMetrics::RecordBatch(absl::string_view model,
                                    int64_t num_requests, int64_t num_tokens) {
  ModelSeries& series = SeriesOf(model);
  series.batch_requests->Observe(static_cast<double>(num_requests));
  series.batch_tokens->Observe(static_cast<double>(num_tokens));
}

void PrometheusMetrics::RecordInputLength(absl::string_view model,
                                          int64_t num_tokens) {
  SeriesOf(model).input_length->Observe(static_cast<double>(num_tokens));
}

void PrometheusMetrics::AddQueueDepth(absl::string_view model,
                                      int64_t delta) {
  SeriesOf(model).queue_depth->Increment(static_cast<double>(delta));
}

void PrometheusMetrics::AddTokens(absl::string_view model, int64_t num_tokens) {
  // A counter only goes up; a negative count is a caller's bug.
  if (num_tokens <= 0) return;
  SeriesOf(model).tokens_processed->Increment(static_cast<double>(num_tokens));
}

void PrometheusMetrics::SetMemoryBudget(int64_t budget_bytes,
                                        int64_t resident_bytes) {
  memory_budget_->Set(static_cast<double>(budget_bytes));
  memory_resident_->Set(static_cast<double>(resident_bytes));
}

void PrometheusMetrics::SetMemoryReserved(int64_t reserved_bytes) {
  memory_reserved_->Set(static_cast<double>(reserved_bytes));
}

Counter* PrometheusMetrics::LoadFailureCounter(absl::string_view model) {
  auto it = load_failures_.find(model);
  if (it != load_failures_.end()) return it->second;
  try {
    Counter* counter = &load_failures_family_->Add(
        {{Text(kModelLabel), std::string(model)}});
    return load_failures_.emplace(std::string(model), counter).first->second;
  } catch (const std::exception& e) {
    LOG(ERROR) << "metrics: cannot count the load failures of " << model
               << ": " << e.what();
    return nullptr;
  }
}

void PrometheusMetrics::RecordModelLoadFailure(absl::string_view model) {
  absl::MutexLock lock(&load_failures_mutex_);
  Counter* counter = LoadFailureCounter(model);
  if (counter != nullptr) counter->Increment();
}

void PrometheusMetrics::ClearModelInfo(absl::string_view model) {
  absl::MutexLock lock(&model_info_mutex_);
  auto it = model_info_.find(model);
  if (it == model_info_.end()) return;
  families_->model_info->Remove(it->second);
  model_info_.erase(it);
}

void PrometheusMetrics::SetModelInfo(const ModelInfoLabels& info) {
  if (info.model.empty() || info.model == kNoModel ||
      info.model == kOtherLabelValue) {
    LOG(WARNING) << "metrics: no model info for model \"" << info.model
                 << "\"";
    return;
  }
  {
    // A model loaded after start-up (model_reloader.h) gets its own series
    // here, before it serves its first call.
    absl::MutexLock lock(&models_mutex_);
    absl::Status added;
    try {
      added = AddModelSeries(info.model);
    } catch (const std::exception& e) {
      added = absl::InternalError(e.what());
    }
    if (!added.ok()) {
      LOG(ERROR) << "metrics: model \"" << info.model
                 << "\" is recorded as " << kOtherLabelValue << ": "
                 << added.message();
    }
  }
  const std::string& label = info.model;
  const prometheus::Labels labels{{Text(kModelLabel), label},
                                  {Text(kVersionLabel), Text(info.version)},
                                  {Text(kKernelLabel), Text(info.kernel)},
                                  {Text(kDeviceLabel), Text(info.device)},
                                  {Text(kDtypeLabel), Text(info.dtype)}};
  absl::MutexLock lock(&model_info_mutex_);
  try {
    auto it = model_info_.find(label);
    if (it != model_info_.end()) {
      families_->model_info->Remove(it->second);
      model_info_.erase(it);
    }
    Gauge* gauge = &families_->model_info->Add(labels);
    gauge->Set(1);
    model_info_.emplace(label, gauge);
  } catch (const std::exception& e) {
    LOG(ERROR) << "metrics: cannot publish model info of " << label << ": "
               << e.what();
  }
  // From zero, so that increase() sees a served model's first failure.
  absl::MutexLock failures_lock(&load_failures_mutex_);
  LoadFailureCounter(label);
}

int PrometheusMetrics::StartInFlight(absl::string_view method) {
  const int index = MethodIndex(method);
  in_flight_[index]->Increment();
  return index;
}

void PrometheusMetrics::EndInFlight(int key) { in_flight_[key]->Decrement(); }

std::string PrometheusMetrics::SerializeText() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace favor::metrics
