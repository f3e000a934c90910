#ifndef FAVOR_SERVER_ATTENTION_TORCH_STATUS_H_
#define FAVOR_SERVER_ATTENTION_TORCH_STATUS_H_

// The adapter between LibTorch's exceptions and Favor's Status (house
// style: whatever LibTorch throws is caught where LibTorch is called and
// leaves as a Status). Used by the attention library's and the model's
// entry points.

#include <c10/util/Exception.h>

#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace favor::torch_status {

// fn() (a Status or StatusOr), or the Status of what LibTorch threw:
// RESOURCE_EXHAUSTED for host memory (std::bad_alloc) and for device memory
// (c10::OutOfMemoryError: CUDA's caching allocator, which a smaller batch
// may fit), INTERNAL for any other c10::Error. `what` starts the message.
template <typename Fn>
auto Guarded(absl::string_view what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": out of memory"));
  } catch (const c10::OutOfMemoryError& error) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": out of device memory: ", error.what_without_backtrace()));
  } catch (const c10::Error& error) {
    return absl::InternalError(
        absl::StrCat(what, " failed: ", error.what_without_backtrace()));
  }
}

}  // namespace favor::torch_status

#endif  // FAVOR_SERVER_ATTENTION_TORCH_STATUS_H_
