#include "server/common/json_parse.h"

#include <exception>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/status_macros.h"

namespace favor {
namespace {

using Json = nlohmann::json;

// Thrown by the parser callback to stop at the first structural problem, and
// caught in ParseJsonObject: it never leaves this file.
struct ParseAbort {
  std::string message;
};

// Printable ASCII stays as is, every other byte becomes \xNN, so a message
// never carries control characters or broken UTF-8 from a file.
std::string EscapeBytes(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      out.push_back(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
    }
  }
  return out;
}

// A DOM builder for nlohmann's SAX parser that checks the structure as the
// parser walks it: the nesting depth, duplicate keys (found by the object's
// own map, so keys are not stored twice) and the number of values. Linear in
// the text. (nlohmann's callback parser rescans an object's parent at each
// of its ends, quadratic in the number of siblings: a 2.4 MB safetensors
// header of 40,000 tensors takes 20 s. A second set of every object's keys
// would take 4 GB for a 250 MB tokenizer.json.)
class CheckedDomBuilder {
 public:
  CheckedDomBuilder(Json& root, const JsonParseOptions& options)
      : root_(root), options_(options) {}

  bool null() { return Add(nullptr) != nullptr; }
  bool boolean(bool value) { return Add(value) != nullptr; }
  bool number_integer(Json::number_integer_t value) {
    return Add(value) != nullptr;
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    return Add(value) != nullptr;
  }
  bool number_float(Json::number_float_t value, const Json::string_t&) {
    return Add(value) != nullptr;
  }
  bool string(Json::string_t& value) { return Add(std::move(value)) != nullptr; }
  bool binary(Json::binary_t& value) {
    return Add(Json::binary(std::move(value))) != nullptr;
  }
  bool start_object(std::size_t) {
    Open(Add(Json::object()));
    return true;
  }
  bool key(Json::string_t& key) {
    Level& level = open_.back();
    auto [it, inserted] =
        level.value->get_ref<Json::object_t&>().try_emplace(key);
    if (!inserted) Duplicate(key);
    level.key = key;
    level.member = &it->second;
    return true;
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    Open(Add(Json::array()));
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& error) {
    throw error;
  }

 private:
  // An open container. An object's `member` is the value its last key
  // names, which the next value fills; an array's values go to its end.
  // Pointers into the tree stay valid while the container is open: map
  // nodes never move, and an array grows only while no child of it is open.
  struct Level {
    Json* value = nullptr;
    Json* member = nullptr;
    std::string key;
  };

  Json* Add(Json value) {
    if (++values_ > options_.max_values) {
      throw ParseAbort{absl::StrCat(
          "more than ", options_.max_values, " JSON values",
          options_.max_values_reason.empty() ? "" : ": ",
          options_.max_values_reason)};
    }
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Level& level = open_.back();
    if (level.value->is_array()) {
      auto& array = level.value->get_ref<Json::array_t&>();
      array.push_back(std::move(value));
      return &array.back();
    }
    *level.member = std::move(value);
    return level.member;
  }

  void Open(Json* value) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      throw ParseAbort{
          absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels")};
    }
    open_.push_back(Level{value, nullptr, {}});
  }

  [[noreturn]] void Duplicate(const std::string& key) const {
    std::vector<std::string> enclosing;
    for (size_t i = 0; i + 1 < open_.size(); ++i) {
      if (!open_[i].key.empty()) enclosing.push_back(Quote(open_[i].key));
    }
    throw ParseAbort{absl::StrCat(
        "duplicate key ", Quote(key),
        enclosing.empty()
            ? " at the top level"
            : absl::StrCat(" in ", absl::StrJoin(enclosing, " > ")))};
  }

  Json& root_;
  const JsonParseOptions& options_;
  size_t values_ = 0;
  std::vector<Level> open_;
};

}  // namespace

absl::StatusOr<Json> ParseJsonValue(absl::string_view text,
                                    absl::string_view what,
                                    const JsonParseOptions& options) {
  Json value;
  try {
    CheckedDomBuilder builder(value, options);
    Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const ParseAbort& abort) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", abort.message));
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not valid JSON: ", EscapeBytes(error.what())));
  }
  return value;
}

absl::StatusOr<Json> ParseJsonObject(absl::string_view text,
                                     absl::string_view what,
                                     const JsonParseOptions& options) {
  ASSIGN_OR_RETURN(Json value, ParseJsonValue(text, what, options));
  if (!value.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": must be a JSON object, got ", DescribeJson(value)));
  }
  return value;
}

std::string Quote(absl::string_view text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  return absl::StrCat("'", EscapeBytes(text.substr(0, max_bytes)),
                      cut ? "...'" : "'");
}

std::string DescribeJson(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "boolean true" : "boolean false";
    case Json::value_t::string:
      return absl::StrCat("string ", Quote(value.get_ref<const std::string&>(),
                                           /*max_bytes=*/40));
    case Json::value_t::number_integer:
      return absl::StrCat("number ", value.get<int64_t>());
    case Json::value_t::number_unsigned:
      return absl::StrCat("number ", value.get<uint64_t>());
    case Json::value_t::number_float:
      return absl::StrCat("number ", value.get<double>());
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    default:
      return "unsupported JSON value";
  }
}

}  // namespace favor
