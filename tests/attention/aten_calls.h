// The ATen operator calls that code issues on the calling thread, counted
// with the RecordFunction observers that LibTorch's profiler is built on.
// Calls made inside another operator (CPU bmm, for one, is a loop of addmm
// over its batch) are the operator's own business and are not counted.
#ifndef FAVOR_TESTS_ATTENTION_ATEN_CALLS_H_
#define FAVOR_TESTS_ATTENTION_ATEN_CALLS_H_

#include <ATen/record_function.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace favor::attention_testing {

// Operator name → top-level calls while fn() runs on this thread.
template <typename Fn>
std::map<std::string, int64_t> AtenCalls(Fn&& fn) {
  static thread_local std::map<std::string, int64_t>* calls = nullptr;
  static thread_local int depth = 0;
  std::map<std::string, int64_t> result;
  calls = &result;
  depth = 0;
  const at::CallbackHandle handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(
          [](const at::RecordFunction& call)
              -> std::unique_ptr<at::ObserverContext> {
            if (depth++ == 0 && calls != nullptr) ++(*calls)[call.name()];
            return nullptr;
          },
          [](const at::RecordFunction&, at::ObserverContext*) { --depth; })
          .scopes({at::RecordScope::FUNCTION}));
  fn();
  at::removeCallback(handle);
  calls = nullptr;
  return result;
}

template <typename Fn>
int64_t CountAtenCalls(Fn&& fn) {
  int64_t total = 0;
  for (const auto& [name, count] : AtenCalls(fn)) total += count;
  return total;
}

}  // namespace favor::attention_testing

#endif  // FAVOR_TESTS_ATTENTION_ATEN_CALLS_H_
