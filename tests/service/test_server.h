// Test support for the service: a FakeModel whose Embed can be held (to fill
// queues and test deadlines and cancellation), a small real model written
// with WriteRandomModel, and a FavorService served over gRPC on loopback.
#ifndef FAVOR_TESTS_SERVICE_TEST_SERVER_H_
#define FAVOR_TESTS_SERVICE_TEST_SERVER_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/metrics/metrics.h"
#include "server/model/model.h"
#include "server/service/bearer_auth.h"
#include "server/service/favor_service.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::service::testing {

// A model whose pooled embedding of a sequence is (sum of ids, length, first
// id, 1) and whose token rows are (id, position, 0, 0), neither ever
// normalised. While held, Embed blocks until Release(). A batch holding
// token id 99 fails with INTERNAL, as a LibTorch error would. Its
// description may be given a tokenizer (set_tokenizer).
class FakeModel final : public model::Model {
 public:
  explicit FakeModel(std::string name, int64_t vocab_size = 100,
                     int64_t max_sequence_length = 64);

  const model::ModelDescription& description() const override {
    return description_;
  }
  absl::StatusOr<model::Embeddings> Embed(
      absl::Span<const int32_t> token_ids, absl::Span<const int64_t> offsets,
      const model::EmbedOptions& options) const override;

  // Text inputs go through `tokenizer` (null: none), as if config.json
  // named `file`; its ids must be below vocab_size. Before the service
  // starts.
  void set_tokenizer(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                     std::string file = "vocab.txt") {
    description_.tokenizer = std::move(tokenizer);
    description_.config.tokenizer.file = std::move(file);
  }

  // sentence-transformers' prompts, as a Hugging Face folder's would be.
  // Before the service starts.
  void set_prompts(std::map<std::string, std::string> prompts,
                   std::string default_prompt_name = "") {
    description_.prompts = std::move(prompts);
    description_.default_prompt_name = std::move(default_prompt_name);
  }

  void Hold();
  void Release();
  // Each Embed call takes at least `cost` whatever its batch (a device
  // whose per-call overhead dominates); zero by default.
  void SetCostPerCall(absl::Duration cost);
  // Blocks until `n` Embed calls have started (held ones included).
  void WaitForCalls(int n) const;
  int calls() const;
  int64_t sequences() const;  // sequences embedded so far

 private:
  model::ModelDescription description_;
  mutable absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration cost_per_call_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  mutable int calls_ ABSL_GUARDED_BY(mu_) = 0;
  mutable int64_t sequences_ ABSL_GUARDED_BY(mu_) = 0;
};

// A WordPiece tokenizer (BERT's options) of twelve ids: [PAD]=0 [UNK]=1
// [CLS]=2 [SEP]=3 [MASK]=4 the=5 cat=6 sat=7 on=8 mat=9 ##s=10 .=11.
std::shared_ptr<const tokenizer::Tokenizer> SmallVocabTokenizer();

// Forwards to a tokenizer and keeps the most tokens an encoding it answered
// had room for (its ids' capacity): what one Encode call held in memory.
class HeldTokensTokenizer final : public tokenizer::Tokenizer {
 public:
  explicit HeldTokensTokenizer(
      std::shared_ptr<const tokenizer::Tokenizer> inner);

  absl::StatusOr<tokenizer::Encoding> Encode(
      absl::string_view text,
      const tokenizer::EncodeOptions& options) const override;
  size_t num_added_special_tokens() const override;
  void AddSpecialTokens(tokenizer::Encoding* encoding) const override;
  absl::string_view kind() const override;
  size_t vocab_size() const override;
  absl::string_view IdToToken(int32_t id) const override;
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  const std::vector<tokenizer::SpecialToken>& special_tokens() const override;

  size_t most_held() const;

 private:
  std::shared_ptr<const tokenizer::Tokenizer> inner_;
  mutable absl::Mutex mu_;
  mutable size_t most_held_ ABSL_GUARDED_BY(mu_) = 0;
};

// Writes a small random model (vocab 64, hidden 32, 2 layers, FAVOR+ with
// m = 16, max_sequence_length 128) into `directory` and loads it.
std::unique_ptr<model::Model> LoadSmallRandomModel(
    const std::string& directory);

// How TestServer serves: the defaults are plaintext, no authentication and
// no health service.
struct TestServerOptions {
  // Non-empty: the service requires these bearer tokens
  // (FavorService::Options::bearer_tokens).
  std::vector<std::string> bearer_tokens;
  // Null: InsecureServerCredentials. NewStub() is plaintext whatever this is.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Serve grpc.health.v1.Health (SERVING).
  bool health = false;
  // False: the service is given no Metrics (it records into
  // Metrics::Noop()), and TestServer::metrics() must not be called.
  bool metrics = true;
};

// A FavorService on 127.0.0.1:<free port>, with Metrics (no HTTP) unless
// told otherwise.
class TestServer {
 public:
  TestServer(const FavorService::Options& options,
             const std::vector<const model::Model*>& models,
             const TestServerOptions& server_options = {});
  ~TestServer();

  v1::Favor::Stub& stub() { return *stub_; }
  std::unique_ptr<v1::Favor::Stub> NewStub() const;
  FavorService& service() { return *service_; }
  metrics::Metrics& metrics() { return *metrics_; }
  int port() const { return port_; }

 private:
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<FavorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Favor::Stub> stub_;
  int port_ = 0;
};

}  // namespace favor::service::testing

#endif  // FAVOR_TESTS_SERVICE_TEST_SERVER_H_
