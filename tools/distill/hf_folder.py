"""Hugging Face BERT-family folders (BertModel, RobertaModel,
XLMRobertaModel, NomicBertModel and their task models) as tools/distill
reads and writes them, computing what favor-server computes for such a
folder (server/model/hf/bert.cc, roberta.cc, nomic_bert.cc,
sentence_transformers.cc, model_folder.cc; docs/models.md "Hugging Face
folders"):

  - embeddings: word + absolute position + token type 0, then LayerNorm;
    positions from 0 (BERT), or numbered after the padding id (RoBERTa,
    XLM-R: a padding token takes pad_token_id, the others pad_token_id + 1,
    + 2, ...), so the longest input is pad_token_id + 1 shorter than the
    table;
  - post-LN layers with the exact (erf) GELU: tools/train_default/model.py's
    Layer, whose FAVOR+ / FAVOR++ / softmax attention and projection draw
    (projection_seed + layer) are the server's; no rotary;
  - NomicBERT: word + token type 0 (when the folder has token types), then
    emb_ln; post-norm layers under nomic's names (one fused Wqkv, rotary
    on whole heads in the rotate-half form, positions from 0; out_proj;
    fc2(fc11(x) · act(fc12(x))) for SwiGLU / GeGLU, else fc2(act(fc1(x)));
    norm1, norm2), biases where the file has them, the same attention
    functions; the server's limit is max_trained_positions;
  - ModernBERT: tok_embeddings, then embeddings.norm; pre-norm layers under
    its names (layer 0 without attn_norm; one fused Wqkv; rotary with the
    global base on global layers and the local base on the others; global
    layers every global_attn_every_n_layers from layer 0 take the student's
    kernel, the local ones stay exact softmax within local_attention / 2
    positions under any kernel, as modernbert.cc; Wo; mlp_norm, then
    Wo(act(Wi₁ x) · Wi₂ x)); final_norm; norms and linears with biases
    where norm_bias / attention_bias say; the limit is
    max_position_embeddings;
  - the pooling and normalisation of sentence-transformers' files
    (1_Pooling/config.json, a Normalize module in modules.json), else mean
    pooling, not normalised; favor.json may override both;
  - the attention: softmax as trained, or favor.json's "attention".

A student is written as the teacher's folder with its weights (under the
same names, the task prefix and head kept) and a favor.json naming the
student's attention, which favor-server already reads. A rotary student's
favor.json also lifts the length limit to Favor's own (2^20 tokens, as the
default model's): rotary has no table to run out of, and FAVOR+ reads such
lengths in linear time; the teacher's limit was its exact attention's.
"""

import json
import math
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
MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "nomic_bert", "modernbert")
# Favor's own limit for models without a position table (model_config.h).
ROTARY_MAX_SEQUENCE_LENGTH = 1 << 20
# The activations nomic_bert.cc maps: name -> (gated, F.gelu's approximate
# or "silu").
NOMIC_ACTIVATIONS = {"swiglu": (True, "silu"), "geglu": (True, "none"),
                     "gelu": (False, "none"), "gelu_new": (False, "tanh"),
                     "gelu_fast": (False, "tanh"),
                     "gelu_pytorch_tanh": (False, "tanh")}
# ModernBERT's hidden_activation -> F.gelu's approximate, or "silu".
MODERNBERT_ACTIVATIONS = {"gelu": "none", "gelu_new": "tanh",
                          "gelu_pytorch_tanh": "tanh", "silu": "silu", "swish": "silu"}
OVERLAY = "favor.json"
POOLING_MODES = (("pooling_mode_cls_token", "cls"), ("pooling_mode_mean_tokens", "mean"),
                 ("pooling_mode_max_tokens", "max"), ("pooling_mode_lasttoken", "last_token"))


def _attention_fields(attention):
    """model.Config's attention fields from favor.json's "attention"
    (softmax, as trained, when it names none)."""
    return {"kernel": attention.get("kernel", "softmax"),
            "num_random_features": attention.get("num_random_features", 256),
            "projection_seed": attention.get("projection_seed", 0),
            "feature_epsilon": attention.get("feature_epsilon", 1e-4)}


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
                             f"{', '.join(MODEL_TYPES)} folders")
        self.overlay = _read_json(os.path.join(path, OVERLAY), {})
        self.pooling, self.normalize = "mean", False
        self._read_sentence_transformers()
        self.pooling = self.overlay.get("pooling", self.pooling)
        self.normalize = self.overlay.get("normalize", self.normalize)
        attention = self.overlay.get("attention", {})
        for key, value in (("orthogonal", True), ("row_norm", "chi"),
                           ("simplex", False), ("causal", False)):
            if attention.get(key, value) != value:
                raise ValueError(f"favor.json attention {key} {attention[key]!r}: "
                                 f"only {value!r} is supported")
        if self.model_type == "nomic_bert":
            self._read_nomic(c, attention)
        elif self.model_type == "modernbert":
            self._read_modernbert(c, attention)
        else:
            self._read_bert(c, attention)
        self.max_sequence_length = self.overlay.get("max_sequence_length",
                                                    self.max_sequence_length)
        self.config.max_sequence_length = self.max_sequence_length

    def _read_bert(self, c, attention):
        self.architecture = "bert"
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
        self.config = favor_model.Config(
            vocab_size=c.get("vocab_size", 30522), hidden_size=c.get("hidden_size", 768),
            num_hidden_layers=c.get("num_hidden_layers", 12),
            num_attention_heads=c.get("num_attention_heads", 12),
            intermediate_size=c.get("intermediate_size", 3072),
            layer_norm_eps=c.get("layer_norm_eps", 1e-12),
            type_vocab_size=c.get("type_vocab_size", 2),
            **_attention_fields(attention),
            position_embedding_type="absolute",
            max_sequence_length=self.max_sequence_length)
        self.config.max_position_embeddings = positions

    def _read_nomic(self, c, attention):
        """NomicBertConfig's fields as nomic_bert.cc reads them (GPT-2's
        names, nomic's defaults); what it refuses, refused here too."""
        self.architecture = "nomic"
        self.after_padding = False
        for key, value in (("prenorm", False), ("parallel_block", False),
                           ("use_rms_norm", False), ("causal", False),
                           ("rotary_emb_interleaved", False),
                           ("rotary_emb_scale_base", None),
                           ("rotary_scaling_factor", None),
                           ("rotary_emb_fraction", 1)):
            if c.get(key, value) != value:
                raise ValueError(f"{key} {c[key]!r}: only {value!r} is supported"
                                 + (" (a learned position table is not read yet)"
                                    if key == "rotary_emb_fraction" else ""))
        act = c.get("activation_function", "gelu_new")
        if act not in NOMIC_ACTIVATIONS:
            raise ValueError(f"activation_function {act!r}: only "
                             f"{', '.join(NOMIC_ACTIVATIONS)} are supported")
        self.gated, self.activation = NOMIC_ACTIVATIONS[act]
        biases = {c.get(k, True) for k in ("qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias")}
        if len(biases) != 1:
            raise ValueError("qkv_proj_bias, mlp_fc1_bias and mlp_fc2_bias differ; "
                             "Favor runs biases in all linear layers or in none")
        self.bias = biases.pop()
        h = c.get("n_embd", 768)
        multiple = c.get("pad_vocab_size_multiple", 1)
        vocab = c.get("vocab_size", 50257)
        fallback = (8 * h // 3 + 255) // 256 * 256 if self.gated else 4 * h
        self.pad_token_id = c.get("pad_token_id", 0)
        self.max_sequence_length = c.get("max_trained_positions", 2048)
        self.config = favor_model.Config(
            vocab_size=(vocab + multiple - 1) // multiple * multiple, hidden_size=h,
            num_hidden_layers=c.get("n_layer", 12),
            num_attention_heads=c.get("n_head", 12),
            intermediate_size=c.get("n_inner") or fallback,
            layer_norm_eps=c.get("layer_norm_epsilon", 1e-5),
            rotary_base=float(c.get("rotary_emb_base", 10000)),
            type_vocab_size=c.get("type_vocab_size", 2),
            **_attention_fields(attention),
            position_embedding_type="rotary",
            max_sequence_length=self.max_sequence_length)

    def _read_modernbert(self, c, attention):
        """ModernBertConfig's fields as modernbert.cc reads them."""
        self.architecture = "modernbert"
        self.after_padding = False
        act = c.get("hidden_activation", "gelu")
        if act not in MODERNBERT_ACTIVATIONS:
            raise ValueError(f"hidden_activation {act!r}: only "
                             f"{', '.join(MODERNBERT_ACTIVATIONS)} are supported")
        self.activation = MODERNBERT_ACTIVATIONS[act]
        if c.get("rope_scaling") is not None:
            raise ValueError("rope_scaling: only rotary with a fixed base is supported")
        if c.get("attention_bias", False) != c.get("mlp_bias", False):
            raise ValueError("attention_bias differs from mlp_bias; Favor runs "
                             "biases in all linear layers or in none")
        self.bias = c.get("attention_bias", False)
        self.norm_bias = c.get("norm_bias", False)
        layers = c.get("num_hidden_layers", 22)
        self.global_every = c.get("global_attn_every_n_layers", 3)
        if self.global_every < 1:
            raise ValueError("global_attn_every_n_layers must be at least 1")
        types = c.get("layer_types")
        if types:
            expected = ["full_attention" if i % self.global_every == 0
                        else "sliding_attention" for i in range(layers)]
            if types != expected:
                raise ValueError(f"layer_types {types}: Favor runs full attention "
                                 f"every {self.global_every} layers from layer 0")
        self.window = c.get("local_attention", 128)
        rope = c.get("rope_parameters") or {}

        def theta(kind, legacy, fallback):
            params = rope.get(kind) or {}
            if params.get("rope_type", "default") != "default":
                raise ValueError(f"rope_parameters {kind}: only rotary with a "
                                 "fixed base is supported")
            return float(params.get("rope_theta", c.get(legacy, fallback)))

        self.local_rotary_base = theta("sliding_attention", "local_rope_theta", 10000.0)
        self.pad_token_id = c.get("pad_token_id", 50283)
        self.max_sequence_length = c.get("max_position_embeddings", 8192)
        self.config = favor_model.Config(
            vocab_size=c.get("vocab_size", 50368), hidden_size=c.get("hidden_size", 768),
            num_hidden_layers=layers,
            num_attention_heads=c.get("num_attention_heads", 12),
            intermediate_size=c.get("intermediate_size", 1152),
            layer_norm_eps=c.get("norm_eps", 1e-5),
            rotary_base=theta("full_attention", "global_rope_theta", 160000.0),
            type_vocab_size=0,
            **_attention_fields(attention),
            position_embedding_type="rotary",
            max_sequence_length=self.max_sequence_length)

    def _read_sentence_transformers(self):
        modules = _read_json(os.path.join(self.path, "modules.json"))
        for module in modules or ():
            kind = module.get("type", "").rsplit(".", 1)[-1]
            if kind == "Normalize":
                self.normalize = True
            if kind == "Pooling":
                pooling = _read_json(os.path.join(self.path, module.get("path", ""),
                                                  "config.json"), {})
                chosen = [name for key, name in POOLING_MODES if pooling.get(key)]
                if len(chosen) != 1:
                    raise ValueError(f"{self.path}: pooling {pooling} is not one "
                                     "that Favor runs")
                self.pooling = chosen[0]

    def tokenizer_files(self):
        return [n for n in ("tokenizer.json", "vocab.txt") if
                os.path.exists(os.path.join(self.path, n))]


class NomicLayer(nn.Module):
    """NomicBertBlock (post-norm) under nomic's names, with the attention of
    model.py (the server's kernels and projection draw)."""

    def __init__(self, folder, index):
        super().__init__()
        config = self.config = folder.config
        h, inner, bias = config.hidden_size, config.intermediate_size, folder.bias
        self.gated, self.activation = folder.gated, folder.activation
        self.attn = nn.Module()
        self.attn.Wqkv = nn.Linear(h, 3 * h, bias=bias)
        self.attn.out_proj = nn.Linear(h, h, bias=bias)
        self.mlp = nn.Module()
        if self.gated:
            self.mlp.fc11 = nn.Linear(h, inner, bias=bias)
            self.mlp.fc12 = nn.Linear(h, inner, bias=bias)
        else:
            self.mlp.fc1 = nn.Linear(h, inner, bias=bias)
        self.mlp.fc2 = nn.Linear(inner, h, bias=bias)
        self.norm1 = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.norm2 = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.register_buffer("w", favor_model.projection(config, index), persistent=False)

    def forward(self, x, keep, cos, sin):
        c = self.config
        b, length, _ = x.shape
        # Wqkv's rows are (three, heads, head_dim): query, key, value.
        qkv = self.attn.Wqkv(x).view(b, length, 3, c.num_attention_heads, c.head_dim)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        q, k = favor_model.rotate(q, cos, sin), favor_model.rotate(k, cos, sin)
        a = favor_model.attend(c, q, k, v, self.w, keep).transpose(1, 2)
        a = a.reshape(b, length, c.hidden_size).to(x.dtype)
        h = self.norm1(self.attn.out_proj(a) + x)
        if self.gated:
            up = self.mlp.fc12(h)
            up = F.silu(up) if self.activation == "silu" else F.gelu(up)
            y = self.mlp.fc11(h) * up
        else:
            y = F.gelu(self.mlp.fc1(h), approximate=self.activation)
        return self.norm2(self.mlp.fc2(y) + h)


class Norm(nn.Module):
    """LayerNorm with or without a bias (ModernBERT's have none; this
    torch's nn.LayerNorm always has one)."""

    def __init__(self, size, eps, bias):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


class ModernBertLayer(nn.Module):
    """ModernBertEncoderLayer (pre-norm) under its names; global layers take
    the configured kernel, local ones exact softmax within the window."""

    def __init__(self, folder, index):
        super().__init__()
        config = self.config = folder.config
        h, inner, bias = config.hidden_size, config.intermediate_size, folder.bias
        self.activation = folder.activation
        self.is_global = index % folder.global_every == 0
        self.half_window = folder.window // 2
        if index > 0:
            self.attn_norm = Norm(h, config.layer_norm_eps, folder.norm_bias)
        self.attn = nn.Module()
        self.attn.Wqkv = nn.Linear(h, 3 * h, bias=bias)
        self.attn.Wo = nn.Linear(h, h, bias=bias)
        self.mlp_norm = Norm(h, config.layer_norm_eps, folder.norm_bias)
        self.mlp = nn.Module()
        self.mlp.Wi = nn.Linear(h, 2 * inner, bias=bias)
        self.mlp.Wo = nn.Linear(inner, h, bias=bias)
        self.register_buffer("w", favor_model.projection(config, index), persistent=False)

    def forward(self, x, keep, tables):
        c = self.config
        b, length, _ = x.shape
        normed = self.attn_norm(x) if hasattr(self, "attn_norm") else x
        qkv = self.attn.Wqkv(normed).view(b, length, 3, c.num_attention_heads, c.head_dim)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        cos, sin = tables["global" if self.is_global else "local"]
        q, k = favor_model.rotate(q, cos, sin), favor_model.rotate(k, cos, sin)
        if self.is_global:
            a = favor_model.attend(c, q, k, v, self.w, keep)
        else:
            a = self.local_attention(q, k, v, keep)
        a = a.transpose(1, 2).reshape(b, length, c.hidden_size).to(x.dtype)
        x = x + self.attn.Wo(a)
        inner, gate = self.mlp.Wi(self.mlp_norm(x)).chunk(2, dim=-1)
        inner = (F.silu(inner) if self.activation == "silu"
                 else F.gelu(inner, approximate=self.activation))
        return x + self.mlp.Wo(inner * gate)


    def local_attention(self, q, k, v, keep):
        """Exact softmax over the kept keys within half the window of each
        query, in float32; a padding row attends to itself (it has perhaps
        no kept key near it), so that no NaN reaches the sums that mask it."""
        with torch.autocast(q.device.type, enabled=False):
            q, k, v = q.float(), k.float(), v.float()
            rows = torch.arange(q.shape[-2], device=q.device)
            near = (rows[:, None] - rows[None, :]).abs() <= self.half_window
            allowed = (keep[:, None, None, :] & near) | torch.eye(
                len(rows), dtype=torch.bool, device=q.device)
            scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
            return torch.softmax(scores.masked_fill(~allowed, -math.inf), -1) @ v


class Encoder(nn.Module):
    """The base model under the folder's names; forward_all as
    model.Encoder's (pooled: the folder's pooling, L2-normalised, for the
    objective)."""

    def __init__(self, folder):
        super().__init__()
        self.folder = folder
        config = self.config = folder.config
        h = config.hidden_size
        self.embeddings = nn.Module()
        if folder.architecture == "modernbert":
            self.embeddings.tok_embeddings = nn.Embedding(config.vocab_size, h)
            self.embeddings.norm = Norm(h, config.layer_norm_eps, folder.norm_bias)
            self.layers = nn.ModuleList(
                ModernBertLayer(folder, i) for i in range(config.num_hidden_layers))
            self.final_norm = Norm(h, config.layer_norm_eps, folder.norm_bias)
            return
        self.embeddings.word_embeddings = nn.Embedding(config.vocab_size, h)
        self.encoder = nn.Module()
        if folder.architecture == "nomic":
            if config.type_vocab_size > 0:
                self.embeddings.token_type_embeddings = nn.Embedding(
                    config.type_vocab_size, h)
            self.emb_ln = nn.LayerNorm(h, eps=config.layer_norm_eps)
            self.encoder.layers = nn.ModuleList(
                NomicLayer(folder, i) for i in range(config.num_hidden_layers))
            return
        self.embeddings.position_embeddings = nn.Embedding(config.max_position_embeddings, h)
        self.embeddings.token_type_embeddings = nn.Embedding(config.type_vocab_size, h)
        self.embeddings.LayerNorm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.encoder.layer = nn.ModuleList(
            favor_model.Layer(config, i) for i in range(config.num_hidden_layers))

    def position_ids(self, ids, keep):
        if not self.folder.after_padding:
            return torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        pad = self.folder.pad_token_id
        real = ((ids != pad) & keep).long()
        return torch.cumsum(real, 1) * real + pad

    def forward_all(self, ids, keep):
        if self.folder.architecture == "nomic":
            return self._forward_nomic(ids, keep)
        if self.folder.architecture == "modernbert":
            return self._forward_modernbert(ids, keep)
        e = self.embeddings
        x = e.LayerNorm(e.word_embeddings(ids) +
                        e.position_embeddings(self.position_ids(ids, keep)) +
                        e.token_type_embeddings.weight[0])
        hidden = [x]
        for layer in self.encoder.layer:
            x = layer(x, keep, None, None)
            hidden.append(x)
        return F.normalize(self.pool(x, keep), dim=-1, eps=1e-12), hidden

    def _forward_nomic(self, ids, keep):
        e, c = self.embeddings, self.config
        x = e.word_embeddings(ids)
        if c.type_vocab_size > 0:
            x = x + e.token_type_embeddings.weight[0]
        x = self.emb_ln(x)
        cos, sin = favor_model.rotary_tables(ids.shape[1], c.head_dim, c.rotary_base)
        cos, sin = cos.to(ids.device), sin.to(ids.device)
        hidden = [x]
        for layer in self.encoder.layers:
            x = layer(x, keep, cos, sin)
            hidden.append(x)
        return F.normalize(self.pool(x, keep), dim=-1, eps=1e-12), hidden

    def _forward_modernbert(self, ids, keep):
        """hidden: the embeddings, each layer's output, the last one after
        final_norm (what is pooled)."""
        e, c = self.embeddings, self.config
        x = e.norm(e.tok_embeddings(ids))
        tables = {}
        for name, base in (("global", c.rotary_base),
                           ("local", self.folder.local_rotary_base)):
            cos, sin = favor_model.rotary_tables(ids.shape[1], c.head_dim, base)
            tables[name] = (cos.to(ids.device), sin.to(ids.device))
        hidden = [x]
        for layer in self.layers:
            x = layer(x, keep, tables)
            hidden.append(x)
        hidden[-1] = self.final_norm(x)
        return F.normalize(self.pool(hidden[-1], keep), dim=-1, eps=1e-12), hidden

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
    tables = ("embeddings.word_embeddings.weight", "embeddings.tok_embeddings.weight")
    words = [n for n in state if n.endswith(tables)]
    if len(words) != 1:
        raise ValueError(f"model.safetensors has {len(words)} word embedding tables")
    prefix = words[0][:-len(next(t for t in tables if words[0].endswith(t)))]
    base, extras = {}, {}
    for name, tensor in state.items():
        rest = name[len(prefix):] if name.startswith(prefix) else None
        if rest is not None and rest != "embeddings.position_ids" and \
                rest.split(".")[0] in ("embeddings", "encoder", "emb_ln", "layers",
                                       "final_norm"):
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
    if student.config.position_embedding_type == "rotary":
        overlay["max_sequence_length"] = max(student.folder.max_sequence_length,
                                             ROTARY_MAX_SEQUENCE_LENGTH)
    with open(os.path.join(output, OVERLAY), "w", encoding="utf-8") as f:
        json.dump(overlay, f, indent=1)
        f.write("\n")
