// Checks tsan_absl_mutex_shim.cc: with `locked`, two threads increment a
// counter under an absl::Mutex (TSan must stay quiet); with `racy`, one of
// them skips the mutex (TSan must report a data race). Run by ctest only in
// the ThreadSanitizer build.
#include <cstring>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace {

absl::Mutex mu;
int counter = 0;
int turn = 0;

void Increment(bool use_mutex, int my_turn) {
  for (int i = 0; i < 200; ++i) {
    if (!use_mutex) {
      ++counter;
      continue;
    }
    absl::MutexLock lock(&mu);
    // Alternate strictly, so conditions evaluated by the other thread are
    // exercised too.
    mu.Await(absl::Condition(
        +[](int* expected) { return turn == *expected; }, &my_turn));
    ++counter;
    turn = 1 - turn;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool racy = argc > 1 && std::strcmp(argv[1], "racy") == 0;
  std::thread first([] { Increment(true, 0); });
  std::thread second([racy] { Increment(!racy, 1); });
  first.join();
  second.join();
  return 0;
}
