// torch_status::Guarded: what LibTorch throws becomes a Status, device
// memory exhaustion (CUDA's c10::OutOfMemoryError) a retryable
// RESOURCE_EXHAUSTED like host memory, not INTERNAL.
#include "server/attention/torch_status.h"

#include <c10/util/Exception.h>

#include <new>
#include <string>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::torch_status {
namespace {

using ::testing::HasSubstr;

TEST(TorchStatusTest, DeviceOutOfMemoryIsResourceExhausted) {
  const absl::StatusOr<int> result =
      Guarded("attention", []() -> absl::StatusOr<int> {
        TORCH_CHECK_WITH(OutOfMemoryError, false,
                         "CUDA out of memory. Tried to allocate 2.00 GiB");
        return 0;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("attention: out of device memory: CUDA out of memory"));
}

TEST(TorchStatusTest, HostOutOfMemoryIsResourceExhausted) {
  const absl::Status status =
      Guarded("model 'm'", []() -> absl::Status { throw std::bad_alloc(); });
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "model 'm': out of memory");
}

TEST(TorchStatusTest, AnyOtherLibTorchErrorIsInternal) {
  const absl::StatusOr<int> result =
      Guarded("attention", []() -> absl::StatusOr<int> {
        TORCH_CHECK(false, "shapes do not match");
        return 0;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("attention failed: shapes do not match"));
}

TEST(TorchStatusTest, ValuesAndStatusesPassThrough) {
  EXPECT_EQ(*Guarded("x", []() -> absl::StatusOr<int> { return 7; }), 7);
  EXPECT_EQ(Guarded("x", [] { return absl::NotFoundError("gone"); }),
            absl::NotFoundError("gone"));
}

}  // namespace
}  // namespace favor::torch_status
