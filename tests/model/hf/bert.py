"""BertModel and RobertaModel/XLMRobertaModel in float64, transcribed from
Hugging Face transformers' modeling_bert.py and modeling_roberta.py
(BertEmbeddings, BertSelfAttention, BertSelfOutput, BertIntermediate,
BertOutput; RoBERTa's create_position_ids_from_input_ids), one sequence at
a time and without padding, so no attention mask is needed.

`w` maps the base model's weight names (no task prefix) to float64
tensors; `config` is the folder's config.json.
"""

import math

import torch
import torch.nn.functional as F


def activation(name, x):
    if name == "gelu":
        return F.gelu(x)
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu(x)
    raise ValueError(f"activation {name}")


def linear(w, prefix, x):
    bias = w.get(prefix + ".bias")
    return F.linear(x, w[prefix + ".weight"], bias)


def layer_norm(w, prefix, x, eps):
    return F.layer_norm(x, (x.shape[-1],), w[prefix + ".weight"],
                        w.get(prefix + ".bias"), eps)


def position_ids(config, ids):
    """BERT counts from 0; RoBERTa numbers the non-padding tokens from
    padding_idx + 1 and gives padding tokens padding_idx."""
    if config["model_type"] in ("roberta", "xlm-roberta"):
        pad = config["pad_token_id"]
        mask = (ids != pad).long()
        return torch.cumsum(mask, 0) * mask + pad
    return torch.arange(ids.shape[0])


def embeddings(w, config, ids):
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][position_ids(config, ids)]
    # token_type_ids default to zeros.
    x = x + w["embeddings.token_type_embeddings.weight"][0]
    return layer_norm(w, "embeddings.LayerNorm", x, config["layer_norm_eps"])


def self_attention(w, config, prefix, x):
    heads = config["num_attention_heads"]
    n, hidden = x.shape
    d = hidden // heads

    def split(t):
        return t.view(n, heads, d).transpose(0, 1)

    q = split(linear(w, prefix + ".query", x))
    k = split(linear(w, prefix + ".key", x))
    v = split(linear(w, prefix + ".value", x))
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    context = torch.softmax(scores, -1) @ v
    return context.transpose(0, 1).reshape(n, hidden)


def layer(w, config, i, x):
    p = f"encoder.layer.{i}"
    eps = config["layer_norm_eps"]
    context = self_attention(w, config, p + ".attention.self", x)
    attended = layer_norm(w, p + ".attention.output.LayerNorm",
                          linear(w, p + ".attention.output.dense", context) + x,
                          eps)
    inner = activation(config.get("hidden_act", "gelu"),
                       linear(w, p + ".intermediate.dense", attended))
    return layer_norm(w, p + ".output.LayerNorm",
                      linear(w, p + ".output.dense", inner) + attended, eps)


def forward(w, config, ids):
    """The last hidden state, (n, hidden)."""
    x = embeddings(w, config, ids)
    for i in range(config["num_hidden_layers"]):
        x = layer(w, config, i, x)
    return x


def weight_shapes(config):
    """The base model's weights and their shapes, in Hugging Face's names."""
    h = config["hidden_size"]
    inner = config["intermediate_size"]
    shapes = {
        "embeddings.word_embeddings.weight": (config["vocab_size"], h),
        "embeddings.position_embeddings.weight":
            (config["max_position_embeddings"], h),
        "embeddings.token_type_embeddings.weight":
            (config["type_vocab_size"], h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
        "pooler.dense.weight": (h, h),
        "pooler.dense.bias": (h,),
    }
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        for name in ("query", "key", "value"):
            shapes[f"{p}.attention.self.{name}.weight"] = (h, h)
            shapes[f"{p}.attention.self.{name}.bias"] = (h,)
        shapes[f"{p}.attention.output.dense.weight"] = (h, h)
        shapes[f"{p}.attention.output.dense.bias"] = (h,)
        shapes[f"{p}.attention.output.LayerNorm.weight"] = (h,)
        shapes[f"{p}.attention.output.LayerNorm.bias"] = (h,)
        shapes[f"{p}.intermediate.dense.weight"] = (inner, h)
        shapes[f"{p}.intermediate.dense.bias"] = (inner,)
        shapes[f"{p}.output.dense.weight"] = (h, inner)
        shapes[f"{p}.output.dense.bias"] = (h,)
        shapes[f"{p}.output.LayerNorm.weight"] = (h,)
        shapes[f"{p}.output.LayerNorm.bias"] = (h,)
    return shapes
