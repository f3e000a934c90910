// What identifies the contents of a model folder, for reloading
// (docs/models.md, Versions): a revision computed from the bytes of the
// files a load reads, and a cheap signature (names, sizes, modification
// times) that tells a poll whether the folder may have changed since it was
// last read.
//
// The revision covers config.json, model.safetensors and the tokenizer file
// config.json names, by name and contents, so two replicas with the same
// files report the same revision whatever their modification times, and
// what else the folder holds (a README, a pytorch_model.bin or an ONNX
// export beside the weights) is neither read nor part of it. The signature
// covers every regular, non-hidden file, recursively. LibTorch-free.
#ifndef FAVOR_SERVER_MODEL_MODEL_FINGERPRINT_H_
#define FAVOR_SERVER_MODEL_MODEL_FINGERPRINT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace favor::model {

// The files a load of `folder` reads, sorted: config.json,
// model.safetensors and config.json's tokenizer.file when it names one.
// NOT_FOUND when `folder` is not a folder; config.json's own errors
// (LoadModelConfig) when it cannot be read or is not valid.
absl::StatusOr<std::vector<std::string>> FilesLoadedFrom(
    const std::string& folder);

// 16 hex digits: a 64-bit fingerprint of the names and bytes of
// FilesLoadedFrom(folder); a file that is missing or not a regular file
// counts by its name alone (the load reports it). Not cryptographic: it
// names revisions, it does not authenticate them. Reads each file once
// (about 1 GB/s). FilesLoadedFrom's errors, or INVALID_ARGUMENT naming the
// file when one cannot be read.
absl::StatusOr<std::string> FolderRevision(const std::string& folder);

// The files' relative paths, sizes and modification times (nanoseconds),
// one line each; equal signatures mean that nothing visible to a stat
// changed. Empty when the folder cannot be listed.
std::string FolderSignature(const std::string& folder);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_FINGERPRINT_H_
