// ResolveEmbedOptions: every pooling the API names reaches the model as its
// own, and the unspecified one is the model's default.
#include "server/service/embed_validation.h"

#include "gtest/gtest.h"

namespace favor::service {
namespace {

TEST(ResolveEmbedOptionsTest, EveryPoolingReachesTheModel) {
  model::ModelDescription model;
  model.name = "m";
  model.config.pooling = model::Pooling::kLastToken;
  model.has_attention_pooling = true;
  const EmbedLimits limits;
  for (const auto& [proto, pooling] :
       {std::pair{v1::POOLING_UNSPECIFIED, model::Pooling::kLastToken},
        {v1::POOLING_MEAN, model::Pooling::kMean},
        {v1::POOLING_CLS, model::Pooling::kCls},
        {v1::POOLING_ATTENTION, model::Pooling::kAttention},
        {v1::POOLING_NONE, model::Pooling::kNone},
        {v1::POOLING_MAX, model::Pooling::kMax},
        {v1::POOLING_LAST_TOKEN, model::Pooling::kLastToken}}) {
    v1::EmbedRequest request;
    request.set_pooling(proto);
    auto options = ResolveEmbedOptions(request, model, limits);
    ASSERT_TRUE(options.ok()) << options.status();
    EXPECT_EQ(options->pooling, pooling) << v1::Pooling_Name(proto);
  }
  v1::EmbedRequest unknown;
  unknown.set_pooling(static_cast<v1::Pooling>(7));
  EXPECT_EQ(ResolveEmbedOptions(unknown, model, limits).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::service
