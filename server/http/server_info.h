// GET /info: what a server is and what it will take, in the shape
// text-embeddings-inference gives its own /info (model_id, model_sha,
// model_dtype, model_type, max_concurrent_requests, max_input_length,
// max_batch_tokens, max_batch_requests, max_client_batch_size,
// auto_truncate, tokenization_workers, version, sha, docker_label), so that
// clients and dashboards written for TEI read it, plus Favor's own fields:
// model_version, architecture, attention {kernel, num_features,
// num_random_features}, hidden_size, max_tokens_per_call, memory_budget_bytes
// and devices. The model's part comes from GetModel (one source of truth
// for each number, style habit 12); the server's part from ServerInfo.
#ifndef FAVOR_SERVER_HTTP_SERVER_INFO_H_
#define FAVOR_SERVER_HTTP_SERVER_INFO_H_

#include <cstdint>
#include <string>

#include "favor/v1/favor.pb.h"

namespace favor::http {

// What GET /info says of the server itself (favor-server's build and
// flags; main copies them in).
struct ServerInfo {
  // Favor's version and the git commit it was built from (build_info.h).
  std::string version = "unknown";
  std::string git_revision = "unknown";
  // The memory budget (--max_memory_bytes resolved): 0 for none.
  int64_t memory_budget_bytes = 0;
  // Threads that tokenise (--tokenizer_threads).
  int64_t tokenization_workers = 0;
};

// The JSON body of GET /info for `model`.
std::string InfoJson(const v1::ModelInfo& model, const ServerInfo& server);

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_SERVER_INFO_H_
