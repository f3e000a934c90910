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

// Tracks the keys of every open object by nesting depth. nlohmann passes the
// number of open containers as `depth`: an object opened at depth d receives
// its keys at depth d + 1.
class StructureChecker {
 public:
  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        Open(depth + 1);
        break;
      case Json::parse_event_t::key:
        AddKey(depth, parsed.get_ref<const std::string&>());
        break;
      default:
        break;
    }
    return true;
  }

 private:
  void Open(int level) {
    if (level > kMaxJsonDepth) {
      throw ParseAbort{
          absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels")};
    }
    const auto size = static_cast<size_t>(level) + 1;
    if (keys_.size() < size) keys_.resize(size);
    if (path_.size() < size) path_.resize(size);
    keys_[level].clear();
    path_[level].clear();
  }

  void AddKey(int level, const std::string& key) {
    const auto index = static_cast<size_t>(level);
    if (!keys_[index].insert(key).second) {
      std::vector<std::string> enclosing;
      for (size_t i = 1; i < index; ++i) {
        if (!path_[i].empty()) enclosing.push_back(Quote(path_[i]));
      }
      throw ParseAbort{absl::StrCat(
          "duplicate key ", Quote(key),
          enclosing.empty()
              ? " at the top level"
              : absl::StrCat(" in ", absl::StrJoin(enclosing, " > ")))};
    }
    path_[index] = key;
  }

  std::vector<std::set<std::string>> keys_;
  std::vector<std::string> path_;
};

}  // namespace

absl::StatusOr<Json> ParseJsonObject(absl::string_view text,
                                     absl::string_view what) {
  StructureChecker checker;
  Json value;
  try {
    value = Json::parse(text.begin(), text.end(), std::ref(checker));
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
