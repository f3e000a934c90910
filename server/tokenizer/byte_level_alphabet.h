// GPT-2's byte-to-character mapping (Hugging Face's pre_tokenizers/
// byte_level.rs, bytes_char): byte-level BPE vocabularies spell every byte
// as one printable character, the printable Latin-1 bytes as themselves and
// the rest as U+0100 + n in byte order, so that a space is "Ġ" (U+0120) and
// a newline "Ċ" (U+010A).
#ifndef FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_ALPHABET_H_
#define FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_ALPHABET_H_

#include <array>
#include <cstdint>

namespace favor::tokenizer {

// The character that stands for each byte.
const std::array<char32_t, 256>& ByteLevelAlphabet();

// "Ġ", the space byte's character.
inline constexpr char32_t kByteLevelSpace = 0x120;

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_ALPHABET_H_
