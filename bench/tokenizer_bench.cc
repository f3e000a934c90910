// Tokenizer throughput on one core: WordPiece (BERT-base-uncased)
// in MB/s on real English prose, and the time to encode a document of a
// million tokens. Targets: >= 10 MB/s per core; 1M tokens in < 1 s.
//
// Flags (taken out of argv before Google Benchmark sees it):
//   --prose=PATH      English prose; default: the GPL-3 text Debian's
//                     base-files installs (/usr/share/common-licenses/GPL-3)
//   --tokenizer=PATH  a WordPiece tokenizer.json; default: the
//                     BERT-base-uncased one the tokenizer tests build
//                     (ctest -R tokenizer.References)
// A missing file skips the benchmarks with a message saying which.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "server/tokenizer/load_tokenizer.h"

namespace favor::tokenizer {
namespace {

struct BenchInputs {
  std::string prose_path = "/usr/share/common-licenses/GPL-3";
  std::string tokenizer_path = FAVOR_DEFAULT_BERT_TOKENIZER;
  std::string prose;  // the file's text
  std::unique_ptr<Tokenizer> tokenizer;
  std::string error;  // why the benchmarks skip
};

BenchInputs& Inputs() {
  static BenchInputs inputs;
  return inputs;
}

void Load() {
  BenchInputs& in = Inputs();
  std::ifstream file(in.prose_path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  in.prose = text.str();
  if (!file || in.prose.empty()) {
    in.error = "no prose at " + in.prose_path + " (give --prose=PATH)";
    return;
  }
  TokenizerSpec spec;
  spec.path = in.tokenizer_path;
  auto tokenizer = LoadTokenizer(spec);
  if (!tokenizer.ok()) {
    in.error = std::string(tokenizer.status().message()) +
               " (run ctest -R tokenizer.References, or give --tokenizer=PATH)";
    return;
  }
  in.tokenizer = *std::move(tokenizer);
}

// The prose repeated to at least `min_bytes`.
std::string Repeated(size_t min_bytes) {
  std::string text;
  while (text.size() < min_bytes) text += Inputs().prose;
  return text;
}

// One 1 MB text: throughput without per-call overheads.
void BM_WordPieceProse(benchmark::State& state) {
  if (!Inputs().error.empty())
    return state.SkipWithError(Inputs().error.c_str());
  const std::string text = Repeated(size_t{1} << 20);
  size_t tokens = 0;
  for (auto _ : state) {
    auto encoding = Inputs().tokenizer->Encode(text);
    tokens = encoding->size();
    benchmark::DoNotOptimize(encoding);
  }
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens * state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WordPieceProse)->Unit(benchmark::kMillisecond);

// The prose a line at a time, as short requests arrive.
void BM_WordPieceProseLines(benchmark::State& state) {
  if (!Inputs().error.empty())
    return state.SkipWithError(Inputs().error.c_str());
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(Inputs().prose, '\n')) {
    if (!line.empty()) lines.emplace_back(line);
  }
  size_t bytes = 0;
  for (const auto& line : lines) bytes += line.size();
  for (auto _ : state) {
    for (const auto& line : lines) {
      benchmark::DoNotOptimize(Inputs().tokenizer->Encode(line));
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["lines"] = static_cast<double>(lines.size());
}
BENCHMARK(BM_WordPieceProseLines)->Unit(benchmark::kMillisecond);

// A document of at least 1,000,000 tokens, encoded whole.
void BM_WordPieceMillionTokens(benchmark::State& state) {
  if (!Inputs().error.empty())
    return state.SkipWithError(Inputs().error.c_str());
  const auto tokens_of = [](const std::string& text) {
    return Inputs().tokenizer->Encode(text)->size();
  };
  // Tokens per byte of this prose, then enough copies for a million.
  const double per_byte =
      static_cast<double>(tokens_of(Inputs().prose)) / Inputs().prose.size();
  std::string document =
      Repeated(static_cast<size_t>(1000000 / per_byte * 1.01));
  size_t tokens = 0;
  for (auto _ : state) {
    auto encoding = Inputs().tokenizer->Encode(document);
    tokens = encoding->size();
    benchmark::DoNotOptimize(encoding);
  }
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["MB"] = static_cast<double>(document.size()) / 1e6;
}
BENCHMARK(BM_WordPieceMillionTokens)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace favor::tokenizer

int main(int argc, char** argv) {
  auto& inputs = favor::tokenizer::Inputs();
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--prose=", 0) == 0) {
      inputs.prose_path = arg.substr(8);
    } else if (arg.rfind("--tokenizer=", 0) == 0) {
      inputs.tokenizer_path = arg.substr(12);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  favor::tokenizer::Load();
  std::printf(
      "tokenizer_bench: prose %s (%zu bytes), tokenizer %s%s%s\n",
      inputs.prose_path.c_str(), inputs.prose.size(),
      inputs.tokenizer_path.c_str(),
      inputs.error.empty() ? "" : "\n  skipping: ", inputs.error.c_str());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
