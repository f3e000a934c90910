#include "server/tokenizer/bert_normalizer.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

// The normalized text and, per normalized byte, its input span.
struct Normalized {
  std::string text;
  std::vector<std::pair<size_t, size_t>> spans;
};

Normalized Normalize(const BertNormalizer::Options& options,
                     const std::string& in, uint32_t offset = 0) {
  NormalizedString out;
  EXPECT_TRUE(BertNormalizer(options).Normalize(in, offset, &out).ok());
  Normalized result{out.text(), {}};
  for (uint32_t i = 0; i < out.text().size(); ++i) {
    const TokenSpan span = out.SourceSpan(i, i + 1);
    result.spans.emplace_back(span.begin, span.end);
  }
  return result;
}

using Spans = std::vector<std::pair<size_t, size_t>>;

TEST(BertNormalizerTest, LowercasesAndStripsAccentsKeepingSpans) {
  const Normalized n = Normalize({}, "H\xC3\xA9llo");  // "Héllo"
  EXPECT_EQ(n.text, "hello");
  EXPECT_EQ(n.spans, (Spans{{0, 1}, {1, 3}, {3, 4}, {4, 5}, {5, 6}}));
}

TEST(BertNormalizerTest, SpansAreShiftedBySourceOffset) {
  const Normalized n = Normalize({}, "Ab", 100);
  EXPECT_EQ(n.spans, (Spans{{100, 101}, {101, 102}}));
}

TEST(BertNormalizerTest, CleanTextDropsControlsAndMapsWhitespace) {
  const Normalized n = Normalize({}, std::string("a\0b\tc\xEF\xBF\xBD"
                                                 "d\xE2\x80\x8B"
                                                 "e\xE3\x80\x80"
                                                 "f",
                                                 17));
  EXPECT_EQ(n.text, "ab cde f");
  // The space from U+3000 points at its three bytes.
  EXPECT_EQ(n.spans[6], (std::pair<size_t, size_t>{13, 16}));
  BertNormalizer::Options raw;
  raw.clean_text = false;
  EXPECT_EQ(Normalize(raw, std::string("a\0b", 3)).text,
            std::string("a\0b", 3));
}

TEST(BertNormalizerTest, SpacesAroundIdeographsPointAtThem) {
  const Normalized n = Normalize({},
                                 "a\xE4\xB8\xAD"
                                 "b");  // a中b
  EXPECT_EQ(n.text, "a \xE4\xB8\xAD b");
  EXPECT_EQ(n.spans,
            (Spans{{0, 1}, {1, 4}, {1, 4}, {1, 4}, {1, 4}, {1, 4}, {4, 5}}));
  BertNormalizer::Options off;
  off.handle_chinese_chars = false;
  EXPECT_EQ(Normalize(off,
                      "a\xE4\xB8\xAD"
                      "b")
                .text,
            "a\xE4\xB8\xAD"
            "b");
}

TEST(BertNormalizerTest, StripAccentsFollowsLowercaseUnlessSet) {
  BertNormalizer::Options keep_accents;
  keep_accents.strip_accents = false;
  EXPECT_EQ(Normalize(keep_accents, "\xC3\x89").text, "\xC3\xA9");  // É → é
  BertNormalizer::Options cased;
  cased.lowercase = false;
  EXPECT_EQ(Normalize(cased, "\xC3\x89").text,
            "\xC3\x89");  // null: no stripping
  cased.strip_accents = true;
  EXPECT_EQ(Normalize(cased, "\xC3\x89").text, "E");
}

TEST(BertNormalizerTest, DottedCapitalIUnderBothOrders) {
  // Stripped: NFD gives I + U+0307, the mark goes, then i.
  EXPECT_EQ(Normalize({}, "\xC4\xB0").text, "i");
  // Not stripped: the full lowercase mapping, two characters, one span.
  BertNormalizer::Options keep_accents;
  keep_accents.strip_accents = false;
  const Normalized n = Normalize(keep_accents, "\xC4\xB0");
  EXPECT_EQ(n.text, "i\xCC\x87");
  EXPECT_EQ(n.spans, (Spans{{0, 2}, {0, 2}, {0, 2}}));
}

TEST(BertNormalizerTest, HangulDecomposesIntoJamoSharingTheSyllablesSpan) {
  const Normalized n = Normalize({}, "\xED\x95\x9C");  // 한
  EXPECT_EQ(n.text, "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB");
  for (const auto& span : n.spans)
    EXPECT_EQ(span, (std::pair<size_t, size_t>{0, 3}));
}

TEST(BertNormalizerTest, CombiningMarksAreCanonicallyOrdered) {
  // U+1D16D (ccc 226) then U+1D165 (ccc 216): both spacing marks (Mc), so
  // accent stripping keeps them, and NFD puts 216 first.
  BertNormalizer::Options options;
  options.lowercase = false;
  options.strip_accents = true;
  const Normalized n = Normalize(options, "x\xF0\x9D\x85\xAD\xF0\x9D\x85\xA5");
  EXPECT_EQ(n.text, "x\xF0\x9D\x85\xA5\xF0\x9D\x85\xAD");
  EXPECT_EQ(n.spans[1], (std::pair<size_t, size_t>{5, 9}));
  EXPECT_EQ(n.spans[5], (std::pair<size_t, size_t>{1, 5}));
}

TEST(BertNormalizerTest, LoneCombiningMarksDisappearWhenStripping) {
  EXPECT_EQ(Normalize({},
                      "\xCC\x81"
                      "a\xCC\x81\xCC\x81")
                .text,
            "a");
  BertNormalizer::Options keep_accents;
  keep_accents.strip_accents = false;
  EXPECT_EQ(Normalize(keep_accents, "\xCC\x81").text, "\xCC\x81");
}

}  // namespace
}  // namespace favor::tokenizer
