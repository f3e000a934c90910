// The ATen operator calls that code issues, counted with the RecordFunction
// observers that LibTorch's profiler is built on. Calls made inside another
// operator on the same thread (CPU bmm, for one, is a loop of addmm over its
// batch) are the operator's own business and are not counted.
#ifndef FAVOR_TESTS_ATTENTION_ATEN_CALLS_H_
#define FAVOR_TESTS_ATTENTION_ATEN_CALLS_H_

#include <ATen/record_function.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace favor::attention_testing {

enum class Threads {
  kCalling,  // the calling thread's calls only
  kEvery,    // every thread's: work handed to LibTorch's intra-op threads
             // too, and what operators run there (parallel_for's workers)
};

// Operator name → top-level calls while fn() runs.
template <typename Fn>
std::map<std::string, int64_t> AtenCalls(Fn&& fn,
                                         Threads threads = Threads::kCalling) {
  static std::mutex mutex;
  static std::map<std::string, int64_t>* calls = nullptr;
  static thread_local int depth = 0;
  std::map<std::string, int64_t> result;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    calls = &result;
  }
  auto callback =
      at::RecordFunctionCallback(
          [](const at::RecordFunction& call)
              -> std::unique_ptr<at::ObserverContext> {
            if (depth++ == 0) {
              const std::lock_guard<std::mutex> lock(mutex);
              if (calls != nullptr) ++(*calls)[call.name()];
            }
            return nullptr;
          },
          [](const at::RecordFunction&, at::ObserverContext*) { --depth; })
          .scopes({at::RecordScope::FUNCTION});
  const at::CallbackHandle handle = threads == Threads::kEvery
                                        ? at::addGlobalCallback(callback)
                                        : at::addThreadLocalCallback(callback);
  fn();
  at::removeCallback(handle);
  const std::lock_guard<std::mutex> lock(mutex);
  calls = nullptr;
  return result;
}

// Top-level calls on the calling thread while fn() runs.
template <typename Fn>
int64_t CountAtenCalls(Fn&& fn) {
  int64_t total = 0;
  for (const auto& [name, count] : AtenCalls(fn)) total += count;
  return total;
}

}  // namespace favor::attention_testing

#endif  // FAVOR_TESTS_ATTENTION_ATEN_CALLS_H_
