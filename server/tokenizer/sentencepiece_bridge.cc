// The module libfavor_sentencepiece.so (see sentencepiece_bridge.h). No
// abseil header may come before or after sentencepiece_processor.h.
#include "server/tokenizer/sentencepiece_bridge.h"

#include <sentencepiece_processor.h>

#include <exception>
#include <memory>
#include <string>

namespace favor::tokenizer::spm_bridge {
namespace {

class SentencePieceProcessor final : public Processor {
 public:
  bool Load(const std::string& serialized, std::string* error) {
    sentencepiece::util::Status status;
    // Its trie builder (Darts) throws on some hostile vocabularies (a
    // zero-length or out-of-order piece) instead of returning a status.
    try {
      status = processor_.LoadFromSerializedProto(serialized);
    } catch (const std::exception& exception) {
      *error =
          std::string("the model's vocabulary is invalid: ") + exception.what();
      return false;
    }
    if (!status.ok()) {
      *error = status.ToString();
      return false;
    }
    if (size() <= 0) {
      *error = "the model has no pieces";
      return false;
    }
    return true;
  }

  bool Encode(std::string_view text, std::vector<Piece>* pieces,
              std::string* error) const override {
    // The immutable-proto API reports no error of its own; the processor's
    // status is the only failure it can have (a model that did not load).
    const sentencepiece::util::Status status = processor_.status();
    if (!status.ok()) {
      *error = status.ToString();
      return false;
    }
    const sentencepiece::ImmutableSentencePieceText immutable =
        processor_.EncodeAsImmutableProto(text);
    for (const auto& piece : immutable.pieces()) {
      pieces->push_back(
          {static_cast<int>(piece.id()), piece.begin(), piece.end()});
    }
    return true;
  }

  int size() const override { return processor_.GetPieceSize(); }
  const std::string& IdToPiece(int id) const override {
    return processor_.IdToPiece(id);
  }
  int PieceToId(std::string_view piece) const override {
    const int id = processor_.PieceToId(piece);
    return IdToPiece(id) == piece ? id : -1;
  }
  int unk_id() const override { return processor_.unk_id(); }
  int bos_id() const override { return processor_.bos_id(); }
  int eos_id() const override { return processor_.eos_id(); }
  bool IsUnknown(int id) const override { return processor_.IsUnknown(id); }
  bool IsControl(int id) const override { return processor_.IsControl(id); }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace
}  // namespace favor::tokenizer::spm_bridge

// The entry point (spm_bridge::kLoadSymbol); the module exports nothing
// else.
extern "C" __attribute__((visibility("default")))
favor::tokenizer::spm_bridge::Processor*
favor_sentencepiece_load(const std::string& serialized, std::string* error) {
  auto processor =
      std::make_unique<favor::tokenizer::spm_bridge::SentencePieceProcessor>();
  if (!processor->Load(serialized, error)) return nullptr;
  return processor.release();
}
