#include "server/attention/parallelism.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <thread>

namespace favor::attention {

// OpenBLAS exports openblas_set_num_threads; other BLAS libraries do not,
// and then there is nothing to configure. Looked up at run time so that
// Favor links against whatever BLAS LibTorch was built with.
void SetBlasThreads(int threads) {
  using SetThreadsFn = void (*)(int);
  auto set_threads = reinterpret_cast<SetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set_threads != nullptr) set_threads(threads);
}

int ConfigureCpuParallelism(const CpuParallelismOptions& options) {
  int threads = options.num_threads;
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
  }
  if (threads <= 0) threads = 1;
  at::set_num_threads(threads);
  SetBlasThreads(1);
  return threads;
}

}  // namespace favor::attention
