// The one door to Debian's libsentencepiece, which lives in a module of its
// own (libfavor_sentencepiece.so) that sentencepiece_module.h opens at run
// time. Two reasons:
//  - libsentencepiece.so.0 carries its own copy of protobuf-lite 3.14 and
//    exports its symbols. In a process that also loads Debian's
//    libprotobuf.so.32 (3.21: gRPC, LibTorch), whichever copy the dynamic
//    linker sees first serves both, and the other's code aborts at start-up
//    ("compiled against version 3.14.0 of the Protocol Buffer runtime") or
//    crashes. The module is opened with RTLD_LOCAL | RTLD_DEEPBIND, so that
//    libsentencepiece binds to its own protobuf and nothing else sees it.
//  - its sentencepiece_processor.h declares `namespace absl { using
//    std::string_view; }`, which clashes with abseil's absl::string_view:
//    the module's one file includes no abseil header, and the tokenizer
//    talks to it through this std-only interface.
#ifndef FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_BRIDGE_H_
#define FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_BRIDGE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace favor::tokenizer::spm_bridge {

struct Piece {
  int id = 0;
  // Input bytes [begin, end) of the piece, as SentencePiece aligns them.
  uint32_t begin = 0;
  uint32_t end = 0;
};

// A loaded SentencePiece model. Abstract, so that the tokenizer calls the
// module's code through the vtable and links none of its symbols.
class Processor {
 public:
  virtual ~Processor() = default;

  // Encodes `text` (valid UTF-8); false with *error set on failure.
  // Thread-safe: SentencePieceProcessor::Encode is const.
  virtual bool Encode(std::string_view text, std::vector<Piece>* pieces,
                      std::string* error) const = 0;

  virtual int size() const = 0;
  virtual const std::string& IdToPiece(int id) const = 0;
  // -1 when `piece` is not in the vocabulary.
  virtual int PieceToId(std::string_view piece) const = 0;
  // -1 when the model has no such token.
  virtual int unk_id() const = 0;
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  virtual bool IsUnknown(int id) const = 0;
  virtual bool IsControl(int id) const = 0;
};

// The module's entry point, found with dlsym under kLoadSymbol: loads a
// serialized ModelProto (a .model file's bytes). nullptr, with *error set,
// when the bytes are not a usable model. The caller owns the result.
using LoadFunction = Processor* (*)(const std::string& serialized,
                                    std::string* error);
inline constexpr char kLoadSymbol[] = "favor_sentencepiece_load";

}  // namespace favor::tokenizer::spm_bridge

#endif  // FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_BRIDGE_H_
