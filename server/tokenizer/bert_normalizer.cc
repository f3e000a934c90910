#include "server/tokenizer/bert_normalizer.h"

#include <algorithm>
#include <vector>

#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

// Writes characters to a NormalizedString, lowercasing them if asked, and
// (when accents are stripped, which means NFD) puts each run of combining
// characters in canonical order first, as NFD requires. Nonspacing marks
// are dropped before they get here; sorting the survivors of a run gives the
// same order as sorting the whole run and dropping them after, because the
// sort is stable. Runs are sorted with a stable sort, never an insertion
// sort, so a long run of marks stays O(n log n).
class CharWriter {
 public:
  CharWriter(NormalizedString* out, bool lowercase, bool canonical_order)
      : out_(out), lowercase_(lowercase), canonical_order_(canonical_order) {}

  void Add(char32_t c, uint32_t begin, uint32_t end) {
    if (canonical_order_ && c >= 0x80) {
      const int combining_class = CombiningClass(c);
      if (combining_class != 0) {
        run_.push_back({c, combining_class, begin, end});
        return;
      }
    }
    Flush();
    Write(c, begin, end);
  }

  void Flush() {
    if (run_.empty()) return;
    std::stable_sort(run_.begin(), run_.end(),
                     [](const Pending& a, const Pending& b) {
                       return a.combining_class < b.combining_class;
                     });
    for (const Pending& p : run_) Write(p.c, p.begin, p.end);
    run_.clear();
  }

 private:
  struct Pending {
    char32_t c;
    int combining_class;
    uint32_t begin;
    uint32_t end;
  };

  void Write(char32_t c, uint32_t begin, uint32_t end) {
    if (!lowercase_) {
      out_->Append(c, begin, end);
      return;
    }
    char32_t lower[2];
    const int count = Lowercase(c, lower);
    for (int i = 0; i < count; ++i) out_->Append(lower[i], begin, end);
  }

  NormalizedString* out_;
  const bool lowercase_;
  const bool canonical_order_;
  std::vector<Pending> run_;
};

// One character after cleaning: decomposed and stripped of nonspacing marks
// when accents are stripped, as is otherwise.
void AddChar(char32_t c, bool strip_accents, uint32_t begin, uint32_t end,
             CharWriter* writer) {
  if (!strip_accents || c < 0x80) {
    writer->Add(c, begin, end);
    return;
  }
  char32_t parts[kMaxDecomposition];
  const int count = DecomposeCanonical(c, parts);
  for (int i = 0; i < count; ++i) {
    if (!IsNonspacingMark(parts[i])) writer->Add(parts[i], begin, end);
  }
}

}  // namespace

BertNormalizer::BertNormalizer(const Options& options)
    : options_(options),
      strip_accents_(options.strip_accents.value_or(options.lowercase)) {}

absl::Status BertNormalizer::Normalize(absl::string_view text,
                                       uint32_t source_offset,
                                       NormalizedString* out) const {
  out->Clear();
  CharWriter writer(out, options_.lowercase, strip_accents_);
  size_t pos = 0;
  while (pos < text.size()) {
    const auto begin = static_cast<uint32_t>(source_offset + pos);
    const char32_t c = NextChar(text, &pos);
    const auto end = static_cast<uint32_t>(source_offset + pos);
    if (options_.clean_text) {
      if (c == 0 || c == 0xFFFD || IsBertControl(c)) continue;
      if (IsWhitespace(c)) {
        writer.Add(' ', begin, end);
        continue;
      }
    }
    if (options_.handle_chinese_chars && IsCjkIdeograph(c)) {
      writer.Add(' ', begin, end);
      AddChar(c, strip_accents_, begin, end, &writer);
      writer.Add(' ', begin, end);
      continue;
    }
    AddChar(c, strip_accents_, begin, end, &writer);
  }
  writer.Flush();
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
