// How Favor uses the CPU's cores.
//
// Small matrix products (a chunk of 512 tokens × 64 × 256) reach about half
// of the machine's sgemm rate when the BLAS library splits each of them
// across threads, and about 85% when each thread runs whole products on its
// own. So Favor parallelises above BLAS: the attention kernels run
// independent (sequence, head, chunk-range) tasks on LibTorch's intra-op
// threads, and BLAS itself runs single-threaded.
#ifndef FAVOR_SERVER_ATTENTION_PARALLELISM_H_
#define FAVOR_SERVER_ATTENTION_PARALLELISM_H_

namespace favor::attention {

struct CpuParallelismOptions {
  // Intra-op threads; 0 means one per hardware thread.
  int num_threads = 0;
};

// Sets LibTorch's intra-op thread count and makes OpenBLAS (when it is the
// BLAS in use) single-threaded. Call once at start-up, before any tensor
// work; it changes process-wide settings. Returns the thread count in use.
int ConfigureCpuParallelism(const CpuParallelismOptions& options);

// Sets OpenBLAS's own thread count (no-op under another BLAS). Benchmarks
// use it to measure the machine's multi-threaded sgemm ceiling.
void SetBlasThreads(int threads);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_PARALLELISM_H_
