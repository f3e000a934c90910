#include "server/model/tools/inspect.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/status_macros.h"
#include "server/model/model_config.h"
#include "server/model/model_tokenizer.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"

namespace favor::model {
namespace {

// A tensor name as it is when it is printable ASCII, else C-escaped in
// quotes: a file's names must not write control sequences or lines of their
// own to a terminal.
std::string PrintableName(const std::string& name) {
  const bool printable = std::all_of(
      name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  return printable ? name : absl::StrCat("\"", absl::CHexEscape(name), "\"");
}

}  // namespace

void PrintFormat(const ModelFolder& folder) {
  if (folder.format == FolderFormat::kFavor) {
    std::printf("format: Favor's own config.json\n");
    return;
  }
  std::printf("format: Hugging Face folder, architecture %s\n",
              folder.architecture.c_str());
  std::printf("overlay (favor.json): %s\n",
              folder.overlay_fields.empty()
                  ? "none"
                  : absl::StrJoin(folder.overlay_fields, ", ").c_str());
}

absl::Status Inspect(const std::string& directory) {
  ASSIGN_OR_RETURN(const ModelFolder folder, ReadModelFolder(directory));
  const ModelConfig& config = folder.config;
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                   SafetensorsFile::Open(directory + "/model.safetensors"));
  std::printf("model %s\n", directory.c_str());
  PrintFormat(folder);
  std::printf("config (as Favor runs it):\n%s",
              ModelConfigToJson(config).c_str());
  int64_t parameters = 0;
  std::printf("model.safetensors: %zu tensors\n", file->num_tensors());
  for (const std::string& name : file->TensorNames()) {
    const TensorView view = *file->Get(name);
    parameters += view.num_elements();
    std::printf("  %-56s %-4s %s\n", PrintableName(name).c_str(),
                std::string(DTypeName(view.dtype)).c_str(),
                ShapeToString(view.shape).c_str());
  }
  std::printf("parameters: %" PRId64 "\n", parameters);
  ASSIGN_OR_RETURN(const WeightNaming naming,
                   PrepareWeights(folder, file.get()));
  RETURN_IF_ERROR(
      CheckTensors(*file, ExpectedWeights(config, naming), naming.ignore));
  std::printf("weights: every tensor matches the config\n");
  ASSIGN_OR_RETURN(const auto tokenizer, LoadModelTokenizer(directory, config));
  if (tokenizer == nullptr) {
    std::printf("tokenizer: none (token ids only)\n");
  } else {
    std::printf("tokenizer: %s, %s, %zu ids\n", config.tokenizer.file.c_str(),
                std::string(tokenizer->kind()).c_str(),
                tokenizer->vocab_size());
  }
  return absl::OkStatus();
}

}  // namespace favor::model
