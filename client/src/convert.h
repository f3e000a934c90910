// Conversions between the client's plain types and the favor.v1 protobuf
// messages, in one place so that no public header needs protobuf.
#ifndef FAVOR_CLIENT_SRC_CONVERT_H_
#define FAVOR_CLIENT_SRC_CONVERT_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "favor/attend.h"
#include "favor/embed.h"
#include "favor/model_info.h"
#include "favor/tensor.h"
#include "favor/tokenize.h"
#include "favor/v1/favor.pb.h"
#include "grpcpp/support/status.h"

namespace favor::client_internal {

// abseil's codes are gRPC's codes: the code and the message are kept.
absl::Status FromGrpcStatus(const grpc::Status& status);

// A stream message's error (favor.v1.Status) as an absl::Status.
absl::Status FromProtoStatus(const v1::Status& status);

void ToProto(const Tensor& tensor, v1::Tensor* proto);
Tensor FromProto(const v1::Tensor& proto);

// Id sequences as the inputs they stand for (the TokenIds overloads).
std::vector<EmbedInput> ToEmbedInputs(absl::Span<const TokenIds> inputs);

void ToProto(absl::Span<const EmbedInput> inputs, const EmbedOptions& options,
             v1::EmbedRequest* proto);
EmbedResult FromProto(const v1::EmbedResponse& proto);

void ToProto(absl::Span<const std::string> texts,
             const TokenizeOptions& options, v1::TokenizeRequest* proto);
TokenizeResult FromProto(const v1::TokenizeResponse& proto);

void ToProto(const AttendRequest& request, v1::AttendRequest* proto);
AttendResult FromProto(const v1::AttendResponse& proto);

ModelInfo FromProto(const v1::ModelInfo& proto);
ModelInfo FromProto(const v1::GetModelResponse& proto);
ModelList FromProto(const v1::ListModelsResponse& proto);

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_CONVERT_H_
