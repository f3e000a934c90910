// favor-model: makes, inspects and checks the models of a model repository.
//
//   favor-model init --output DIR [--layers N --hidden H --heads A --ffn F
//                    --vocab V --kernel K --features M --seed S
//                    --tokenizer FILE ...]
//   favor-model inspect DIR
//   favor-model verify DIR [--device cpu|cuda:N --dtype float32|...|int8]
//   favor-model compare DIR [--dtype bfloat16 --inputs N --max_tokens N
//                       --peak_logits S]
//   favor-model tokenize DIR < texts.jsonl > ids.txt
//
// Every failure is one line on stderr, "favor-model <command>: <why>", and
// exit status 1 (2 for a usage error).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"
#include "server/attention/kernel.h"
#include "server/attention/parallelism.h"
#include "server/common/status_macros.h"
#include "server/model/dtype_agreement.h"
#include "server/model/model.h"
#include "server/model/model_config.h"
#include "server/model/model_folder.h"
#include "server/model/model_tokenizer.h"
#include "server/model/peaked_model.h"
#include "server/model/random_model.h"
#include "server/model/safetensors.h"
#include "server/model/tools/inspect.h"
#include "server/model/tools/staging_folder.h"
#include "server/model/weight_layout.h"

// ---- init: the defaults are the default model's shape (models/README.md).
ABSL_FLAG(std::string, output, "", "init: model folder to write");
ABSL_FLAG(bool, force, false, "init: overwrite a model already there");
ABSL_FLAG(int64_t, layers, 4, "init: num_hidden_layers");
ABSL_FLAG(int64_t, hidden, 256, "init: hidden_size");
ABSL_FLAG(int64_t, heads, 4, "init: num_attention_heads");
ABSL_FLAG(int64_t, ffn, 1024, "init: intermediate_size");
ABSL_FLAG(int64_t, vocab, 30522,
          "init: vocab_size (above 103: BERT's special token ids are set)");
ABSL_FLAG(std::string, kernel, "favor+",
          absl::StrCat("init: attention kernel (",
                       favor::attention::KernelNames(), ")"));
ABSL_FLAG(std::string, random_features, "orthogonal",
          "init: how projections are drawn (orthogonal, iid, simplex)");
ABSL_FLAG(int64_t, features, 256, "init: num_random_features m");
ABSL_FLAG(uint64_t, seed, 0,
          "init: seed of the weights and of the projections (projection_seed)");
ABSL_FLAG(std::string, position, "rotary",
          "init: position_embedding_type (absolute, rotary, none)");
ABSL_FLAG(int64_t, max_sequence_length, 1 << 20,
          "init: max_sequence_length (absolute positions: also the table's "
          "rows)");
ABSL_FLAG(std::string, block, "encoder",
          "init: block (encoder, cross_attention, isab)");
ABSL_FLAG(int64_t, num_latents, 64, "init: latents of a cross_attention model");
ABSL_FLAG(int64_t, num_inducing_points, 32,
          "init: inducing points of an isab model");
ABSL_FLAG(std::string, norm, "layer_norm", "init: layer_norm or scale_norm");
ABSL_FLAG(std::string, norm_placement, "post", "init: post or pre");
ABSL_FLAG(std::string, activation, "gelu",
          "init: hidden_act (gelu, gelu_tanh, relu)");
ABSL_FLAG(std::string, pooling, "mean",
          "init: default pooling (mean, cls, attention, none)");
ABSL_FLAG(bool, normalize, true, "init: L2-normalise embeddings by default");
ABSL_FLAG(bool, causal, false, "init: causal attention");
ABSL_FLAG(double, init_std, 0.02, "init: standard deviation of the weights");
ABSL_FLAG(std::string, version, "", "init: version string (default: derived)");
ABSL_FLAG(std::string, tokenizer, "",
          "init: a tokenizer file (tokenizer.json, vocab.txt or a "
          "SentencePiece .model) to copy into the model's folder and name in "
          "its config.json; empty: token ids only");
// ---- verify
ABSL_FLAG(std::string, device, "cpu", "verify: cpu, cuda or cuda:N");
ABSL_FLAG(std::string, dtype, "float32",
          "verify: float32, bfloat16 (CUDA, or a CPU with AVX512-BF16 or "
          "AMX-BF16), float16 (CUDA) or int8 (a CPU with AVX2); compare: the "
          "dtype set against float32 (float32 there means bfloat16)");
ABSL_FLAG(int64_t, tokens, 512,
          "verify: length of the longest test sequence (capped by the "
          "model's max_sequence_length)");
ABSL_FLAG(int32_t, threads, 0,
          "verify, compare: CPU threads (0: one per core)");
// ---- compare
ABSL_FLAG(int64_t, inputs, 1000, "compare: number of inputs");
ABSL_FLAG(int64_t, max_tokens, 8192,
          "compare: longest input (lengths 1 to this, log-spaced)");
ABSL_FLAG(double, peak_logits, 20.0,
          "compare: also compare on a copy whose query and key weights are "
          "scaled so that attention logits span about +-this (0: skip)");

namespace favor::model {
namespace {

using Json = nlohmann::json;

// The vocabulary and the layers' shape from the flags.
void AddShapeFromFlags(Json& config) {
  const int64_t vocab = absl::GetFlag(FLAGS_vocab);
  config["version"] =
      absl::GetFlag(FLAGS_version).empty()
          ? absl::StrCat("random-seed-", absl::GetFlag(FLAGS_seed))
          : absl::GetFlag(FLAGS_version);
  config["vocab_size"] = vocab;
  if (vocab > 103) {  // BERT's [PAD] [UNK] [CLS] [SEP] [MASK]
    config.update({{"pad_token_id", 0},
                   {"unk_token_id", 100},
                   {"cls_token_id", 101},
                   {"sep_token_id", 102},
                   {"mask_token_id", 103}});
  }
  config["hidden_size"] = absl::GetFlag(FLAGS_hidden);
  config["num_hidden_layers"] = absl::GetFlag(FLAGS_layers);
  config["num_attention_heads"] = absl::GetFlag(FLAGS_heads);
  config["intermediate_size"] = absl::GetFlag(FLAGS_ffn);
  config["hidden_act"] = absl::GetFlag(FLAGS_activation);
  config["norm"] = absl::GetFlag(FLAGS_norm);
  config["norm_placement"] = absl::GetFlag(FLAGS_norm_placement);
}

// The config from the flags, as config.json text, so that ParseModelConfig
// validates it and names the flag's field in any error.
Json ConfigFromFlags() {
  Json config;
  AddShapeFromFlags(config);
  config["position_embedding_type"] = absl::GetFlag(FLAGS_position);
  config["max_sequence_length"] = absl::GetFlag(FLAGS_max_sequence_length);
  config["max_position_embeddings"] = absl::GetFlag(FLAGS_max_sequence_length);
  const std::string random_features = absl::GetFlag(FLAGS_random_features);
  config["attention"] = {{"kernel", absl::GetFlag(FLAGS_kernel)},
                         {"num_random_features", absl::GetFlag(FLAGS_features)},
                         {"orthogonal", random_features != "iid"},
                         {"simplex", random_features == "simplex"},
                         {"projection_seed", absl::GetFlag(FLAGS_seed)},
                         {"causal", absl::GetFlag(FLAGS_causal)}};
  const std::string block = absl::GetFlag(FLAGS_block);
  config["block"] = block;
  if (block == "cross_attention") {
    config["num_latents"] = absl::GetFlag(FLAGS_num_latents);
  }
  if (block == "isab") {
    config["num_inducing_points"] = absl::GetFlag(FLAGS_num_inducing_points);
  }
  config["pooling"] = absl::GetFlag(FLAGS_pooling);
  config["normalize"] = absl::GetFlag(FLAGS_normalize);
  const std::string tokenizer = absl::GetFlag(FLAGS_tokenizer);
  if (!tokenizer.empty()) {
    config["tokenizer"] = {
        {"file", std::filesystem::path(tokenizer).filename().string()}};
  }
  return config;
}

// Copies --tokenizer into the model's folder and loads it there as the
// server will, so that a file the model cannot use fails init.
absl::Status CopyTokenizer(const ModelConfig& config,
                           const std::string& output) {
  const std::string source = absl::GetFlag(FLAGS_tokenizer);
  if (source.empty()) return absl::OkStatus();
  std::error_code error;
  std::filesystem::copy_file(
      source, std::filesystem::path(output) / config.tokenizer.file,
      std::filesystem::copy_options::overwrite_existing, error);
  if (error) {
    return absl::NotFoundError(absl::StrCat(
        "--tokenizer ", source, ": cannot copy: ", error.message()));
  }
  const absl::Status loaded = LoadModelTokenizer(output, config).status();
  if (loaded.ok()) return loaded;
  // The message names the staged copy, which a failed init removes: name
  // the file the user gave.
  return absl::Status(
      loaded.code(),
      absl::StrReplaceAll(
          loaded.message(),
          {{(std::filesystem::path(output) / config.tokenizer.file).string(),
            absl::StrCat("--tokenizer ", source)}}));
}

absl::Status Init() {
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output.empty()) {
    return absl::InvalidArgumentError(
        "--output (the model folder) is required");
  }
  if (std::filesystem::exists(output + "/model.safetensors") &&
      !absl::GetFlag(FLAGS_force)) {
    return absl::AlreadyExistsError(
        absl::StrCat(output, " already holds a model (--force replaces it)"));
  }
  const std::string random_features = absl::GetFlag(FLAGS_random_features);
  if (random_features != "orthogonal" && random_features != "iid" &&
      random_features != "simplex") {
    return absl::InvalidArgumentError(
        absl::StrCat("--random_features is '", random_features,
                     "'; must be orthogonal, iid or simplex"));
  }
  ASSIGN_OR_RETURN(const ModelConfig config,
                   ParseModelConfig(ConfigFromFlags().dump(), "flags"));
  RandomModelOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.init_std = absl::GetFlag(FLAGS_init_std);
  ASSIGN_OR_RETURN(const std::string staging, MakeStagingFolder(output));
  absl::Status written = WriteRandomModel(config, staging, options);
  if (written.ok()) written = CopyTokenizer(config, staging);
  if (written.ok()) written = MoveModelInto(staging, output);
  std::error_code ignored;
  std::filesystem::remove_all(staging, ignored);
  RETURN_IF_ERROR(written);
  std::printf(
      "wrote %s: %" PRId64 " layers, hidden %" PRId64 ", %s, seed %" PRIu64
      " (random weights)\n",
      output.c_str(), config.num_hidden_layers, config.hidden_size,
      std::string(attention::KernelName(config.attention.kernel)).c_str(),
      options.seed);
  return absl::OkStatus();
}

// One JSON string per line of stdin, tokenised as the server tokenises an
// Embed text (its special tokens included, untruncated): one line of ids per
// text on stdout. The training tool (tools/train_default) reads its data
// through it, so that a model learns exactly the ids the server feeds it.
absl::Status Tokenize(const std::string& directory) {
  ASSIGN_OR_RETURN(const ModelFolder folder, ReadModelFolder(directory));
  const ModelConfig& config = folder.config;
  ASSIGN_OR_RETURN(const auto tokenizer, LoadModelTokenizer(directory, config));
  if (tokenizer == nullptr) {
    return absl::FailedPreconditionError(directory + " has no tokenizer");
  }
  std::string line;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    const auto text = nlohmann::json::parse(line, nullptr, false);
    if (!text.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("stdin line ", number, ": not a JSON string"));
    }
    absl::StatusOr<tokenizer::Encoding> encoding =
        tokenizer->Encode(text.get<std::string>());
    if (!encoding.ok()) {
      return absl::Status(encoding.status().code(),
                          absl::StrCat("stdin line ", number, ": ",
                                       encoding.status().message()));
    }
    std::cout << absl::StrJoin(encoding->ids, " ") << '\n';
  }
  std::cout.flush();
  return std::cout ? absl::OkStatus()
                   : absl::DataLossError("cannot write to stdout");
}

// Deterministic test input: two sequences, ids spread over the vocabulary.
void TestInput(const ModelConfig& config, std::vector<int32_t>& ids,
               std::vector<int64_t>& offsets) {
  const int64_t longest =
      std::min(config.max_sequence_length, absl::GetFlag(FLAGS_tokens));
  offsets = {0};
  for (const int64_t length :
       {std::max<int64_t>(1, longest), std::min<int64_t>(longest, 17)}) {
    for (int64_t i = 0; i < length; ++i) {
      ids.push_back(static_cast<int32_t>((i * 7919 + 13) % config.vocab_size));
    }
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
}

absl::Status Verify(const std::string& directory) {
  attention::ConfigureCpuParallelism({absl::GetFlag(FLAGS_threads)});
  ModelOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  ASSIGN_OR_RETURN(options.dtype,
                   ParseComputeDType(absl::GetFlag(FLAGS_dtype)));
  ASSIGN_OR_RETURN(const ModelFolder folder, ReadModelFolder(directory));
  PrintFormat(folder);
  const auto load_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const std::unique_ptr<Model> model,
                   Model::Load(directory, options));
  const auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets;
  TestInput(model->config(), ids, offsets);
  ASSIGN_OR_RETURN(const Embeddings embeddings, model->Embed(ids, offsets));
  const auto end = std::chrono::steady_clock::now();
  double sum = 0, sum_abs = 0;
  for (const float value : embeddings.values) {
    if (!std::isfinite(value)) {
      return absl::InternalError("the output has a NaN or an infinity");
    }
    sum += value;
    sum_abs += std::abs(value);
  }
  const ModelDescription& d = model->description();
  using Ms = std::chrono::duration<double, std::milli>;
  std::printf(
      "model %s: %" PRId64
      " parameters, %s, %s on %s, loaded in %.1f ms\n"
      "forward: %zu tokens in %" PRId64 " sequences, %.1f ms; output %" PRId64
      " x %" PRId64 "\nchecksum: sum %.6f, sum|x| %.6f\n",
      d.name.c_str(), d.parameter_count,
      std::string(attention::KernelName(d.config.attention.kernel)).c_str(),
      std::string(NameOf(d.dtype)).c_str(), d.device.c_str(),
      Ms(start - load_start).count(), ids.size(), embeddings.num_sequences(),
      Ms(end - start).count(), embeddings.num_rows(), embeddings.dim, sum,
      sum_abs);
  return absl::OkStatus();
}

// The dtype `compare` sets against float32.
absl::StatusOr<ModelOptions> CompareOptions() {
  ModelOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  ASSIGN_OR_RETURN(options.dtype,
                   ParseComputeDType(absl::GetFlag(FLAGS_dtype)));
  if (options.dtype == ComputeDType::kFloat32) {
    options.dtype = ComputeDType::kBFloat16;
  }
  return options;
}

// Compares the model in `directory` in float32 and in options.dtype.
absl::Status CompareOne(const std::string& directory, const std::string& what,
                        const ModelOptions& options) {
  ModelOptions float32 = options;
  float32.dtype = ComputeDType::kFloat32;
  ASSIGN_OR_RETURN(const std::unique_ptr<Model> reference,
                   Model::Load(directory, float32));
  ASSIGN_OR_RETURN(const std::unique_ptr<Model> candidate,
                   Model::Load(directory, options));
  AgreementOptions agreement_options;
  agreement_options.num_inputs = absl::GetFlag(FLAGS_inputs);
  agreement_options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  ASSIGN_OR_RETURN(const Agreement a, CompareEmbeddings(*reference, *candidate,
                                                        agreement_options));
  const std::string dtype(NameOf(options.dtype));
  const double tokens = static_cast<double>(a.num_tokens);
  std::printf("%s, %s against float32 on %s: %" PRId64 " inputs, %" PRId64
              " tokens\n  cosine of the pooled embeddings: mean %.6f, min %.6f "
              "(an input of %" PRId64
              " tokens)\n  tokens/s: float32 %.0f, %s %.0f "
              "(%.2fx)\n",
              what.c_str(), dtype.c_str(), options.device.c_str(), a.num_inputs,
              a.num_tokens, a.mean_cosine, a.min_cosine, a.min_cosine_length,
              tokens / a.reference_seconds, dtype.c_str(),
              tokens / a.candidate_seconds,
              a.reference_seconds / a.candidate_seconds);
  return absl::OkStatus();
}

// " (largest |logit| per layer: 20.9, 23.2)"; "" for cross-attention, ISAB.
std::string SpansNote(const absl::StatusOr<std::vector<double>>& spans) {
  if (!spans.ok()) return "";
  std::vector<std::string> listed;
  for (const double s : *spans) listed.push_back(absl::StrFormat("%.1f", s));
  return absl::StrCat(
      " (largest |logit| per layer: ", absl::StrJoin(listed, ", "), ")");
}

absl::Status Compare(const std::string& directory) {
  attention::ConfigureCpuParallelism({absl::GetFlag(FLAGS_threads)});
  ASSIGN_OR_RETURN(const ModelOptions options, CompareOptions());
  RETURN_IF_ERROR(
      CompareOne(directory,
                 "model " + directory +
                     SpansNote(MeasureAttentionLogitSpans(
                         directory, PeakedModelOptions().probe_tokens)),
                 options));
  const double span = absl::GetFlag(FLAGS_peak_logits);
  if (!std::isfinite(span)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--peak_logits is ", span, "; must be a finite number"));
  }
  if (span <= 0) return absl::OkStatus();
  // A fresh folder of our own (mkdtemp: 0700, a name nobody could plant a
  // link at: with a predictable name, a local user's link would make the
  // copy overwrite files elsewhere).
  std::string pattern =
      (std::filesystem::temp_directory_path() / "favor_model_peaked_XXXXXX")
          .string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot make a temporary folder ", pattern));
  }
  const std::string peaked = pattern;
  PeakedModelOptions peaked_options;
  peaked_options.logit_span = span;
  absl::StatusOr<std::vector<double>> spans =
      WritePeakedModel(directory, peaked, peaked_options);
  absl::Status status = spans.status();
  if (status.ok()) {
    status = CompareOne(peaked, "its peaked copy" + SpansNote(spans), options);
  }
  std::filesystem::remove_all(peaked);
  return status;
}

int Run(const std::vector<char*>& args) {
  const std::string command = args.size() > 1 ? args[1] : "";
  absl::Status status;
  if (command == "init" && args.size() == 2) {
    status = Init();
  } else if (command == "inspect" && args.size() == 3) {
    status = Inspect(args[2]);
  } else if (command == "verify" && args.size() == 3) {
    status = Verify(args[2]);
  } else if (command == "compare" && args.size() == 3) {
    status = Compare(args[2]);
  } else if (command == "tokenize" && args.size() == 3) {
    status = Tokenize(args[2]);
  } else {
    std::fprintf(stderr, "%s\n",
                 std::string(absl::ProgramUsageMessage()).c_str());
    return 2;
  }
  if (status.ok()) return 0;
  std::fprintf(stderr, "favor-model %s: %s\n", command.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace
}  // namespace favor::model

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "usage: favor-model init --output DIR [--layers N --hidden H ...]\n"
      "       favor-model inspect DIR\n"
      "       favor-model verify DIR [--device cpu|cuda:N --dtype ...]\n"
      "       favor-model compare DIR [--dtype bfloat16 --inputs N ...]\n"
      "       favor-model tokenize DIR < texts.jsonl (one JSON string a "
      "line)\n"
      "(--help lists every flag)");
  // absl's --help lists the flags of <program>_main.cc, and the program is
  // favor-model, with a dash: name the file.
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/model/tools/favor_model_main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  return favor::model::Run(absl::ParseCommandLine(argc, argv));
}
