// What identifies the contents of a model folder, for reloading
// (docs/models.md, Versions): a revision computed from the files' bytes,
// and a cheap signature (names, sizes, modification times) that tells a
// poll whether the folder may have changed since it was last read.
//
// A folder's files are its regular, non-hidden files, recursively, sorted
// by relative path; the revision covers their paths and contents, so two
// replicas with the same files report the same revision whatever their
// modification times. LibTorch-free.
#ifndef FAVOR_SERVER_MODEL_MODEL_FINGERPRINT_H_
#define FAVOR_SERVER_MODEL_MODEL_FINGERPRINT_H_

#include <string>

#include "absl/status/statusor.h"

namespace favor::model {

// 16 hex digits: a 64-bit fingerprint of the folder's file paths and
// bytes. Not cryptographic: it names revisions, it does not authenticate
// them. Reads every file once (about 1 GB/s). NOT_FOUND or
// INVALID_ARGUMENT naming the file when one cannot be read.
absl::StatusOr<std::string> FolderRevision(const std::string& folder);

// The files' relative paths, sizes and modification times (nanoseconds),
// one line each; equal signatures mean that nothing visible to a stat
// changed. Empty when the folder cannot be listed.
std::string FolderSignature(const std::string& folder);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_FINGERPRINT_H_
