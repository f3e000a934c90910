#include "tests/fuzz/proto_mutator.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"

// libFuzzer's own mutation of raw bytes.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace favor::fuzz {
namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

// Strings and bytes grow by at most this much per mutation.
constexpr size_t kMaxStringGrowth = 64;

template <typename T>
T Pick(std::minstd_rand* rng, std::initializer_list<T> values) {
  return values.begin()[(*rng)() % values.size()];
}

// Two's complement wrap-around, without signed overflow.
int64_t Wrap(uint64_t value) { return static_cast<int64_t>(value); }

int64_t NewInteger(int64_t old, std::minstd_rand* rng) {
  switch ((*rng)() % 6) {
    case 0:
      return Pick<int64_t>(rng, {0, 1, -1, 2, 3, 8, 64, 255, 256, 1024, 4096,
                                 65536, int64_t{1} << 31, int64_t{1} << 32});
    case 1:
      return Wrap(static_cast<uint64_t>(old) + (*rng)() % 9 - 4);
    case 2:
      return Pick<int64_t>(rng, {std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int32_t>::max(),
                                 std::numeric_limits<int32_t>::min()});
    case 3:
      return Wrap(static_cast<uint64_t>(old) * 2);
    case 4:
      return Wrap(0 - static_cast<uint64_t>(old));
    default:
      return static_cast<int64_t>((*rng)() % 512);
  }
}

double NewDouble(std::minstd_rand* rng) {
  return Pick<double>(rng, {0.0, 1.0, -1.0, 0.5, 1e-30, 1e30,
                            std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::infinity(),
                            static_cast<double>((*rng)() % 1000) / 7.0});
}

std::string NewString(std::string value, std::minstd_rand* rng) {
  if ((*rng)() % 8 == 0) {  // a new length: shapes and byte counts meet
    value.resize((*rng)() % 2 == 0 ? value.size() * 2 : (*rng)() % 1024);
    return value;
  }
  const size_t size = value.size();
  value.resize(size + kMaxStringGrowth);
  value.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(value.data()), size,
                                value.size()));
  return value;
}

// A new value for the singular scalar `field` of `message`.
void MutateScalar(pb::Message* message, const FD* field,
                  std::minstd_rand* rng) {
  const pb::Reflection* r = message->GetReflection();
  switch (field->cpp_type()) {
    case FD::CPPTYPE_INT32:
      return r->SetInt32(
          message, field,
          static_cast<int32_t>(NewInteger(r->GetInt32(*message, field), rng)));
    case FD::CPPTYPE_INT64:
      return r->SetInt64(message, field,
                         NewInteger(r->GetInt64(*message, field), rng));
    case FD::CPPTYPE_UINT32:
      return r->SetUInt32(message, field,
                          static_cast<uint32_t>(
                              NewInteger(r->GetUInt32(*message, field), rng)));
    case FD::CPPTYPE_UINT64:
      return r->SetUInt64(message, field,
                          static_cast<uint64_t>(
                              NewInteger(r->GetUInt64(*message, field), rng)));
    case FD::CPPTYPE_DOUBLE:
      return r->SetDouble(message, field, NewDouble(rng));
    case FD::CPPTYPE_FLOAT:
      return r->SetFloat(message, field, static_cast<float>(NewDouble(rng)));
    case FD::CPPTYPE_BOOL:
      return r->SetBool(message, field, !r->GetBool(*message, field));
    case FD::CPPTYPE_ENUM: {
      // Proto3 enums are open: values past the last name are valid wire data.
      const int count = field->enum_type()->value_count();
      return r->SetEnumValue(message, field,
                             static_cast<int>((*rng)() % (count + 2)) - 1);
    }
    case FD::CPPTYPE_STRING:
      return r->SetString(message, field,
                          NewString(r->GetString(*message, field), rng));
    case FD::CPPTYPE_MESSAGE:
      return;
  }
}

// Appends an element to the repeated `field`: a copy of an existing one
// half the time, else a default or fresh value.
void AddElement(pb::Message* message, const FD* field, std::minstd_rand* rng) {
  const pb::Reflection* r = message->GetReflection();
  const int size = r->FieldSize(*message, field);
  if (field->cpp_type() == FD::CPPTYPE_MESSAGE) {
    pb::Message* added = r->AddMessage(message, field);
    if (size > 0 && (*rng)() % 2 == 0) {
      added->CopyFrom(r->GetRepeatedMessage(*message, field, (*rng)() % size));
    }
    return;
  }
  switch (field->cpp_type()) {
    case FD::CPPTYPE_INT32:
      return r->AddInt32(message, field,
                         static_cast<int32_t>(NewInteger(size, rng)));
    case FD::CPPTYPE_INT64:
      return r->AddInt64(message, field, NewInteger(size, rng));
    case FD::CPPTYPE_UINT32:
      return r->AddUInt32(message, field,
                          static_cast<uint32_t>(NewInteger(size, rng)));
    case FD::CPPTYPE_UINT64:
      return r->AddUInt64(message, field,
                          static_cast<uint64_t>(NewInteger(size, rng)));
    case FD::CPPTYPE_DOUBLE:
      return r->AddDouble(message, field, NewDouble(rng));
    case FD::CPPTYPE_FLOAT:
      return r->AddFloat(message, field, static_cast<float>(NewDouble(rng)));
    case FD::CPPTYPE_BOOL:
      return r->AddBool(message, field, (*rng)() % 2 == 0);
    case FD::CPPTYPE_ENUM:
      return r->AddEnumValue(message, field, static_cast<int>((*rng)() % 4));
    case FD::CPPTYPE_STRING:
      return r->AddString(message, field, NewString("", rng));
    case FD::CPPTYPE_MESSAGE:
      return;
  }
}

void MutateRepeated(pb::Message* message, const FD* field,
                    std::minstd_rand* rng) {
  const pb::Reflection* r = message->GetReflection();
  const int size = r->FieldSize(*message, field);
  const unsigned action = (*rng)() % 4;
  if (size == 0 || action == 0) return AddElement(message, field, rng);
  if (action == 1) return r->RemoveLast(message, field);
  const int index = static_cast<int>((*rng)() % size);
  if (field->cpp_type() == FD::CPPTYPE_MESSAGE) {
    return MutateMessage(r->MutableRepeatedMessage(message, field, index), rng);
  }
  // A scalar element: swap it to the end, mutate it there by re-adding.
  r->SwapElements(message, field, index, size - 1);
  r->RemoveLast(message, field);
  AddElement(message, field, rng);
}

// The messages of the tree under `message`, itself included.
void CollectMessages(pb::Message* message, std::vector<pb::Message*>* out) {
  out->push_back(message);
  const pb::Reflection* r = message->GetReflection();
  std::vector<const FD*> fields;
  r->ListFields(*message, &fields);
  for (const FD* field : fields) {
    if (field->cpp_type() != FD::CPPTYPE_MESSAGE) continue;
    if (!field->is_repeated()) {
      CollectMessages(r->MutableMessage(message, field), out);
      continue;
    }
    for (int i = 0; i < r->FieldSize(*message, field); ++i) {
      CollectMessages(r->MutableRepeatedMessage(message, field, i), out);
    }
  }
}

}  // namespace

void MutateMessage(pb::Message* root, std::minstd_rand* rng) {
  std::vector<pb::Message*> messages;
  CollectMessages(root, &messages);
  pb::Message* message = messages[(*rng)() % messages.size()];
  const pb::Descriptor* type = message->GetDescriptor();
  if (type->field_count() == 0) return;
  const FD* field = type->field((*rng)() % type->field_count());
  const pb::Reflection* r = message->GetReflection();
  if (field->is_repeated()) return MutateRepeated(message, field, rng);
  if (field->cpp_type() != FD::CPPTYPE_MESSAGE) {
    return MutateScalar(message, field, rng);
  }
  if (r->HasField(*message, field) && (*rng)() % 8 == 0) {
    return r->ClearField(message, field);
  }
  MutateMessage(r->MutableMessage(message, field), rng);
}

size_t MutateSerializedMessage(const pb::Message& prototype, uint8_t* data,
                               size_t size, size_t max_size,
                               unsigned int seed) {
  std::minstd_rand rng(seed);
  std::unique_ptr<pb::Message> message(prototype.New());
  if (rng() % 8 == 0 ||
      !message->ParseFromArray(data, static_cast<int>(size))) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  MutateMessage(message.get(), &rng);
  const std::string bytes = message->SerializeAsString();
  if (bytes.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace favor::fuzz
