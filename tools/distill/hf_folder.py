"""Hugging Face BERT-family folders (BertModel, RobertaModel,
XLMRobertaModel and their task models) as tools/distill reads and writes
them, computing what favor-server computes for such a folder
(server/model/hf/bert.cc, roberta.cc, sentence_transformers.cc,
model_folder.cc; docs/models.md "Hugging Face folders"):

  - embeddings: word + absolute position + token type 0, then LayerNorm;
    positions from 0 (BERT), or numbered after the padding id (RoBERTa,
    XLM-R: a padding token takes pad_token_id, the others pad_token_id + 1,
    + 2, ...), so the longest input is pad_token_id + 1 shorter than the
    table;
  - post-LN layers with the exact (erf) GELU: tools/train_default/model.py's
    Layer, whose FAVOR+ / FAVOR++ / softmax attention and projection draw
    (projection_seed + layer) are the server's; no rotary;
  - the pooling and normalisation of sentence-transformers' files
    (1_Pooling/config.json, a Normalize module in modules.json), else mean
    pooling, not normalised; favor.json may override both;
  - the attention: softmax as trained, or favor.json's "attention".

A student is written as the teacher's folder with its weights (under the
same names, the task prefix and head kept) and a favor.json naming the
student's attention, which favor-server already reads.
"""

import json
import os
import shutil

import torch
from torch import nn
from torch.nn import functional as F

import export_state_dict
import model as favor_model

# model_folder.cc's kFavorOnlyFields: a config.json with any of them is
# Favor's own format whatever its model_type says.
FAVOR_ONLY_FIELDS = (
    "version", "norm", "norm_placement", "rotary_base", "max_sequence_length",
    "attention", "block", "num_latents", "num_inducing_points", "pooling",
    "normalize", "tokenizer", "position_ids", "feed_forward", "linear_bias",
    "local_attention_window", "global_attention_every_n_layers",
    "local_rotary_base", "first_layer_attention_norm")
MODEL_TYPES = ("bert", "roberta", "xlm-roberta")
OVERLAY = "favor.json"
POOLING_MODES = (("pooling_mode_cls_token", "cls"), ("pooling_mode_mean_tokens", "mean"),
                 ("pooling_mode_max_tokens", "max"), ("pooling_mode_lasttoken", "last_token"))


def is_hugging_face(config_json):
    return "model_type" in config_json and not any(
        field in config_json for field in FAVOR_ONLY_FIELDS)


def _read_json(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Folder:
    """What favor-server reads from a Hugging Face BERT-family folder."""

    def __init__(self, path):
        self.path = path
        c = _read_json(os.path.join(path, "config.json"))
        self.hf = c
        self.model_type = c.get("model_type")
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"model_type {self.model_type!r}: tools/distill reads "
                             f"{', '.join(MODEL_TYPES)} folders (NomicBERT and "
                             "ModernBERT are not done yet)")
        for key, value in (("position_embedding_type", "absolute"),
                           ("is_decoder", False), ("add_cross_attention", False),
                           ("hidden_act", "gelu")):
            if c.get(key, value) != value:
                raise ValueError(f"{key} {c[key]!r}: only {value!r} is supported")
        roberta = self.model_type in ("roberta", "xlm-roberta")
        self.pad_token_id = c.get("pad_token_id", 1 if roberta else 0)
        self.after_padding = roberta
        positions = c.get("max_position_embeddings", 512)
        self.max_sequence_length = (positions - self.pad_token_id - 1 if roberta
                                    else positions)
        self.overlay = _read_json(os.path.join(path, OVERLAY), {})
        self.max_sequence_length = self.overlay.get("max_sequence_length",
                                                    self.max_sequence_length)
        self.pooling, self.normalize = "mean", False
        modules = _read_json(os.path.join(path, "modules.json"))
        if modules is not None:
            for module in modules:
                kind = module.get("type", "").rsplit(".", 1)[-1]
                if kind == "Normalize":
                    self.normalize = True
                if kind == "Pooling":
                    pooling = _read_json(os.path.join(path, module.get("path", ""),
                                                      "config.json"), {})
                    chosen = [name for key, name in POOLING_MODES if pooling.get(key)]
                    if len(chosen) != 1:
                        raise ValueError(f"{path}: pooling {pooling} is not one "
                                         "that Favor runs")
                    self.pooling = chosen[0]
        self.pooling = self.overlay.get("pooling", self.pooling)
        self.normalize = self.overlay.get("normalize", self.normalize)
        attention = self.overlay.get("attention", {})
        self.config = favor_model.Config(
            vocab_size=c.get("vocab_size", 30522), hidden_size=c.get("hidden_size", 768),
            num_hidden_layers=c.get("num_hidden_layers", 12),
            num_attention_heads=c.get("num_attention_heads", 12),
            intermediate_size=c.get("intermediate_size", 3072),
            layer_norm_eps=c.get("layer_norm_eps", 1e-12),
            type_vocab_size=c.get("type_vocab_size", 2),
            kernel=attention.get("kernel", "softmax"),
            num_random_features=attention.get("num_random_features", 256),
            projection_seed=attention.get("projection_seed", 0),
            feature_epsilon=attention.get("feature_epsilon", 1e-4),
            position_embedding_type="absolute",
            max_sequence_length=self.max_sequence_length)
        for key, value in (("orthogonal", True), ("row_norm", "chi"),
                           ("simplex", False), ("causal", False)):
            if attention.get(key, value) != value:
                raise ValueError(f"favor.json attention {key} {attention[key]!r}: "
                                 f"only {value!r} is supported")
        self.config.max_position_embeddings = positions

    def tokenizer_files(self):
        return [n for n in ("tokenizer.json", "vocab.txt") if
                os.path.exists(os.path.join(self.path, n))]


class Encoder(nn.Module):
    """The base model under BERT's names; forward_all as model.Encoder's
    (pooled: the folder's pooling, L2-normalised, for the objective)."""

    def __init__(self, folder):
        super().__init__()
        self.folder = folder
        config = self.config = folder.config
        h = config.hidden_size
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(config.vocab_size, h)
        self.embeddings.position_embeddings = nn.Embedding(config.max_position_embeddings, h)
        self.embeddings.token_type_embeddings = nn.Embedding(config.type_vocab_size, h)
        self.embeddings.LayerNorm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(
            favor_model.Layer(config, i) for i in range(config.num_hidden_layers))

    def position_ids(self, ids, keep):
        if not self.folder.after_padding:
            return torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        pad = self.folder.pad_token_id
        real = ((ids != pad) & keep).long()
        return torch.cumsum(real, 1) * real + pad

    def forward_all(self, ids, keep):
        e = self.embeddings
        x = e.LayerNorm(e.word_embeddings(ids) +
                        e.position_embeddings(self.position_ids(ids, keep)) +
                        e.token_type_embeddings.weight[0])
        hidden = [x]
        for layer in self.encoder.layer:
            x = layer(x, keep, None, None)
            hidden.append(x)
        return F.normalize(self.pool(x, keep), dim=-1, eps=1e-12), hidden

    def forward(self, ids, keep):
        return self.forward_all(ids, keep)[0]

    def pool(self, x, keep):
        mode = self.folder.pooling
        if mode == "cls":
            return x[:, 0]
        if mode == "max":
            return x.masked_fill(~keep[..., None], -float("inf")).amax(1)
        if mode == "last_token":
            last = keep.long().sum(1) - 1
            return x[torch.arange(x.shape[0], device=x.device), last]
        weights = keep.to(x.dtype)[..., None]
        return (x * weights).sum(1) / weights.sum(1)

    def served(self, ids, keep):
        """What favor-server returns: the folder's pooling, normalised only
        where the folder says so."""
        vector = self.pool(self.forward_all(ids, keep)[1][-1], keep)
        return F.normalize(vector, dim=-1, eps=1e-12) if self.folder.normalize else vector


def _split(state):
    """(prefix, the base model's tensors without it, everything else)."""
    words = [n for n in state if n.endswith("embeddings.word_embeddings.weight")]
    if len(words) != 1:
        raise ValueError(f"model.safetensors has {len(words)} word embedding tables")
    prefix = words[0][:-len("embeddings.word_embeddings.weight")]
    base, extras = {}, {}
    for name, tensor in state.items():
        rest = name[len(prefix):] if name.startswith(prefix) else None
        if rest is not None and rest != "embeddings.position_ids" and \
                rest.split(".")[0] in ("embeddings", "encoder"):
            base[rest] = tensor.float()
        elif name != prefix + "embeddings.position_ids":
            # pooler, a task head: written back unchanged; the position_ids
            # buffer of older checkpoints is left out (the server ignores it).
            extras[name] = tensor
    return prefix, base, extras


def load(path, attention=None, extras=None):
    """Encoder with `path`'s weights (float32); `attention` (config.json's
    attention fields) replaces the folder's. The tensors it does not
    compute go into `extras` (name as stored -> tensor)."""
    folder = Folder(path)
    if attention is not None:
        folder.overlay = dict(folder.overlay, attention=attention)
        folder.config.kernel = attention["kernel"]
        folder.config.num_random_features = attention["num_random_features"]
        folder.config.projection_seed = attention["projection_seed"]
        folder.config.feature_epsilon = attention["feature_epsilon"]
    encoder = Encoder(folder)
    state = export_state_dict.read_safetensors(os.path.join(path, "model.safetensors"))
    prefix, base, rest = _split(state)
    encoder.prefix = prefix
    if extras is not None:
        extras.update(rest)
    missing, unexpected = encoder.load_state_dict(base, strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: weights this tool does not compute: "
                         f"missing {missing}, unexpected {unexpected}")
    return encoder


def write(student, teacher_path, output, attention, version, extras, dtype):
    """The teacher's folder with the student's weights (the teacher's names)
    and favor.json (the teacher's overlay, the student's attention and
    version); the teacher's README.md is kept (the card is DISTILLED.md)."""
    os.makedirs(output, exist_ok=True)
    for name in os.listdir(teacher_path):
        source = os.path.join(teacher_path, name)
        if name in ("model.safetensors", OVERLAY, "training.json", "DISTILLED.md"):
            continue
        target = os.path.join(output, name)
        if os.path.isdir(source):
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy(source, target)
    state = {student.prefix + k: v.detach().cpu() for k, v in student.state_dict().items()}
    state.update({k: v.float() for k, v in extras.items()})
    export_state_dict.write_safetensors(os.path.join(output, "model.safetensors"),
                                        state, dtype)
    overlay = dict(student.folder.overlay, version=version,
                   attention=dict(attention, orthogonal=True, row_norm="chi"))
    with open(os.path.join(output, OVERLAY), "w", encoding="utf-8") as f:
        json.dump(overlay, f, indent=1)
        f.write("\n")
