// The names the outside world sees on /metrics: metric families, their
// labels and the label values that stand for "no model" and "not one of
// ours". The Grafana dashboard, the alert rules and the tests refer to these,
// so they are written down once, here.
//
// Conventions (design.md): every name starts with `favor_`; durations are
// `_seconds` histograms; counters end in `_total`; labels are few and
// bounded (model, method, code; never a request id).
#ifndef FAVOR_SERVER_METRICS_METRIC_NAMES_H_
#define FAVOR_SERVER_METRICS_METRIC_NAMES_H_

#include "absl/strings/string_view.h"

namespace favor::metrics {

// ---- Histograms ----
// Whole request, as the client sees it from the server: {model, method, code}.
inline constexpr absl::string_view kRequestDurationSeconds =
    "favor_request_duration_seconds";
// Admission to the queue until the start of the request's batch: {model}.
inline constexpr absl::string_view kQueueDurationSeconds =
    "favor_queue_duration_seconds";
// One batch's computation on its device: {model}.
inline constexpr absl::string_view kComputeDurationSeconds =
    "favor_compute_duration_seconds";
// Requests per batch: {model}.
inline constexpr absl::string_view kBatchSizeRequests =
    "favor_batch_size_requests";
// Tokens per batch: {model}.
inline constexpr absl::string_view kBatchSizeTokens = "favor_batch_size_tokens";
// Tokenisation of one call's texts (Embed, a stream message, Tokenize), on
// the tokenizer threads: {model}.
inline constexpr absl::string_view kTokenizationDurationSeconds =
    "favor_tokenization_duration_seconds";
// HTTP requests from their header to their answer (http/): {route}.
inline constexpr absl::string_view kHttpRequestDurationSeconds =
    "favor_http_request_duration_seconds";
// Tokens per input (after truncation): {model}.
inline constexpr absl::string_view kInputLengthTokens =
    "favor_input_length_tokens";

// ---- Gauges ----
// Requests waiting in a model's queue: {model}.
inline constexpr absl::string_view kQueueDepth = "favor_queue_depth";
// Calls the server has started and not yet answered: {method}.
inline constexpr absl::string_view kRequestsInFlight =
    "favor_requests_in_flight";
// The memory budget (--max_memory_bytes; 0: none), what it counts once
// (weights, libraries, the allocator's cache), and the estimated peaks of
// the batches in flight, reserved in it. No labels.
inline constexpr absl::string_view kMemoryBudgetBytes =
    "favor_memory_budget_bytes";
inline constexpr absl::string_view kMemoryResidentBytes =
    "favor_memory_resident_bytes";
inline constexpr absl::string_view kMemoryReservedBytes =
    "favor_memory_reserved_bytes";
// Always 1; its labels carry the facts: {model, version, kernel, device,
// dtype}.
inline constexpr absl::string_view kModelInfo = "favor_model_info";

// ---- Counters ----
// Loads of a model folder that failed (start-up or reload; whatever served
// kept serving): {model}, the folder's name. Folder names come from the
// repository, not from requests, so they are few.
inline constexpr absl::string_view kModelLoadFailuresTotal =
    "favor_model_load_failures_total";
// Answered calls: {model, method, code}.
inline constexpr absl::string_view kRequestsTotal = "favor_requests_total";
// Answered HTTP requests, refused ones included: {route, code}. The service
// calls they make are also in favor_requests_total, which counts every call
// the service answers whichever protocol carried it; this one shows HTTP
// beside it, and what the HTTP edge refused by itself (401, 413, 431, ...).
inline constexpr absl::string_view kHttpRequestsTotal =
    "favor_http_requests_total";
// Tokens computed (successful batches only): {model}.
inline constexpr absl::string_view kTokensProcessedTotal =
    "favor_tokens_processed_total";

// ---- Labels ----
inline constexpr absl::string_view kModelLabel = "model";
inline constexpr absl::string_view kMethodLabel = "method";
// The gRPC status code's name: "OK", "INVALID_ARGUMENT", ...
inline constexpr absl::string_view kCodeLabel = "code";
inline constexpr absl::string_view kVersionLabel = "version";
inline constexpr absl::string_view kKernelLabel = "kernel";
inline constexpr absl::string_view kDeviceLabel = "device";
inline constexpr absl::string_view kDtypeLabel = "dtype";
// The HTTP route, one of kHttpRoutes or "(other)".
inline constexpr absl::string_view kRouteLabel = "route";

// ---- Label values that keep the label sets bounded ----
// `model` of calls that use no model (Attend, ListModels) or name none.
inline constexpr absl::string_view kNoModel = "(none)";
// `model` or `method` of a name that was not registered when Metrics was
// created (a client asking for a model the server lacks must not create a
// series per name it tries).
inline constexpr absl::string_view kOtherLabelValue = "(other)";

// The Favor RPCs, as `method` values (the methods Metrics registers unless
// told otherwise).
inline constexpr absl::string_view kMethodEmbed = "Embed";
inline constexpr absl::string_view kMethodEmbedStream = "EmbedStream";
inline constexpr absl::string_view kMethodAttend = "Attend";
inline constexpr absl::string_view kMethodListModels = "ListModels";
inline constexpr absl::string_view kMethodGetModel = "GetModel";
inline constexpr absl::string_view kMethodTokenize = "Tokenize";
// All six, in this order: Metrics::DefaultMethods().
inline constexpr absl::string_view kMethods[] = {
    kMethodEmbed,      kMethodEmbedStream, kMethodAttend,
    kMethodListModels, kMethodGetModel,    kMethodTokenize};
// The methods that use no model: their calls are counted under kNoModel,
// so their OK series at zero are kNoModel's, not the served models'.
inline constexpr absl::string_view kModelFreeMethods[] = {kMethodAttend,
                                                          kMethodListModels};

// The HTTP routes, as `route` values; anything else is "(other)". HTTP
// `code` values are the status numbers of kHttpCodes, others "(other)".
inline constexpr absl::string_view kHttpRoutes[] = {
    "/v1/embeddings",       "/v1/models",         "/v1/models/{model}",
    "/health",              "/v1/favor/Embed",    "/v1/favor/Attend",
    "/v1/favor/ListModels", "/v1/favor/GetModel", "/v1/favor/Tokenize",
    "/info"};
inline constexpr int kHttpCodes[] = {200, 204, 400, 401, 403, 404,
                                     405, 409, 413, 415, 429, 431,
                                     499, 500, 501, 503, 504};

}  // namespace favor::metrics

#endif  // FAVOR_SERVER_METRICS_METRIC_NAMES_H_
