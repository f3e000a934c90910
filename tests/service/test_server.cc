#include "tests/service/test_server.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "server/model/model_config.h"
#include "server/model/random_model.h"
#include "server/tokenizer/tokenizer_builders.h"

namespace favor::service::testing {

FakeModel::FakeModel(std::string name, int64_t vocab_size,
                     int64_t max_sequence_length) {
  description_.name = std::move(name);
  description_.device = "cpu";
  description_.config.vocab_size = vocab_size;
  description_.config.max_sequence_length = max_sequence_length;
  description_.config.hidden_size = 4;
  description_.config.num_attention_heads = 1;
  description_.config.version = "fake-1";
  description_.embedding_dim = 4;
}

absl::StatusOr<model::Embeddings> FakeModel::Embed(
    absl::Span<const int32_t> token_ids, absl::Span<const int64_t> offsets,
    const model::EmbedOptions& options) const {
  absl::Duration cost;
  {
    absl::MutexLock lock(&mu_);
    ++calls_;
    sequences_ += static_cast<int64_t>(offsets.size()) - 1;
    mu_.Await(absl::Condition(
        +[](bool* held) { return !*held; }, const_cast<bool*>(&held_)));
    cost = cost_per_call_;
  }
  if (cost > absl::ZeroDuration()) absl::SleepFor(cost);
  for (int32_t id : token_ids) {
    if (id == 99) return absl::InternalError("c10::Error: fake failure");
  }
  model::Embeddings out;
  out.dim = 4;
  out.row_offsets.push_back(0);
  const bool pooled = options.pooling != model::Pooling::kNone;
  const bool vectors = pooled && options.include_token_vectors;
  if (vectors) out.token_row_offsets.push_back(0);
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    float sum = 0;
    for (int64_t t = offsets[s]; t < offsets[s + 1]; ++t) {
      sum += static_cast<float>(token_ids[t]);
      std::vector<float>& rows = pooled ? out.token_vectors : out.values;
      if (!pooled || vectors) {
        rows.insert(rows.end(), {static_cast<float>(token_ids[t]),
                                 static_cast<float>(t - offsets[s]), 0, 0});
      }
    }
    if (pooled) {
      out.values.insert(out.values.end(),
                        {sum, static_cast<float>(offsets[s + 1] - offsets[s]),
                         static_cast<float>(token_ids[offsets[s]]), 1});
    }
    out.row_offsets.push_back(static_cast<int64_t>(out.values.size()) / 4);
    if (vectors) {
      out.token_row_offsets.push_back(
          static_cast<int64_t>(out.token_vectors.size()) / 4);
    }
  }
  return out;
}

void FakeModel::Hold() {
  absl::MutexLock lock(&mu_);
  held_ = true;
}

void FakeModel::Release() {
  absl::MutexLock lock(&mu_);
  held_ = false;
}

void FakeModel::SetCostPerCall(absl::Duration cost) {
  absl::MutexLock lock(&mu_);
  cost_per_call_ = cost;
}

void FakeModel::WaitForCalls(int n) const {
  absl::MutexLock lock(&mu_);
  std::pair<const int*, int> arg(&calls_, n);
  mu_.Await(absl::Condition(
      +[](std::pair<const int*, int>* a) { return *a->first >= a->second; },
      &arg));
}

int FakeModel::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

int64_t FakeModel::sequences() const {
  absl::MutexLock lock(&mu_);
  return sequences_;
}

std::shared_ptr<const tokenizer::Tokenizer> SmallVocabTokenizer() {
  auto tokenizer = tokenizer::TokenizerFromVocabTxt(
      "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n##s\n.\n",
      {}, "test vocab.txt");
  CHECK(tokenizer.ok()) << tokenizer.status();
  return std::shared_ptr<const tokenizer::Tokenizer>(*std::move(tokenizer));
}

HeldTokensTokenizer::HeldTokensTokenizer(
    std::shared_ptr<const tokenizer::Tokenizer> inner)
    : inner_(std::move(inner)) {}

absl::StatusOr<tokenizer::Encoding> HeldTokensTokenizer::Encode(
    absl::string_view text, const tokenizer::EncodeOptions& options) const {
  auto encoding = inner_->Encode(text, options);
  if (encoding.ok()) {
    absl::MutexLock lock(&mu_);
    most_held_ = std::max(most_held_, encoding->ids.capacity());
  }
  return encoding;
}

size_t HeldTokensTokenizer::num_added_special_tokens() const {
  return inner_->num_added_special_tokens();
}

void HeldTokensTokenizer::AddSpecialTokens(
    tokenizer::Encoding* encoding) const {
  inner_->AddSpecialTokens(encoding);
}

absl::string_view HeldTokensTokenizer::kind() const { return inner_->kind(); }

size_t HeldTokensTokenizer::vocab_size() const { return inner_->vocab_size(); }

absl::string_view HeldTokensTokenizer::IdToToken(int32_t id) const {
  return inner_->IdToToken(id);
}

std::optional<int32_t> HeldTokensTokenizer::TokenToId(
    absl::string_view token) const {
  return inner_->TokenToId(token);
}

const std::vector<tokenizer::SpecialToken>&
HeldTokensTokenizer::special_tokens() const {
  return inner_->special_tokens();
}

size_t HeldTokensTokenizer::most_held() const {
  absl::MutexLock lock(&mu_);
  return most_held_;
}

std::unique_ptr<model::Model> LoadSmallRandomModel(
    const std::string& directory) {
  model::ModelConfig config;
  config.version = "small-test";
  config.vocab_size = 64;
  config.hidden_size = 32;
  config.num_attention_heads = 4;
  config.num_hidden_layers = 2;
  config.intermediate_size = 48;
  config.max_position_embeddings = 128;
  config.max_sequence_length = 128;
  config.attention.num_random_features = 16;
  absl::Status written = model::WriteRandomModel(config, directory);
  CHECK(written.ok()) << written;
  auto loaded = model::Model::Load(directory);
  CHECK(loaded.ok()) << loaded.status();
  return *std::move(loaded);
}

TestServer::TestServer(const FavorService::Options& options,
                       const std::vector<const model::Model*>& models,
                       const TestServerOptions& server_options) {
  if (server_options.metrics) {
    metrics::Metrics::Options metrics_options;
    metrics_options.serve_http = false;
    for (const model::Model* model : models) {
      metrics_options.models.push_back(model->name());
    }
    metrics_ = *metrics::Metrics::Create(metrics_options);
  }
  FavorService::Options with_tokens = options;
  if (!server_options.bearer_tokens.empty()) {
    with_tokens.bearer_tokens = server_options.bearer_tokens;
  }
  auto service = FavorService::Create(with_tokens, models, metrics_.get());
  CHECK(service.ok()) << service.status();
  service_ = *std::move(service);
  // A process-wide setting, read when the server is built.
  grpc::EnableDefaultHealthCheckService(server_options.health);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0",
                           server_options.credentials != nullptr
                               ? server_options.credentials
                               : grpc::InsecureServerCredentials(),
                           &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  CHECK(server_ != nullptr && port_ != 0);
  if (server_options.health) {
    server_->GetHealthCheckService()->SetServingStatus(true);
  }
  stub_ = NewStub();
}

std::unique_ptr<v1::Favor::Stub> TestServer::NewStub() const {
  return v1::Favor::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
}

TestServer::~TestServer() {
  service_->Shutdown(absl::ZeroDuration());
  server_->Shutdown();
  server_->Wait();
}

}  // namespace favor::service::testing
