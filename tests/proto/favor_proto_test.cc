// The generated API library links and its messages round-trip: a guard that
// favor_proto builds both the messages and the gRPC stubs, and that the wire
// shapes the service and clients rely on (packed floats, oneofs, tensor
// bytes) are what the .proto says.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "favor/v1/favor.grpc.pb.h"
#include "favor/v1/favor.pb.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace favor::v1 {
namespace {

template <typename Message>
Message RoundTrip(const Message& message) {
  std::string wire;
  EXPECT_TRUE(message.SerializeToString(&wire));
  Message parsed;
  EXPECT_TRUE(parsed.ParseFromString(wire));
  return parsed;
}

void AddInput(EmbedRequest& request, const std::vector<uint32_t>& token_ids) {
  request.add_inputs()->mutable_token_ids()->Add(token_ids.begin(),
                                                 token_ids.end());
}

EmbedRequest MakeEmbedRequest() {
  EmbedRequest request;
  request.set_model("bert-favor");
  AddInput(request, {101, 2023, 102});
  AddInput(request, {101, 102});
  request.set_pooling(POOLING_CLS);
  request.set_normalization(NORMALIZATION_L2);
  request.set_truncation(TRUNCATION_LEFT);
  request.set_include_token_embeddings(true);
  request.set_token_embeddings_dtype(DTYPE_BFLOAT16);
  request.set_priority(PRIORITY_HIGH);
  return request;
}

TEST(FavorProtoTest, EmbedRequestRoundTrips) {
  const EmbedRequest parsed = RoundTrip(MakeEmbedRequest());
  EXPECT_EQ(parsed.model(), "bert-favor");
  ASSERT_EQ(parsed.inputs_size(), 2);
  EXPECT_EQ(std::vector<uint32_t>(parsed.inputs(0).token_ids().begin(),
                                  parsed.inputs(0).token_ids().end()),
            (std::vector<uint32_t>{101, 2023, 102}));
  EXPECT_EQ(parsed.inputs(1).token_ids_size(), 2);
  EXPECT_EQ(parsed.pooling(), POOLING_CLS);
  EXPECT_EQ(parsed.normalization(), NORMALIZATION_L2);
  EXPECT_EQ(parsed.truncation(), TRUNCATION_LEFT);
  EXPECT_TRUE(parsed.include_token_embeddings());
  EXPECT_EQ(parsed.token_embeddings_dtype(), DTYPE_BFLOAT16);
  EXPECT_EQ(parsed.priority(), PRIORITY_HIGH);
}

TEST(FavorProtoTest, UnsetEnumsReadAsUnspecified) {
  const EmbedRequest parsed = RoundTrip(EmbedRequest());
  EXPECT_EQ(parsed.pooling(), POOLING_UNSPECIFIED);
  EXPECT_EQ(parsed.normalization(), NORMALIZATION_UNSPECIFIED);
  EXPECT_EQ(parsed.truncation(), TRUNCATION_UNSPECIFIED);
  EXPECT_EQ(parsed.priority(), PRIORITY_UNSPECIFIED);
  EXPECT_EQ(parsed.token_embeddings_dtype(), DTYPE_UNSPECIFIED);
}

// Pooled embeddings are packed: 4 bytes per value plus a few bytes of tags,
// not 5 bytes per value as unpacked floats would be.
TEST(FavorProtoTest, EmbeddingValuesArePacked) {
  Embedding embedding;
  for (int i = 0; i < 768; ++i) embedding.add_values(0.5f * i);
  const std::string wire = embedding.SerializeAsString();
  EXPECT_LE(wire.size(), 768u * 4u + 8u);
  const Embedding parsed = RoundTrip(embedding);
  ASSERT_EQ(parsed.values_size(), 768);
  EXPECT_FLOAT_EQ(parsed.values(767), 0.5f * 767);
}

TEST(FavorProtoTest, EmbedStreamResponseCarriesOneResult) {
  EmbedStreamResponse answer;
  answer.set_request_id("req-7");
  answer.mutable_response()->set_model("bert-favor");
  answer.mutable_response()->set_num_tokens(5);
  Status* error = answer.mutable_error();  // replaces the response
  error->set_code(8);                      // RESOURCE_EXHAUSTED
  error->set_message("queue full");
  error->set_retry_after_micros(2500);

  const EmbedStreamResponse parsed = RoundTrip(answer);
  EXPECT_EQ(parsed.request_id(), "req-7");
  ASSERT_EQ(parsed.result_case(), EmbedStreamResponse::kError);
  EXPECT_FALSE(parsed.has_response());
  EXPECT_EQ(parsed.error().code(), 8);
  EXPECT_EQ(parsed.error().retry_after_micros(), 2500);
}

Tensor MakeFloat32Tensor(const std::vector<int64_t>& shape,
                         const std::vector<float>& values) {
  Tensor tensor;
  for (int64_t dim : shape) tensor.add_shape(dim);
  tensor.set_dtype(DTYPE_FLOAT32);
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  tensor.set_data(std::move(bytes));
  return tensor;
}

TEST(FavorProtoTest, AttendRequestRoundTripsTensorsAndProjection) {
  AttendRequest request;
  *request.mutable_query() = MakeFloat32Tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  *request.mutable_key() = MakeFloat32Tensor({1, 1, 2, 2}, {5, 6, 7, 8});
  *request.mutable_value() = MakeFloat32Tensor({1, 1, 2, 1}, {9, 10});
  request.set_kernel("favor+");
  request.set_num_random_features(16);
  request.set_random_features(RANDOM_FEATURES_IID);
  request.set_projection_seed(0);  // set, though zero: the oneof says so
  request.set_causal(true);
  request.add_key_padding_mask(false);
  request.add_key_padding_mask(true);

  const AttendRequest parsed = RoundTrip(request);
  EXPECT_EQ(parsed.query().shape_size(), 4);
  EXPECT_EQ(parsed.value().shape(3), 1);
  EXPECT_EQ(parsed.key().dtype(), DTYPE_FLOAT32);
  ASSERT_EQ(parsed.key().data().size(), 4 * sizeof(float));
  float last_key = 0;
  std::memcpy(&last_key, parsed.key().data().data() + 3 * sizeof(float),
              sizeof(float));
  EXPECT_EQ(last_key, 8.0f);
  EXPECT_EQ(parsed.kernel(), "favor+");
  EXPECT_EQ(parsed.random_features(), RANDOM_FEATURES_IID);
  EXPECT_EQ(parsed.projection_case(), AttendRequest::kProjectionSeed);
  EXPECT_TRUE(parsed.causal());
  ASSERT_EQ(parsed.key_padding_mask_size(), 2);
  EXPECT_TRUE(parsed.key_padding_mask(1));
}

TEST(FavorProtoTest, ModelInfoRoundTrips) {
  ListModelsResponse response;
  response.set_default_model("bert-favor");
  ModelInfo* model = response.add_models();
  model->set_name("bert-favor");
  model->set_version("2024-01");
  model->set_is_default(true);
  model->add_devices("cuda:0");
  model->mutable_limits()->set_max_tokens_per_input(512);
  model->mutable_limits()->set_max_tokens_per_batch(16384);
  model->mutable_config()->set_hidden_size(768);
  model->mutable_config()->mutable_attention()->set_kernel("favor+");
  model->mutable_config()->mutable_attention()->set_num_features(256);

  const ListModelsResponse parsed = RoundTrip(response);
  ASSERT_EQ(parsed.models_size(), 1);
  const ModelInfo& info = parsed.models(0);
  EXPECT_EQ(info.devices(0), "cuda:0");
  EXPECT_EQ(info.limits().max_tokens_per_input(), 512);
  EXPECT_EQ(info.limits().max_tokens_per_batch(), 16384);
  EXPECT_EQ(info.config().attention().kernel(), "favor+");
  EXPECT_EQ(info.config().attention().num_features(), 256);
}

// The names the outside world sees (design.md) and the streaming shape of
// each method.
TEST(FavorProtoTest, ServiceDescriptorMatchesTheDesign) {
  const google::protobuf::ServiceDescriptor* service =
      EmbedRequest::descriptor()->file()->FindServiceByName("Favor");
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->full_name(), "favor.v1.Favor");
  EXPECT_EQ(std::string(Favor::service_full_name()), "favor.v1.Favor");
  ASSERT_EQ(service->method_count(), 6);
  const auto* stream = service->FindMethodByName("EmbedStream");
  ASSERT_NE(stream, nullptr);
  EXPECT_TRUE(stream->client_streaming());
  EXPECT_TRUE(stream->server_streaming());
  for (const char* unary :
       {"Embed", "Attend", "ListModels", "GetModel", "Tokenize"}) {
    const auto* method = service->FindMethodByName(unary);
    ASSERT_NE(method, nullptr) << unary;
    EXPECT_FALSE(method->client_streaming()) << unary;
    EXPECT_FALSE(method->server_streaming()) << unary;
  }
}

// Links the gRPC stubs (favor.grpc.pb.cc); no call is made.
TEST(FavorProtoTest, StubLinks) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
  std::unique_ptr<Favor::Stub> stub = Favor::NewStub(channel);
  EXPECT_NE(stub, nullptr);
}

}  // namespace
}  // namespace favor::v1
