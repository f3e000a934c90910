// Makes absl::Mutex visible to ThreadSanitizer in batching_tsan_test.
//
// Debian's abseil is built without -fsanitize=thread, so the atomics and
// futex calls inside absl::Mutex are invisible to TSan, which then reports
// every access guarded by an absl::Mutex as a race. This file, linked only
// into the TSan test binary, defines the absl::Mutex member functions the
// project uses; calls from instrumented code bind to these definitions
// (the executable's symbols take precedence over the shared library's). Each
// forwards to abseil's own implementation (found with dlsym(RTLD_NEXT)) and
// tells TSan about the happens-before edge it creates: acquire after
// locking, release before unlocking. Conditions are wrapped so that their
// evaluation, which abseil may do on whichever thread releases the mutex,
// is ordered like a critical section too. Real races (an access without the
// mutex) are still reported: tsan_shim_selfcheck.cc checks both ways.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/base/config.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#if !ABSL_OPTION_USE_INLINE_NAMESPACE
#error "the shim spells abseil's mangled names with an inline namespace"
#endif

namespace {

#define FAVOR_SHIM_STR2(x) #x
#define FAVOR_SHIM_STR(x) FAVOR_SHIM_STR2(x)

// "_ZN4absl<len><ns>" + `rest`: the Itanium mangling of absl::<ns>::<rest>.
template <typename Function>
Function Real(const char* rest) {
  const char* ns = FAVOR_SHIM_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name =
      std::string("_ZN4absl") + std::to_string(std::strlen(ns)) + ns + rest;
  void* function = dlsym(RTLD_NEXT, name.c_str());
  if (function == nullptr) {
    std::fprintf(stderr, "tsan shim: %s not found in abseil\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Function>(function);
}

struct WrappedCondition {
  const absl::Condition* condition;
  void* mu;
};

bool EvalWrapped(WrappedCondition* wrapped) {
  __tsan_acquire(wrapped->mu);
  const bool result = wrapped->condition->Eval();
  __tsan_release(wrapped->mu);
  return result;
}

using Plain = void (*)(absl::Mutex*);
using Try = bool (*)(absl::Mutex*);
using Await = void (*)(absl::Mutex*, const absl::Condition&);
using AwaitTimeout = bool (*)(absl::Mutex*, const absl::Condition&,
                              absl::Duration);
using AwaitDeadline = bool (*)(absl::Mutex*, const absl::Condition&,
                               absl::Time);

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const Plain real = Real<Plain>("5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() {
  static const Plain real = Real<Plain>("5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  static const Try real = Real<Try>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static const Try real = Real<Try>("5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  static const Plain real = Real<Plain>("5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  static const Plain real = Real<Plain>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

#if ABSL_LTS_RELEASE_VERSION > 20220623
// Newer abseil (Debian 13's 20240722) defines Await*, LockWhen* and
// ReaderLockWhen* inline in the header, each a call to one of two private
// members out of line: those are what the shim wraps there.
bool Mutex::AwaitCommon(const Condition& cond,
                        synchronization_internal::KernelTimeout t) {
  using Function = bool (*)(Mutex*, const Condition&,
                            synchronization_internal::KernelTimeout);
  static const Function real = Real<Function>(
      "5Mutex11AwaitCommonERKNS0_9ConditionENS0_24synchronization_internal13"
      "KernelTimeoutE");
  WrappedCondition wrapped{&cond, this};
  __tsan_release(this);
  const bool result = real(this, Condition(&EvalWrapped, &wrapped), t);
  __tsan_acquire(this);
  return result;
}

bool Mutex::LockWhenCommon(const Condition& cond,
                           synchronization_internal::KernelTimeout t,
                           bool write) {
  using Function = bool (*)(Mutex*, const Condition&,
                            synchronization_internal::KernelTimeout, bool);
  static const Function real = Real<Function>(
      "5Mutex14LockWhenCommonERKNS0_9ConditionENS0_24synchronization_internal"
      "13KernelTimeoutEb");
  WrappedCondition wrapped{&cond, this};
  const bool result = real(this, Condition(&EvalWrapped, &wrapped), t, write);
  __tsan_acquire(this);
  return result;
}
#else
void Mutex::Await(const Condition& cond) {
  static const ::Await real = Real< ::Await>("5Mutex5AwaitERKNS0_9ConditionE");
  WrappedCondition wrapped{&cond, this};
  __tsan_release(this);
  real(this, Condition(&EvalWrapped, &wrapped));
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const AwaitTimeout real = Real<AwaitTimeout>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  WrappedCondition wrapped{&cond, this};
  __tsan_release(this);
  const bool result = real(this, Condition(&EvalWrapped, &wrapped), timeout);
  __tsan_acquire(this);
  return result;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const AwaitDeadline real = Real<AwaitDeadline>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  WrappedCondition wrapped{&cond, this};
  __tsan_release(this);
  const bool result = real(this, Condition(&EvalWrapped, &wrapped), deadline);
  __tsan_acquire(this);
  return result;
}

void Mutex::LockWhen(const Condition& cond) {
  static const ::Await real =
      Real< ::Await>("5Mutex8LockWhenERKNS0_9ConditionE");
  WrappedCondition wrapped{&cond, this};
  real(this, Condition(&EvalWrapped, &wrapped));
  __tsan_acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const AwaitTimeout real = Real<AwaitTimeout>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  WrappedCondition wrapped{&cond, this};
  const bool result = real(this, Condition(&EvalWrapped, &wrapped), timeout);
  __tsan_acquire(this);
  return result;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const AwaitDeadline real = Real<AwaitDeadline>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  WrappedCondition wrapped{&cond, this};
  const bool result = real(this, Condition(&EvalWrapped, &wrapped), deadline);
  __tsan_acquire(this);
  return result;
}

#endif  // ABSL_LTS_RELEASE_VERSION > 20220623

ABSL_NAMESPACE_END
}  // namespace absl
