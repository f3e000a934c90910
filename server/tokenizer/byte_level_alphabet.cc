#include "server/tokenizer/byte_level_alphabet.h"

namespace favor::tokenizer {
namespace {

bool IsPrintableLatin1(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

std::array<char32_t, 256> MakeAlphabet() {
  std::array<char32_t, 256> alphabet{};
  char32_t next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    alphabet[byte] = IsPrintableLatin1(byte) ? static_cast<char32_t>(byte)
                                             : next++;
  }
  return alphabet;
}

}  // namespace

const std::array<char32_t, 256>& ByteLevelAlphabet() {
  static const std::array<char32_t, 256> alphabet = MakeAlphabet();
  return alphabet;
}

}  // namespace favor::tokenizer
