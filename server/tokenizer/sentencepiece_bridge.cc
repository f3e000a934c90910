// No abseil header may come before or after this one: see the header.
#include "server/tokenizer/sentencepiece_bridge.h"

#include <sentencepiece_processor.h>

namespace favor::tokenizer::spm_bridge {

Processor::Processor()
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

Processor::~Processor() = default;

std::unique_ptr<Processor> Processor::Load(const std::string& serialized,
                                           std::string* error) {
  std::unique_ptr<Processor> processor(new Processor());
  const sentencepiece::util::Status status =
      processor->processor_->LoadFromSerializedProto(serialized);
  if (!status.ok()) {
    *error = status.ToString();
    return nullptr;
  }
  if (processor->size() <= 0) {
    *error = "the model has no pieces";
    return nullptr;
  }
  return processor;
}

bool Processor::Encode(std::string_view text, std::vector<Piece>* pieces,
                       std::string* error) const {
  // The immutable-proto API reports no error of its own; the processor's
  // status is the only failure it can have (a model that did not load).
  const sentencepiece::util::Status status = processor_->status();
  if (!status.ok()) {
    *error = status.ToString();
    return false;
  }
  const sentencepiece::ImmutableSentencePieceText immutable =
      processor_->EncodeAsImmutableProto(text);
  for (const auto& piece : immutable.pieces()) {
    pieces->push_back(
        {static_cast<int>(piece.id()), piece.begin(), piece.end()});
  }
  return true;
}

int Processor::size() const { return processor_->GetPieceSize(); }

const std::string& Processor::IdToPiece(int id) const {
  return processor_->IdToPiece(id);
}

int Processor::PieceToId(std::string_view piece) const {
  const int id = processor_->PieceToId(piece);
  return IdToPiece(id) == piece ? id : -1;
}

int Processor::unk_id() const { return processor_->unk_id(); }
int Processor::bos_id() const { return processor_->bos_id(); }
int Processor::eos_id() const { return processor_->eos_id(); }
bool Processor::IsUnknown(int id) const { return processor_->IsUnknown(id); }
bool Processor::IsControl(int id) const { return processor_->IsControl(id); }

}  // namespace favor::tokenizer::spm_bridge
