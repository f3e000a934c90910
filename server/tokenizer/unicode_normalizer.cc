#include "server/tokenizer/unicode_normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

// A character of the stream with its change (AlignedTransform::Emit).
struct Tagged {
  char32_t c;
  int change;
};

// The longest full decomposition (U+FDFA has 18 characters).
constexpr int kMaxFullDecomposition = 32;

int FullDecomposition(char32_t c, bool compatible, char32_t* out) {
  if (c < 0x80) {
    out[0] = c;
    return 1;
  }
  utf8proc_int32_t parts[kMaxFullDecomposition];
  int boundclass = 0;
  const utf8proc_option_t options = static_cast<utf8proc_option_t>(
      UTF8PROC_DECOMPOSE | (compatible ? UTF8PROC_COMPAT : 0));
  const utf8proc_ssize_t count =
      utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), parts,
                              kMaxFullDecomposition, options, &boundclass);
  if (count <= 0 || count > kMaxFullDecomposition) {
    out[0] = c;
    return 1;
  }
  for (utf8proc_ssize_t i = 0; i < count; ++i) out[i] = parts[i];
  return static_cast<int>(count);
}

// The primary composite of a and b, if any (composition exclusions and
// Hangul included, as utf8proc composes).
std::optional<char32_t> Compose(char32_t a, char32_t b) {
  if (a < 0x80 && b < 0x80) return std::nullopt;
  utf8proc_int32_t pair[2] = {static_cast<utf8proc_int32_t>(a),
                              static_cast<utf8proc_int32_t>(b)};
  const utf8proc_ssize_t count = utf8proc_normalize_utf32(
      pair, 2, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE));
  if (count != 1) return std::nullopt;
  return static_cast<char32_t>(pair[0]);
}

// Full decomposition, each run of non-starters stably sorted by combining
// class (the crate's Decompositions): the first character of a
// decomposition replaces its input character (change 0), the others are
// inserted (change 1).
std::vector<Tagged> Decompose(absl::string_view text, bool compatible) {
  std::vector<Tagged> out;
  out.reserve(text.size());
  size_t run_begin = 0;  // first non-starter not yet sorted
  auto sort_run = [&] {
    std::stable_sort(out.begin() + run_begin, out.end(),
                     [](const Tagged& a, const Tagged& b) {
                       return CombiningClass(a.c) < CombiningClass(b.c);
                     });
  };
  size_t pos = 0;
  char32_t parts[kMaxFullDecomposition];
  while (pos < text.size()) {
    const int count =
        FullDecomposition(NextChar(text, &pos), compatible, parts);
    for (int i = 0; i < count; ++i) {
      if (CombiningClass(parts[i]) == 0) {
        sort_run();
        run_begin = out.size() + 1;
      }
      out.push_back({parts[i], i == 0 ? 0 : 1});
    }
  }
  if (run_begin < out.size()) sort_run();
  return out;
}

// The crate's Recompositions state machine over a decomposed stream.
class Recomposer {
 public:
  explicit Recomposer(std::vector<Tagged>* out) : out_(out) {}

  void Add(Tagged t) {
    const int ch_class = CombiningClass(t.c);
    if (!composee_) {
      if (ch_class != 0) {
        out_->push_back(t);
      } else {
        composee_ = t;
      }
      return;
    }
    if (!last_class_ || *last_class_ < ch_class) {
      if (const auto r = Compose(composee_->c, t.c)) {
        composee_ = Tagged{*r, composee_->change + t.change - 1};
        return;
      }
    }
    if (ch_class == 0) {
      out_->push_back(*composee_);
      Purge();
      composee_ = t;
      return;
    }
    buffer_.push_back(t);
    last_class_ = ch_class;
  }

  // The crate ends with the composee, then the marks it did not take.
  void Finish() {
    if (composee_) out_->push_back(*composee_);
    composee_.reset();
    Purge();
  }

 private:
  void Purge() {
    out_->insert(out_->end(), buffer_.begin(), buffer_.end());
    buffer_.clear();
    last_class_.reset();
  }

  std::vector<Tagged>* out_;
  std::optional<Tagged> composee_;
  std::optional<int> last_class_;
  std::vector<Tagged> buffer_;
};

bool IsAscii(absl::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char byte) {
    return static_cast<unsigned char>(byte) < 0x80;
  });
}

}  // namespace

absl::Status UnicodeNormalizer::Transform(const NormalizedString& in,
                                          NormalizedString* out) const {
  AlignedTransform transform(in, out);
  if (IsAscii(in.text())) {  // every form leaves ASCII as it is
    for (const char byte : in.text()) transform.Emit(byte, 0);
    return absl::OkStatus();
  }
  const bool compatible = form_ == Form::kNfkc || form_ == Form::kNfkd;
  std::vector<Tagged> decomposed = Decompose(in.text(), compatible);
  if (form_ == Form::kNfd || form_ == Form::kNfkd) {
    for (const Tagged& t : decomposed) transform.Emit(t.c, t.change);
    return absl::OkStatus();
  }
  std::vector<Tagged> composed;
  composed.reserve(decomposed.size());
  Recomposer recomposer(&composed);
  for (const Tagged& t : decomposed) recomposer.Add(t);
  recomposer.Finish();
  for (const Tagged& t : composed) transform.Emit(t.c, t.change);
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
