#include "server/tokenizer/sentencepiece_module.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace favor::tokenizer {
namespace {

// Candidate paths of the module, in the order they are tried.
std::vector<std::string> ModuleCandidates() {
  std::vector<std::string> candidates;
  std::error_code error;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path dir = exe.parent_path();
    candidates.push_back((dir / kSentencePieceModuleName).string());
    candidates.push_back(
        (dir.parent_path() / "lib" / "favor" / kSentencePieceModuleName)
            .string());
  }
#ifdef FAVOR_SENTENCEPIECE_BUILD_MODULE
  candidates.push_back(FAVOR_SENTENCEPIECE_BUILD_MODULE);
#endif
  candidates.push_back(kSentencePieceModuleName);
  return candidates;
}

// The module's entry point, or why there is none.
absl::StatusOr<spm_bridge::LoadFunction> OpenModule() {
  std::vector<std::string> tried;
  for (const std::string& candidate : ModuleCandidates()) {
    const bool is_path = candidate.find('/') != std::string::npos;
    if (is_path && !std::filesystem::exists(candidate)) continue;
    // Never closed: the processors it makes live as long as their models.
    void* handle =
        dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) {
      tried.push_back(absl::StrCat(candidate, " (", dlerror(), ")"));
      continue;
    }
    void* symbol = dlsym(handle, spm_bridge::kLoadSymbol);
    if (symbol != nullptr) {
      return reinterpret_cast<spm_bridge::LoadFunction>(symbol);
    }
    tried.push_back(
        absl::StrCat(candidate, " (no ", spm_bridge::kLoadSymbol, ")"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "SentencePiece needs the module ", kSentencePieceModuleName,
      ", which was not found or did not open: tried beside the executable, "
      "in ../lib/favor/ and in the build tree; ",
      tried.empty() ? "none of those files exists"
                    : absl::StrJoin(tried, "; ")));
}

}  // namespace

absl::StatusOr<std::unique_ptr<spm_bridge::Processor>>
LoadSentencePieceProcessor(const std::string& serialized) {
  // Opened once (thread-safe static initialisation), failure included.
  static const auto* const kLoad =
      new absl::StatusOr<spm_bridge::LoadFunction>(OpenModule());
  if (!kLoad->ok()) return kLoad->status();
  std::string error;
  std::unique_ptr<spm_bridge::Processor> processor(
      (**kLoad)(serialized, &error));
  if (processor == nullptr) return absl::InvalidArgumentError(error);
  return processor;
}

}  // namespace favor::tokenizer
