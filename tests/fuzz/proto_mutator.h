// A structure-aware mutator for protobuf messages, for the fuzz targets
// that take a request as its serialized bytes (libprotobuf-mutator is not
// in Debian bookworm): parse the bytes, change one field through protobuf's
// reflection (a scalar's value, a string's bytes, an element added to or
// dropped from a repeated field, a sub-message set or cleared), serialize
// again. Inputs stay parseable, so the fuzzer spends its time in the
// validation behind the parser; one mutation in eight is libFuzzer's own,
// on the raw bytes, so the parser is fuzzed too.
#ifndef FAVOR_TESTS_FUZZ_PROTO_MUTATOR_H_
#define FAVOR_TESTS_FUZZ_PROTO_MUTATOR_H_

#include <cstddef>
#include <cstdint>
#include <random>

#include "google/protobuf/message.h"

namespace favor::fuzz {

// Changes one field of `message` or of a message nested in it.
void MutateMessage(google::protobuf::Message* message, std::minstd_rand* rng);

// The body of LLVMFuzzerCustomMutator for messages of `prototype`'s type:
// mutates the `size` bytes at `data` (at most `max_size`) in place and
// returns their new size.
size_t MutateSerializedMessage(const google::protobuf::Message& prototype,
                               uint8_t* data, size_t size, size_t max_size,
                               unsigned int seed);

}  // namespace favor::fuzz

// Defines LLVMFuzzerCustomMutator for one message type, in the target's .cc,
// and an LLVMFuzzerInitialize that silences protobuf's log (each string that
// is not UTF-8 would print a line).
#define FAVOR_FUZZ_PROTO_MUTATOR(MessageType)                           \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                  \
    google::protobuf::SetLogHandler(nullptr);                           \
    return 0;                                                           \
  }                                                                     \
  extern "C" size_t LLVMFuzzerCustomMutator(                            \
      uint8_t* data, size_t size, size_t max_size, unsigned int seed) { \
    return ::favor::fuzz::MutateSerializedMessage(                      \
        MessageType::default_instance(), data, size, max_size, seed);   \
  }

#endif  // FAVOR_TESTS_FUZZ_PROTO_MUTATOR_H_
