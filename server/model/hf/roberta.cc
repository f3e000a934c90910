// RobertaModel and XLMRobertaModel (transformers' modeling_roberta.py and
// modeling_xlm_roberta.py): BERT's layers and names; positions numbered
// after the padding id (create_position_ids_from_input_ids: a padding token
// takes padding_idx, the others padding_idx + 1, + 2, …), so the table's
// first pad_token_id + 1 rows are never a real token's and the longest
// input is that many shorter (514 rows: 512 tokens).
#include "server/common/status_macros.h"
#include "server/model/hf/adapters.h"

namespace favor::model::hf {

absl::Status AdaptRoberta(const HfConfig& hf, ModelConfig* config) {
  RETURN_IF_ERROR(AdaptBertFamily(hf, config));
  ModelConfig& c = *config;
  ASSIGN_OR_RETURN(c.pad_token_id, hf.Int("pad_token_id", 1));
  if (c.pad_token_id < 0) {
    return hf.Error("pad_token_id", "must be at least 0: positions are "
                                    "numbered after the padding id");
  }
  c.position_ids = PositionIds::kAfterPadding;
  c.max_sequence_length = c.max_position_embeddings - c.pad_token_id - 1;
  if (c.max_sequence_length < 1) {
    return hf.Error("max_position_embeddings",
                    "leaves no position after the padding id");
  }
  return absl::OkStatus();
}

}  // namespace favor::model::hf
