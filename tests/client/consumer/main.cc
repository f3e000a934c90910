// Uses the installed favor::client against a server with FakeModel
// (favor_client_fake_server): health, ListModels, Embed in its three forms
// (of TokenIds and of EmbedInputs; text that is not UTF-8 refused) and an
// EmbedStream; checks the answers and exits 0 only when all are
// right. Only favor/client.h is included: no protobuf, gRPC or LibTorch
// header is needed.
#include <cstdio>
#include <memory>
#include <vector>

#include "favor/client.h"

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

// FakeModel's embedding of a sequence: (sum of ids, length, first id, 1).
bool IsFakeEmbedding(const favor::Embedding& embedding,
                     const favor::TokenIds& ids) {
  float sum = 0;
  for (uint32_t id : ids) sum += static_cast<float>(id);
  return embedding.values ==
         std::vector<float>{sum, static_cast<float>(ids.size()),
                            static_cast<float>(ids[0]), 1.0f};
}

bool IsRight(const absl::StatusOr<favor::EmbedResult>& result,
             const std::vector<favor::TokenIds>& inputs) {
  if (!result.ok() || result->embeddings.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!IsFakeEmbedding(result->embeddings[i], inputs[i])) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer HOST:PORT\n");
    return 2;
  }
  favor::ClientOptions options;
  options.endpoints = {argv[1]};
  options.default_timeout = absl::Seconds(20);
  absl::StatusOr<std::unique_ptr<favor::Client>> created =
      favor::Client::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
    return 1;
  }
  favor::Client& client = **created;

  absl::StatusOr<favor::ServingStatus> health = client.CheckHealth();
  Check(health.ok() && *health == favor::ServingStatus::kServing, "health");

  absl::StatusOr<favor::ModelList> models = client.ListModels();
  Check(models.ok() && models->default_model == "fake", "ListModels");

  const std::vector<favor::TokenIds> inputs = {{5, 6, 7}, {9}};
  Check(IsRight(client.Embed(inputs), inputs), "Embed");
  Check(IsRight(client.EmbedFuture(inputs).get(), inputs), "EmbedFuture");
  const std::vector<favor::EmbedInput> id_inputs = {
      favor::EmbedInput(inputs[0]), favor::EmbedInput(inputs[1])};
  Check(IsRight(client.Embed(id_inputs), inputs), "Embed of EmbedInputs");
  // Checked by the library before sending, whatever the server's model.
  Check(client.Embed({"not UTF-8: \xff"}).status().code() ==
            absl::StatusCode::kInvalidArgument,
        "text that is not UTF-8 refused");

  absl::StatusOr<std::unique_ptr<favor::EmbedStreamer>> stream =
      client.OpenEmbedStream();
  Check(stream.ok(), "OpenEmbedStream");
  if (stream.ok()) {
    for (uint32_t i = 1; i <= 20; ++i) (void)(*stream)->Send({{i, i}});
    (*stream)->CloseSend();
    int right = 0;
    while (auto answer = (*stream)->Next()) {
      const uint32_t i = static_cast<uint32_t>(answer->id) + 1;
      if (answer->result.ok() &&
          IsFakeEmbedding(answer->result->embeddings.at(0), {i, i})) {
        ++right;
      }
    }
    Check(right == 20, "EmbedStream answers");
    Check((*stream)->Finish().ok(), "EmbedStream finish");
  }

  const absl::StatusOr<favor::EmbedResult> bad = client.Embed({{100}});
  Check(bad.status().code() == absl::StatusCode::kInvalidArgument,
        "INVALID_ARGUMENT carried");

  std::printf("%s\n", failures == 0 ? "consumer OK" : "consumer FAILED");
  return failures == 0 ? 0 : 1;
}
