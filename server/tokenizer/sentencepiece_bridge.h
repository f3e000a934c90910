// The one door to Debian's libsentencepiece. Its sentencepiece_processor.h
// declares `namespace absl { using std::string_view; }`, which clashes with
// abseil's own absl::string_view (Debian's abseil is built with its own
// string_view class): the file that includes it, sentencepiece_bridge.cc,
// includes no abseil header, and the module talks to it through this
// std-only interface.
#ifndef FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_BRIDGE_H_
#define FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_BRIDGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}  // namespace sentencepiece

namespace favor::tokenizer::spm_bridge {

struct Piece {
  int id = 0;
  // Input bytes [begin, end) of the piece, as SentencePiece aligns them.
  uint32_t begin = 0;
  uint32_t end = 0;
};

class Processor {
 public:
  // Loads a serialized ModelProto (a .model file's bytes). nullptr, with
  // *error set, when the bytes are not a usable model.
  static std::unique_ptr<Processor> Load(const std::string& serialized,
                                         std::string* error);
  ~Processor();

  // Encodes `text` (valid UTF-8); false with *error set on failure.
  // Thread-safe: SentencePieceProcessor::Encode is const.
  bool Encode(std::string_view text, std::vector<Piece>* pieces,
              std::string* error) const;

  int size() const;
  const std::string& IdToPiece(int id) const;
  // -1 when `piece` is not in the vocabulary.
  int PieceToId(std::string_view piece) const;
  // -1 when the model has no such token.
  int unk_id() const;
  int bos_id() const;
  int eos_id() const;
  bool IsUnknown(int id) const;
  bool IsControl(int id) const;

 private:
  Processor();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace favor::tokenizer::spm_bridge

#endif  // FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_BRIDGE_H_
