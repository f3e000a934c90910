// FAVOR_MULTIVERSION before a function compiles it for AVX-512 (x86-64-v4),
// AVX2 with FMA (x86-64-v3) and baseline x86-64, and the loader picks the
// best one for the machine (GCC's target_clones): for plain loops that the
// compiler vectorises, so that one binary is fast on AVX-512 and still runs
// anywhere. Elsewhere (clang, other architectures) it is nothing.
#ifndef FAVOR_SERVER_COMMON_MULTIVERSION_H_
#define FAVOR_SERVER_COMMON_MULTIVERSION_H_

// FAVOR_X86_TARGETS is defined where code may carry GCC's target
// attributes and x86 intrinsics (x86-64 with GCC): the kernels written for
// one ISA (AVX2, AVX-512, AVX-512 BF16 and VNNI) compile only there, and
// are picked at run time (server/attention/cpu_features.h).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FAVOR_X86_TARGETS 1
#endif

#ifdef FAVOR_X86_TARGETS
#define FAVOR_MULTIVERSION \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FAVOR_MULTIVERSION
#endif

#endif  // FAVOR_SERVER_COMMON_MULTIVERSION_H_
