#include "utf8.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/common.h"

namespace favor::client_internal {

absl::Status CheckUtf8(absl::string_view text, absl::string_view what) {
  // The very test protobuf applies to a proto3 string when it parses one
  // (exported by libprotobuf 3.21, the Debian version the project builds
  // with): the length of the longest valid prefix.
  const int valid = google::protobuf::internal::UTF8SpnStructurallyValid(
      google::protobuf::StringPiece(text.data(), text.size()));
  if (static_cast<size_t>(valid) == text.size()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " is not valid UTF-8: invalid byte 0x",
      absl::Hex(static_cast<uint8_t>(text[static_cast<size_t>(valid)]),
                absl::kZeroPad2),
      " at byte offset ", valid));
}

absl::Status CheckInputTexts(absl::Span<const EmbedInput> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::Status status =
        CheckUtf8(inputs[i].text, absl::StrCat("inputs[", i, "].text"));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status CheckTexts(absl::Span<const std::string> texts) {
  for (size_t i = 0; i < texts.size(); ++i) {
    absl::Status status = CheckUtf8(texts[i], absl::StrCat("texts[", i, "]"));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace favor::client_internal
