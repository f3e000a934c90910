// The tokenizer fuzz target's tokenizer.json seeds (tests/fuzz/make_seeds.py)
// load and encode: a seed the loader refuses would leave its model, stages
// and post-processor out of the fuzzer's reach without anyone noticing.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "server/tokenizer/tokenizer_builders.h"

namespace favor::tokenizer {
namespace {

// A seed is <text in FuzzedDataProvider's escaped form> <file> <format
// byte>: the text ends at a backslash that does not escape another.
std::string FileOfSeed(const std::string& seed) {
  size_t i = 0;
  while (i + 1 < seed.size()) {
    if (seed[i] == '\\' && seed[i + 1] != '\\') {
      i += 2;
      break;
    }
    i += seed[i] == '\\' ? 2 : 1;
  }
  return seed.substr(i, seed.size() - i - 1);
}

TEST(FuzzSeedsTest, TokenizerJsonSeedsLoadAndEncode) {
  std::set<std::string> kinds;
  for (const auto& entry :
       std::filesystem::directory_iterator(FAVOR_TOKENIZER_FUZZ_SEEDS)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("json_", 0) != 0) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    ASSERT_EQ(bytes.str().back(), '\0') << name << ": not a tokenizer.json";
    auto tokenizer =
        TokenizerFromHuggingFaceJson(FileOfSeed(bytes.str()), name);
    ASSERT_TRUE(tokenizer.ok()) << name << ": " << tokenizer.status();
    EXPECT_TRUE((*tokenizer)->Encode("the fox, café 日本 😀").ok()) << name;
    kinds.insert(name.substr(0, name.rfind('_')));
  }
  EXPECT_EQ(kinds, (std::set<std::string>{
                       "json", "json_byte_level_bpe", "json_metaspace_bpe",
                       "json_split_regex_bpe", "json_unigram"}));
}

}  // namespace
}  // namespace favor::tokenizer
