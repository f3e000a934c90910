#include "server/common/json_parse.h"

#include <exception>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

// nlohmann's DOM builder behind a SAX handler that checks the structure as
// the parser walks it: the nesting depth, and the keys of every open object.
// (The callback parser used before rescanned an object's parent at each of
// its ends, quadratic in the number of siblings: an outside audit's 2.4 MB
// safetensors header of 40,000 tensors took 20 s.) Linear in the text.
class CheckedDomBuilder {
 public:
  explicit CheckedDomBuilder(Json& result) : dom_(result) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(Json::number_integer_t value) {
    return dom_.number_integer(value);
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    return dom_.number_unsigned(value);
  }
  bool number_float(Json::number_float_t value, const Json::string_t& text) {
    return dom_.number_float(value, text);
  }
  bool string(Json::string_t& value) { return dom_.string(value); }
  bool binary(Json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t size) {
    Open();
    return dom_.start_object(size);
  }
  bool key(Json::string_t& key) {
    AddKey(key);
    return dom_.key(key);
  }
  bool end_object() {
    open_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t size) {
    Open();
    return dom_.start_array(size);
  }
  bool end_array() {
    open_.pop_back();
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token,
                   const Exception& error) {
    return dom_.parse_error(position, token, error);  // throws
  }

 private:
  // An open object's keys, and the last (the one its value belongs to); an
  // open array has none.
  struct Level {
    std::set<std::string> keys;
    std::string key;
  };

  void Open() {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      throw ParseAbort{
          absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels")};
    }
    open_.emplace_back();
  }

  void AddKey(const std::string& key) {
    Level& level = open_.back();
    if (!level.keys.insert(key).second) {
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
    level.key = key;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<Level> open_;
};

}  // namespace

absl::StatusOr<Json> ParseJsonObject(absl::string_view text,
                                     absl::string_view what) {
  Json value;
  try {
    CheckedDomBuilder builder(value);
    Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const ParseAbort& abort) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", abort.message));
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not valid JSON: ", EscapeBytes(error.what())));
  }
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
