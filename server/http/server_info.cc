#include "server/http/server_info.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace favor::http {
namespace {

// POOLING_MEAN -> "mean", POOLING_LAST_TOKEN -> "last_token", as TEI names
// its poolings.
std::string PoolingName(v1::Pooling pooling) {
  absl::string_view name = v1::Pooling_Name(pooling);
  absl::ConsumePrefix(&name, "POOLING_");
  return absl::AsciiStrToLower(name);
}

}  // namespace

std::string InfoJson(const v1::ModelInfo& model, const ServerInfo& server) {
  const v1::ModelLimits& limits = model.limits();
  const v1::ModelConfig& config = model.config();
  nlohmann::ordered_json info;
  info["model_id"] = model.name();
  info["model_sha"] = model.revision();
  info["model_dtype"] = model.dtype();
  info["model_type"]["embedding"]["pooling"] =
      PoolingName(config.default_pooling());
  // Favor refuses past its queue's request count (RESOURCE_EXHAUSTED, 429),
  // as TEI does past max_concurrent_requests.
  info["max_concurrent_requests"] = limits.max_queued_requests();
  info["max_input_length"] = limits.max_tokens_per_input();
  info["max_batch_tokens"] = limits.max_tokens_per_batch();
  info["max_batch_requests"] = limits.max_requests_per_batch();
  info["max_client_batch_size"] = limits.max_inputs_per_call();
  // Truncation is each request's choice (`truncate`), never the server's.
  info["auto_truncate"] = false;
  info["tokenization_workers"] = server.tokenization_workers;
  info["version"] = server.version;
  info["sha"] = server.git_revision;
  info["docker_label"] = nullptr;
  info["model_version"] = model.version();
  info["architecture"] = config.architecture();
  info["attention"]["kernel"] = config.attention().kernel();
  info["attention"]["num_features"] = config.attention().num_features();
  info["attention"]["num_random_features"] =
      config.attention().num_random_features();
  info["hidden_size"] = config.hidden_size();
  info["max_tokens_per_call"] = limits.max_tokens_per_call();
  info["max_queued_tokens"] = limits.max_queued_tokens();
  info["memory_budget_bytes"] = server.memory_budget_bytes;
  info["devices"] = nlohmann::json::array();
  for (const std::string& device : model.devices()) {
    info["devices"].push_back(device);
  }
  // Replaced, not thrown on: model names and versions come from folders
  // and config files.
  return info.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace favor::http
