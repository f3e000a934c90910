// A minimal favor::Client program: checks the server's health, prints its
// default model, embeds two texts (blocking) when the model has a tokenizer,
// shows their tokens, then embeds two token id sequences, blocking, through
// a future and over an EmbedStream.
//
//   favor_client_example [host:port] [bearer-token]
//
// The token ids are framed for a BERT-style vocabulary ([CLS] ... [SEP]);
// ids at or above the model's vocab_size are refused with INVALID_ARGUMENT.
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "favor/client.h"

namespace {

// Health and the default model; false when there is no model to show.
// `*takes_text`: whether the model has a tokenizer.
bool ShowServer(favor::Client& client, bool* takes_text) {
  absl::StatusOr<favor::ServingStatus> health = client.CheckHealth();
  std::printf("health: %s\n", health.ok() ? favor::ServingStatusName(*health)
                                          : health.status().ToString().c_str());
  absl::StatusOr<favor::ModelInfo> model = client.GetModel();
  if (!model.ok()) {
    std::fprintf(stderr, "GetModel: %s\n", model.status().ToString().c_str());
    return false;
  }
  const favor::TokenizerInfo& tokenizer = model->config.tokenizer;
  std::printf("model %s: vocab %lld, hidden %lld, attention %s, tokenizer %s\n",
              model->name.c_str(),
              static_cast<long long>(model->config.vocab_size),
              static_cast<long long>(model->config.hidden_size),
              model->config.attention.kernel.c_str(),
              tokenizer.kind.empty() ? "none (token ids only)"
                                     : tokenizer.kind.c_str());
  *takes_text = !tokenizer.kind.empty();
  return true;
}

// Text in: the server tokenises it with the model's own tokenizer.
bool EmbedText(favor::Client& client) {
  absl::StatusOr<favor::EmbedResult> result =
      client.Embed({"Hello, world!", "Text goes in as it is."});
  if (!result.ok()) {
    std::fprintf(stderr, "Embed: %s\n", result.status().ToString().c_str());
    return false;
  }
  std::printf("text 0: %zu values, %lld tokens\n",
              result->embeddings[0].values.size(),
              static_cast<long long>(result->embeddings[0].num_tokens));
  absl::StatusOr<favor::TokenizeResult> tokens =
      client.Tokenize({"Hello, world!"});
  if (!tokens.ok()) return false;
  const favor::TokenizedText& text = tokens->texts[0];
  for (size_t i = 0; i < text.ids.size(); ++i) {
    std::printf("  %u %s [%u, %u)\n", text.ids[i], text.tokens[i].c_str(),
                text.begin_offsets[i], text.end_offsets[i]);
  }
  return true;
}

// Blocking, then asynchronous with a future.
bool Embed(favor::Client& client, const std::vector<favor::TokenIds>& inputs) {
  absl::StatusOr<favor::EmbedResult> result = client.Embed(inputs);
  if (!result.ok()) {
    std::fprintf(stderr, "Embed: %s\n", result.status().ToString().c_str());
    return false;
  }
  for (size_t i = 0; i < result->embeddings.size(); ++i) {
    const std::vector<float>& values = result->embeddings[i].values;
    std::printf("input %zu: %zu values, first %f\n", i, values.size(),
                values.empty() ? 0.0f : values[0]);
  }
  auto future = client.EmbedFuture(inputs);
  std::printf("future: %s\n", future.get().ok() ? "OK" : "failed");
  return true;
}

// Many in flight over one stream.
bool EmbedOverStream(favor::Client& client,
                     const std::vector<favor::TokenIds>& inputs) {
  absl::StatusOr<std::unique_ptr<favor::EmbedStreamer>> stream =
      client.OpenEmbedStream();
  if (!stream.ok()) return false;
  for (const favor::TokenIds& input : inputs) (void)(*stream)->Send({input});
  (*stream)->CloseSend();
  while (std::optional<favor::StreamedEmbedResult> answer = (*stream)->Next()) {
    std::printf(
        "stream answer %llu: %s\n", static_cast<unsigned long long>(answer->id),
        answer->result.ok() ? "OK"
                            : answer->result.status().ToString().c_str());
  }
  absl::Status finished = (*stream)->Finish();
  std::printf("stream: %s\n", finished.ToString().c_str());
  return finished.ok();
}

}  // namespace

int main(int argc, char** argv) {
  favor::ClientOptions options;
  options.endpoints = {argc > 1 ? argv[1] : "localhost:50051"};
  if (argc > 2) options.bearer_token = argv[2];
  options.default_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<favor::Client>> client =
      favor::Client::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  const std::vector<favor::TokenIds> inputs = {{101, 7592, 2088, 102},
                                               {101, 2088, 102}};
  bool takes_text = false;
  const bool ok = ShowServer(**client, &takes_text) &&
                  (!takes_text || EmbedText(**client)) &&
                  Embed(**client, inputs) && EmbedOverStream(**client, inputs);
  return ok ? 0 : 1;
}
