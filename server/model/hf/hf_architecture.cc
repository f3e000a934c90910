#include "server/model/hf/hf_architecture.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/status_macros.h"
#include "server/model/hf/adapters.h"

namespace favor::model::hf {
namespace {

constexpr absl::string_view kBertClasses[] = {
    "BertModel", "BertForMaskedLM", "BertForPreTraining",
    "BertForSequenceClassification", "BertForTokenClassification"};
constexpr absl::string_view kRobertaClasses[] = {
    "RobertaModel", "RobertaForMaskedLM", "RobertaForSequenceClassification",
    "RobertaForTokenClassification"};
constexpr absl::string_view kXlmRobertaClasses[] = {
    "XLMRobertaModel", "XLMRobertaForMaskedLM",
    "XLMRobertaForSequenceClassification", "XLMRobertaForTokenClassification"};
constexpr absl::string_view kNomicBertClasses[] = {
    "NomicBertModel", "NomicBertForPreTraining",
    "NomicBertForSequenceClassification"};

constexpr absl::string_view kNomicBertRoots[] = {"emb_ln."};
constexpr absl::string_view kModernBertClasses[] = {
    "ModernBertModel", "ModernBertForMaskedLM",
    "ModernBertForSequenceClassification", "ModernBertForTokenClassification"};
constexpr absl::string_view kModernBertRoots[] = {"layers.", "final_norm."};

const HfArchitecture kArchitectures[] = {
    {"bert", kBertClasses, "bert.", &AdaptBert},
    {"roberta", kRobertaClasses, "roberta.", &AdaptRoberta},
    {"xlm-roberta", kXlmRobertaClasses, "roberta.", &AdaptRoberta},
    {"nomic_bert", kNomicBertClasses, "bert.", &AdaptNomicBert,
     &NomicBertAliases, kNomicBertRoots},
    {"modernbert", kModernBertClasses, "model.", &AdaptModernBert,
     &ModernBertAliases, kModernBertRoots},
};

std::string Supported() {
  std::vector<std::string> names;
  for (const HfArchitecture& row : kArchitectures) {
    names.push_back(absl::StrCat("\"", row.model_type, "\" (", row.classes[0],
                                 ")"));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::Span<const HfArchitecture> HfArchitectures() { return kArchitectures; }

absl::StatusOr<const HfArchitecture*> FindHfArchitecture(const HfConfig& hf) {
  ASSIGN_OR_RETURN(const std::string model_type, hf.String("model_type", ""));
  for (const HfArchitecture& row : kArchitectures) {
    if (row.model_type == model_type) return &row;
  }
  return hf.Error("model_type",
                  absl::StrCat("is \"", model_type,
                               "\", an architecture Favor has no adapter for; "
                               "supported: ",
                               Supported()));
}

}  // namespace favor::model::hf
