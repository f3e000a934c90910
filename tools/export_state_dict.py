#!/usr/bin/env python3
"""Exports a PyTorch state dict as a Favor model folder.

    export_state_dict.py --state-dict weights.pt --config base.json \
        --output models/my-model [--dtype float32|float16|bfloat16]

writes `models/my-model/config.json` and `models/my-model/model.safetensors`
in the format docs/models.md describes. Needs only `torch` (Debian's
python3-torch); the safetensors file is written here, without the
`safetensors` package.

Names the exporter understands (docs/models.md, "model.safetensors"):

- Favor's own names (BERT's, plus `encoder.latents`, `pooler.query`,
  `...attention.self.projection`, `encoder.final_norm.*`, ...) pass through.
- Hugging Face BERT checkpoints: a task model's `bert.` prefix is stripped,
  its heads (`cls.*`, `classifier.*`, `qa_outputs.*`) and the
  `embeddings.position_ids` buffer are dropped.
- `torch.nn.TransformerEncoder` stacks: `<p>layers.N.self_attn.in_proj_*`
  (fused query|key|value), `self_attn.out_proj`, `linear1`, `linear2`,
  `norm1`, `norm2` become `encoder.layer.N.attention.self.{query,key,value}`,
  `attention.output.dense`, `intermediate.dense`, `output.dense`,
  `attention.output.LayerNorm` and `output.LayerNorm`; the stack's final
  norm `<p>norm.*` becomes `encoder.final_norm.*`. Layers built with
  norm_first=True need "norm_placement": "pre" in the config. Embeddings
  are not part of such a stack: give them Favor's names in the same dict.

The config is the --config JSON (Favor's fields, docs/models.md); shape
fields it leaves out (vocab_size, hidden_size, num_hidden_layers,
intermediate_size, max_position_embeddings, type_vocab_size,
num_latents, num_inducing_points) are read off the weights.
num_attention_heads cannot be, and must be given. The C++ loader
(`favor-model inspect DIR`) checks the result against the config.
"""

import argparse
import collections
import json
import os
import re
import struct
import sys

import torch

_DTYPES = {
    torch.float32: ("F32", 4),
    torch.float16: ("F16", 2),
    torch.bfloat16: ("BF16", 2),
}

_TORCH_LAYER = re.compile(r"^(.*?)layers\.(\d+)\.(.+)$")
_TORCH_LAYER_NAMES = {
    "self_attn.out_proj.weight": "attention.output.dense.weight",
    "self_attn.out_proj.bias": "attention.output.dense.bias",
    "linear1.weight": "intermediate.dense.weight",
    "linear1.bias": "intermediate.dense.bias",
    "linear2.weight": "output.dense.weight",
    "linear2.bias": "output.dense.bias",
    "norm1.weight": "attention.output.LayerNorm.weight",
    "norm1.bias": "attention.output.LayerNorm.bias",
    "norm2.weight": "output.LayerNorm.weight",
    "norm2.bias": "output.LayerNorm.bias",
}
_DROPPED_PREFIXES = ("cls.", "classifier.", "qa_outputs.")
_DROPPED_NAMES = ("embeddings.position_ids",)


class ExportError(Exception):
    """A state dict or config the exporter cannot turn into a Favor model."""


def _torch_encoder_prefix(state_dict):
    """The prefix of a torch.nn.TransformerEncoder's 'layers.N.' names."""
    prefixes = set()
    for name in state_dict:
        match = _TORCH_LAYER.match(name)
        if match and match.group(3).startswith("self_attn.in_proj_"):
            prefixes.add(match.group(1))
    if len(prefixes) > 1:
        raise ExportError(f"several TransformerEncoder stacks: {sorted(prefixes)}")
    return prefixes.pop() if prefixes else None


def _convert_torch_layer(layer, rest, tensor, out):
    base = f"encoder.layer.{layer}."
    if rest in ("self_attn.in_proj_weight", "self_attn.in_proj_bias"):
        kind = "weight" if rest.endswith("weight") else "bias"
        query, key, value = tensor.chunk(3, dim=0)
        for part, piece in (("query", query), ("key", key), ("value", value)):
            out[f"{base}attention.self.{part}.{kind}"] = piece
        return
    if rest not in _TORCH_LAYER_NAMES:
        raise ExportError(
            f"unsupported TransformerEncoderLayer tensor 'layers.{layer}.{rest}' "
            "(separate q/k/v projections, kdim/vdim, are not supported)")
    out[base + _TORCH_LAYER_NAMES[rest]] = tensor


def convert_state_dict(state_dict):
    """Maps a state dict's names to Favor's (see the module docstring)."""
    prefix = _torch_encoder_prefix(state_dict)
    out = collections.OrderedDict()
    for name, tensor in state_dict.items():
        if prefix is not None and name.startswith(prefix):
            match = _TORCH_LAYER.match(name)
            if match and match.group(1) == prefix:
                _convert_torch_layer(int(match.group(2)), match.group(3), tensor, out)
                continue
            if name in (prefix + "norm.weight", prefix + "norm.bias"):
                out["encoder.final_norm." + name.rsplit(".", 1)[1]] = tensor
                continue
        if name.startswith("bert."):
            name = name[len("bert."):]
        if name.startswith(_DROPPED_PREFIXES) or name in _DROPPED_NAMES:
            continue
        if name in out:
            raise ExportError(f"two tensors map to '{name}'")
        out[name] = tensor
    return out


def _shape_of(tensors, name, axis):
    return tensors[name].shape[axis] if name in tensors else None


def complete_config(config, tensors):
    """The config with shape fields read off the weights where absent."""
    config = dict(config)
    layers = {int(m.group(1)) for m in
              (re.match(r"^encoder\.layer\.(\d+)\.", n) for n in tensors) if m}
    inferred = {
        "vocab_size": _shape_of(tensors, "embeddings.word_embeddings.weight", 0),
        "hidden_size": _shape_of(tensors, "embeddings.word_embeddings.weight", 1),
        "num_hidden_layers": (max(layers) + 1) if layers else None,
        "intermediate_size": _shape_of(
            tensors, "encoder.layer.0.intermediate.dense.weight", 0),
        "max_position_embeddings": _shape_of(
            tensors, "embeddings.position_embeddings.weight", 0),
        "type_vocab_size": _shape_of(
            tensors, "embeddings.token_type_embeddings.weight", 0) or 0,
        "num_latents": _shape_of(tensors, "encoder.latents", 0),
        "num_inducing_points": _shape_of(
            tensors, "encoder.layer.0.inducing_points", 0),
    }
    for field, value in inferred.items():
        if value is not None:
            config.setdefault(field, int(value))
    if "num_attention_heads" not in config:
        raise ExportError("the config must give num_attention_heads "
                          "(the weights do not show it)")
    return config


def _tensor_bytes(tensor, dtype):
    tensor = tensor.detach().to("cpu", dtype).contiguous()
    if dtype == torch.float32:
        return tensor.numpy().astype("<f4").tobytes()
    # numpy has no bfloat16: write the 16-bit patterns.
    return tensor.view(torch.int16).numpy().astype("<i2").tobytes()


def write_safetensors(path, tensors, dtype=torch.float32, metadata=None):
    """Writes `tensors` (name -> tensor) as a safetensors file, atomically.

    The header is padded with spaces to a multiple of 8 bytes; tensors are
    stored in name order, all in `dtype`, so each is aligned.
    """
    if dtype not in _DTYPES:
        raise ExportError(f"unsupported dtype {dtype}")
    tag, size = _DTYPES[dtype]
    header = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    names = sorted(tensors)
    for name in names:
        count = tensors[name].numel()
        header[name] = {"dtype": tag, "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + count * size]}
        offset += count * size
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    temporary = path + ".tmp"
    with open(temporary, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name in names:
            out.write(_tensor_bytes(tensors[name], dtype))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def read_safetensors(path):
    """The tensors of a safetensors file (name -> tensor in its stored
    dtype): the inverse of write_safetensors, for F32, F16 and BF16 (and
    I64, which Hugging Face checkpoints use for a position_ids buffer)."""
    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
              "I64": torch.int64}
    with open(path, "rb") as f:
        blob = f.read()
    size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + size])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in dtypes:
            raise ExportError(f"tensor '{name}' is {entry['dtype']}")
        begin, end = entry["data_offsets"]
        raw = bytearray(blob[8 + size + begin:8 + size + end])
        out[name] = torch.frombuffer(raw, dtype=dtypes[entry["dtype"]]).view(
            entry["shape"]).clone()
    return out


def export(state_dict, config, output, dtype=torch.float32):
    """Writes `output`/config.json and model.safetensors; returns the config."""
    tensors = convert_state_dict(state_dict)
    for name, tensor in tensors.items():
        if not torch.is_floating_point(tensor):
            raise ExportError(f"tensor '{name}' is {tensor.dtype}, not floating point")
    config = complete_config(config, tensors)
    os.makedirs(output, exist_ok=True)
    write_safetensors(os.path.join(output, "model.safetensors"), tensors, dtype)
    temporary = os.path.join(output, "config.json.tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(config, out, indent=2)
        out.write("\n")
    os.replace(temporary, os.path.join(output, "config.json"))
    return config


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-dict", required=True,
                        help="file saved with torch.save(module.state_dict())")
    parser.add_argument("--config", required=True,
                        help="JSON with Favor config fields (docs/models.md)")
    parser.add_argument("--output", required=True, help="model folder to write")
    parser.add_argument("--dtype", default="float32",
                        choices=["float32", "float16", "bfloat16"])
    args = parser.parse_args(argv)
    try:
        state_dict = torch.load(args.state_dict, map_location="cpu")
        if not isinstance(state_dict, dict):
            raise ExportError(f"{args.state_dict} holds a {type(state_dict).__name__}, "
                              "not a state dict")
        with open(args.config, encoding="utf-8") as f:
            config = json.load(f)
        export(state_dict, config, args.output, getattr(torch, args.dtype))
    except (ExportError, OSError, ValueError) as error:
        print(f"export_state_dict: {error}", file=sys.stderr)
        return 1
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
