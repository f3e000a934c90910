// CheckTensors: a file's tensors against what a model expects.
#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/json_parse.h"
#include "server/model/safetensors.h"

namespace favor::model {
namespace {

// Longest list of names CheckTensors prints per kind of problem.
constexpr size_t kMaxListedNames = 20;

// "N missing: 'a', 'b', ... and K more"
std::string ListProblems(absl::string_view kind,
                         const std::vector<std::string>& items) {
  const size_t shown = std::min(items.size(), kMaxListedNames);
  std::string text = absl::StrCat(
      items.size(), " ", kind, ": ",
      absl::StrJoin(items.begin(),
                    items.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (items.size() > shown) {
    absl::StrAppend(&text, " ... and ", items.size() - shown, " more");
  }
  return text;
}

}  // namespace

absl::Status CheckTensors(
    const SafetensorsFile& file, absl::Span<const ExpectedTensor> expected,
    const std::function<bool(absl::string_view name)>& ignore) {
  std::map<absl::string_view, const ExpectedTensor*> by_name;
  std::vector<std::string> missing, unexpected, mismatched;
  for (const ExpectedTensor& tensor : expected) {
    by_name.emplace(tensor.name, &tensor);
    absl::StatusOr<TensorView> view = file.Get(tensor.name);
    if (!view.ok()) {
      if (tensor.required) missing.push_back(Quote(tensor.name));
    } else if (view->shape != tensor.shape) {
      mismatched.push_back(absl::StrCat(Quote(tensor.name), " (expected ",
                                        ShapeToString(tensor.shape), ", got ",
                                        ShapeToString(view->shape), ")"));
    } else if (!IsWeightDType(view->dtype)) {
      mismatched.push_back(absl::StrCat(Quote(tensor.name), " (stored as ",
                                        DTypeName(view->dtype),
                                        "; weights are F32, F16 or BF16)"));
    }
  }
  for (const std::string& name : file.TensorNames()) {
    if (by_name.count(name) == 0 && !(ignore && ignore(name))) {
      unexpected.push_back(Quote(name));
    }
  }
  std::vector<std::string> problems;
  if (!missing.empty()) problems.push_back(ListProblems("missing", missing));
  if (!unexpected.empty()) {
    problems.push_back(ListProblems("unexpected", unexpected));
  }
  if (!mismatched.empty()) {
    problems.push_back(
        ListProblems("with the wrong shape or dtype", mismatched));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(file.path(), ": tensors do not match the model config: ",
                   absl::StrJoin(problems, "; ")));
}

}  // namespace favor::model
