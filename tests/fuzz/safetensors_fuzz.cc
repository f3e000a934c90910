// Fuzz target: the safetensors reader (server/model/safetensors.h) on
// hostile files. Each input is a whole file: its header is parsed from the
// input's own heap buffer (so ASan sees any read past the end), the views
// it yields must lie inside the data buffer and tile it, and the same bytes
// are then opened as a file (SafetensorsFile::Open, through a memfd), every
// tensor read and the tensors checked against a small expected list.
// The custom mutator keeps the framing (8-byte length, JSON header, data)
// most of the time, so mutations land in the header's JSON and the data
// rather than breaking the length field.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "server/model/safetensors.h"
#include "server/model/safetensors_header.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using favor::model::internal::kLengthFieldBytes;

// What a broken invariant becomes: a crash the fuzzer reports.
void Require(bool condition) {
  if (!condition) std::abort();
}

// Every header entry lies inside the file and the entries tile the data.
void CheckHeader(const favor::model::internal::Header& header, size_t size) {
  Require(header.data_offset >= kLengthFieldBytes &&
          header.data_offset <= size);
  uint64_t next = 0;
  for (const auto& entry : header.entries) {
    Require(entry.begin == next && entry.end >= entry.begin);
    Require(entry.end <= size - header.data_offset);
    next = entry.end;
  }
  Require(next == size - header.data_offset);
}

// A path that names these bytes as a regular file, without a disk.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size)
      : fd_(memfd_create("safetensors", MFD_CLOEXEC)) {
    Require(fd_ >= 0);
    Require(write(fd_, data, size) == static_cast<ssize_t>(size));
  }
  ~MemoryFile() { close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

void OpenAndRead(const uint8_t* data, size_t size) {
  MemoryFile file(data, size);
  auto opened = favor::model::SafetensorsFile::Open(file.path());
  if (!opened.ok()) return;
  uint32_t checksum = 0;
  for (const std::string& name : (*opened)->TensorNames()) {
    auto view = (*opened)->Get(name);
    Require(view.ok());
    Require(static_cast<uint64_t>(view->num_elements()) *
                favor::model::DTypeSize(view->dtype) ==
            view->byte_size);
    for (size_t i = 0; i < view->byte_size; ++i) checksum += view->data[i];
  }
  const favor::model::ExpectedTensor expected[] = {
      {"embeddings.word_embeddings.weight", {16, 8}, true},
      {"pooler.query", {8}, false}};
  (void)favor::model::CheckTensors(**opened, expected);
  (void)checksum;
}

uint64_t ReadLength(const uint8_t* data) {
  uint64_t length = 0;
  std::memcpy(&length, data, sizeof(length));
  return length;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= kLengthFieldBytes) {
    auto header = favor::model::internal::ParseHeader("fuzz", data, size);
    if (header.ok()) CheckHeader(*header, size);
  }
  OpenAndRead(data, size);
  return 0;
}

// Keeps the 8-byte length in step with the header: mutates the header's
// JSON (most often) or the data, then writes the new header length.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  if (size < kLengthFieldBytes || rng() % 8 == 0 ||
      ReadLength(data) > size - kLengthFieldBytes) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  const size_t header_size = ReadLength(data);
  std::string header(reinterpret_cast<const char*>(data) + kLengthFieldBytes,
                     header_size);
  std::string body(
      reinterpret_cast<const char*>(data) + kLengthFieldBytes + header_size,
      size - kLengthFieldBytes - header_size);
  const size_t room = max_size - kLengthFieldBytes;
  if (rng() % 4 != 0 && room > body.size()) {
    header.resize(room - body.size());
    header.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(header.data()),
                                   header_size, header.size()));
  } else if (room > header.size()) {
    const size_t body_size = body.size();
    body.resize(room - header.size());
    body.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(body.data()),
                                 body_size, body.size()));
  }
  const uint64_t length = header.size();
  std::memcpy(data, &length, sizeof(length));
  std::memcpy(data + kLengthFieldBytes, header.data(), header.size());
  std::memcpy(data + kLengthFieldBytes + header.size(), body.data(),
              body.size());
  return kLengthFieldBytes + header.size() + body.size();
}
