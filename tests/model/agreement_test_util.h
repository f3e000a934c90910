// The dtype tests' common check: a model's pooled embeddings in one dtype or
// on one device against float32 on the CPU (server/model/dtype_agreement.h).
#ifndef FAVOR_TESTS_MODEL_AGREEMENT_TEST_UTIL_H_
#define FAVOR_TESTS_MODEL_AGREEMENT_TEST_UTIL_H_

#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "server/model/dtype_agreement.h"
#include "server/model/model.h"

namespace favor::model {

// Loads the model in `directory` as float32 on the CPU and with `options`,
// and expects the pooled embeddings of 40 inputs of 1 to 2k tokens to agree:
// a mean cosine of at least min_mean_cosine, none below min_cosine. Prints
// the cosines after `label`.
inline void ExpectEmbeddingsAgree(const std::string& directory,
                                  const ModelOptions& options,
                                  double min_mean_cosine, double min_cosine,
                                  const std::string& label) {
  auto reference = Model::Load(directory);
  ASSERT_TRUE(reference.ok()) << reference.status();
  auto candidate = Model::Load(directory, options);
  ASSERT_TRUE(candidate.ok()) << candidate.status();
  AgreementOptions agreement_options;
  agreement_options.num_inputs = 40;
  agreement_options.max_tokens = 2048;
  const auto agreement =
      CompareEmbeddings(**reference, **candidate, agreement_options);
  ASSERT_TRUE(agreement.ok()) << agreement.status();
  EXPECT_EQ(agreement->num_inputs, 40);
  EXPECT_GE(agreement->mean_cosine, min_mean_cosine);
  EXPECT_GE(agreement->min_cosine, min_cosine)
      << "at an input of " << agreement->min_cosine_length << " tokens";
  std::printf("%s: cosine mean %.6f, min %.6f\n", label.c_str(),
              agreement->mean_cosine, agreement->min_cosine);
}

}  // namespace favor::model

#endif  // FAVOR_TESTS_MODEL_AGREEMENT_TEST_UTIL_H_
