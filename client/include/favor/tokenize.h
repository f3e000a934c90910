// The Tokenize call's plain types: texts in, the model's tokens out (ids,
// token strings and byte offsets), exactly as Embed would read them. They
// mirror favor.v1.TokenizeRequest / TokenizeResponse
// (proto/favor/v1/favor.proto, whose comments are the reference for each
// field) without protobuf.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_TOKENIZE_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_TOKENIZE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "favor/embed.h"

namespace favor {

// Everything of a Tokenize call but its texts.
struct TokenizeOptions {
  // Name of the model; empty means the server's default model.
  std::string model;
  // Leave out the special tokens the model adds ([CLS], [SEP]). By default
  // the tokens are exactly those Embed reads.
  bool without_special_tokens = false;
};

// The tokens of one text, as parallel vectors (one entry per token).
struct TokenizedText {
  // Token ids; with the special tokens, EmbedInput(ids) embeds as the text
  // does.
  TokenIds ids;
  // Tokens as the vocabulary spells them ("##ing", "▁the", "[CLS]").
  std::vector<std::string> tokens;
  // Byte offsets in the text: [begin, end) of each token; special tokens the
  // tokenizer added have an empty range (begin == end).
  std::vector<uint32_t> begin_offsets;
  std::vector<uint32_t> end_offsets;
  // Whether each token is a special token the tokenizer added.
  std::vector<bool> special;
};

// The answer to one Tokenize call.
struct TokenizeResult {
  // One per text, in order.
  std::vector<TokenizedText> texts;
  // The model whose tokenizer was used.
  std::string model;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_TOKENIZE_H_
