// favor-cli's output: the client library's results as JSON (nlohmann), with
// the field names of the proto (proto/favor/v1/favor.proto) so that the
// output reads like the API, durations in microseconds (`*_micros`) and
// enums by their proto names without prefix ("mean", "float32").
#ifndef FAVOR_CLIENT_CLI_JSON_OUTPUT_H_
#define FAVOR_CLIENT_CLI_JSON_OUTPUT_H_

#include "absl/status/statusor.h"
#include "favor/client.h"
#include "nlohmann/json.hpp"

namespace favor::cli {

// {"model", "model_version", "num_tokens", "timing": {...}, "embeddings":
// [{"num_tokens", "num_truncated_tokens", "values": [...],
// "token_embeddings": {"shape", "dtype", "values"}, "spans": [{"num_tokens",
// "values"}], "num_chunks"}]}; token_embeddings, spans and num_chunks only
// when the call asked for them. INVALID_ARGUMENT when a token_embeddings
// tensor is malformed.
absl::StatusOr<nlohmann::json> EmbedResultToJson(const EmbedResult& result);

// {"model", "texts": [{"ids", "tokens", "begin_offsets", "end_offsets",
// "special"}]}: one array per field, one entry per token.
nlohmann::json TokenizeResultToJson(const TokenizeResult& result);

// {"name", "version", "is_default", "devices", "config": {..., "tokenizer":
// {"kind", "file", "special_tokens": [{"role", "token", "id"}]}}, "limits":
// {...}}; config_json is included parsed, as "config_json".
nlohmann::json ModelInfoToJson(const ModelInfo& model);

// {"default_model", "models": [ModelInfoToJson...]}.
nlohmann::json ModelListToJson(const ModelList& list);

// A summary of an Attend answer, without the output's values: {"kernel",
// "num_features", "timing", "output": {"shape", "dtype", "elements", "min",
// "max", "mean", "l2_norm"}}. INVALID_ARGUMENT for a malformed output.
absl::StatusOr<nlohmann::json> AttendSummaryToJson(const AttendResult& result);

// {"queue_time_micros", "compute_time_micros"}.
nlohmann::json ServerTimingToJson(const ServerTiming& timing);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_JSON_OUTPUT_H_
