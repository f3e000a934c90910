#!/usr/bin/env python3
"""Tests of tools/export_state_dict.py (run by ctest with Debian's python3)."""

import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import torch
from torch import nn

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
import export_state_dict as exporter  # noqa: E402


def read_safetensors(path):
    """A minimal independent reader: header, then each tensor's bytes."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = (entry["dtype"], entry["shape"], body[begin:end])
    return length, header, body, tensors


def as_float32(entry):
    dtype, shape, raw = entry
    assert dtype == "F32", dtype
    values = struct.unpack(f"<{len(raw) // 4}f", raw)
    return torch.tensor(values, dtype=torch.float32).reshape(shape)


class ConvertTest(unittest.TestCase):
    def test_torch_encoder_stack_gets_bert_names(self):
        stack = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True),
            2, norm=nn.LayerNorm(8), enable_nested_tensor=False)
        state = {"encoder." + k: v for k, v in stack.state_dict().items()}
        out = exporter.convert_state_dict(state)
        in_proj = state["encoder.layers.1.self_attn.in_proj_weight"]
        self.assertTrue(torch.equal(out["encoder.layer.1.attention.self.query.weight"], in_proj[:8]))
        self.assertTrue(torch.equal(out["encoder.layer.1.attention.self.key.weight"], in_proj[8:16]))
        self.assertTrue(torch.equal(out["encoder.layer.1.attention.self.value.weight"], in_proj[16:]))
        self.assertIn("encoder.layer.0.attention.self.value.bias", out)
        self.assertIn("encoder.layer.0.attention.output.dense.weight", out)
        self.assertIn("encoder.layer.0.intermediate.dense.bias", out)
        self.assertIn("encoder.layer.0.output.dense.weight", out)
        self.assertIn("encoder.layer.0.attention.output.LayerNorm.weight", out)
        self.assertIn("encoder.layer.0.output.LayerNorm.bias", out)
        self.assertIn("encoder.final_norm.weight", out)
        self.assertFalse(any("layers." in name for name in out))

    def test_bert_checkpoint_prefix_heads_and_buffers_are_handled(self):
        state = {
            "bert.embeddings.word_embeddings.weight": torch.zeros(5, 4),
            "bert.embeddings.position_ids": torch.arange(3)[None],
            "cls.predictions.bias": torch.zeros(5),
            "pooler.query": torch.zeros(4),
        }
        out = exporter.convert_state_dict(state)
        self.assertEqual(sorted(out), ["embeddings.word_embeddings.weight", "pooler.query"])

    def test_unsupported_layer_tensor_is_named(self):
        state = {"layers.0.self_attn.in_proj_weight": torch.zeros(12, 4),
                 "layers.0.self_attn.q_proj_weight": torch.zeros(4, 4)}
        with self.assertRaisesRegex(exporter.ExportError, "q_proj_weight"):
            exporter.convert_state_dict(state)

    def test_config_is_completed_from_shapes_but_needs_heads(self):
        tensors = {"embeddings.word_embeddings.weight": torch.zeros(11, 8),
                   "embeddings.position_embeddings.weight": torch.zeros(32, 8),
                   "encoder.layer.0.intermediate.dense.weight": torch.zeros(24, 8),
                   "encoder.layer.2.output.dense.bias": torch.zeros(8)}
        config = exporter.complete_config({"num_attention_heads": 2, "vocab_size": 11}, tensors)
        self.assertEqual(config["hidden_size"], 8)
        self.assertEqual(config["num_hidden_layers"], 3)
        self.assertEqual(config["intermediate_size"], 24)
        self.assertEqual(config["max_position_embeddings"], 32)
        self.assertEqual(config["type_vocab_size"], 0)
        with self.assertRaisesRegex(exporter.ExportError, "num_attention_heads"):
            exporter.complete_config({}, tensors)


class WriteTest(unittest.TestCase):
    def test_safetensors_layout_follows_the_format(self):
        tensors = {"b": torch.arange(6, dtype=torch.float32).reshape(2, 3),
                   "a": torch.tensor([1.5]), "empty": torch.zeros(0, 4)}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.safetensors")
            exporter.write_safetensors(path, tensors)
            length, header, body, read = read_safetensors(path)
        self.assertEqual(length % 8, 0)
        self.assertEqual(header["__metadata__"], {"format": "pt"})
        self.assertTrue(torch.equal(as_float32(read["b"]), tensors["b"]))
        self.assertTrue(torch.equal(as_float32(read["a"]), tensors["a"]))
        self.assertEqual(read["empty"][1], [0, 4])
        # The tensors tile the data buffer: no gap, no overlap, no tail.
        spans = sorted(entry["data_offsets"] for name, entry in header.items()
                       if name != "__metadata__")
        self.assertEqual(spans[0][0], 0)
        for (_, end), (begin, _) in zip(spans, spans[1:]):
            self.assertEqual(end, begin)
        self.assertEqual(spans[-1][1], len(body))

    def test_half_precision_keeps_bit_patterns(self):
        values = torch.tensor([1.0, -2.5, 3.140625])
        with tempfile.TemporaryDirectory() as tmp:
            for dtype, tag in ((torch.float16, "F16"), (torch.bfloat16, "BF16")):
                path = os.path.join(tmp, tag)
                exporter.write_safetensors(path, {"x": values}, dtype)
                _, header, _, read = read_safetensors(path)
                self.assertEqual(header["x"]["dtype"], tag)
                expected = values.to(dtype).view(torch.int16).numpy().astype("<i2").tobytes()
                self.assertEqual(read["x"][2], expected)


class CommandLineTest(unittest.TestCase):
    def test_exports_a_saved_state_dict(self):
        state = {"embeddings.word_embeddings.weight": torch.randn(7, 4),
                 "embeddings.LayerNorm.weight": torch.ones(4)}
        with tempfile.TemporaryDirectory() as tmp:
            torch.save(state, os.path.join(tmp, "sd.pt"))
            with open(os.path.join(tmp, "base.json"), "w") as f:
                json.dump({"num_attention_heads": 1, "_comment": "kept"}, f)
            out = os.path.join(tmp, "model")
            subprocess.run([sys.executable, os.path.join(TOOLS, "export_state_dict.py"),
                            "--state-dict", os.path.join(tmp, "sd.pt"),
                            "--config", os.path.join(tmp, "base.json"), "--output", out],
                           check=True, capture_output=True)
            with open(os.path.join(out, "config.json")) as f:
                config = json.load(f)
            _, _, _, read = read_safetensors(os.path.join(out, "model.safetensors"))
        self.assertEqual(config["vocab_size"], 7)
        self.assertEqual(config["hidden_size"], 4)
        self.assertEqual(config["_comment"], "kept")
        self.assertTrue(torch.equal(as_float32(read["embeddings.word_embeddings.weight"]),
                                    state["embeddings.word_embeddings.weight"]))

    def test_error_is_one_line_and_exit_status_1(self):
        with tempfile.TemporaryDirectory() as tmp:
            torch.save({"x": torch.zeros(2)}, os.path.join(tmp, "sd.pt"))
            with open(os.path.join(tmp, "base.json"), "w") as f:
                json.dump({}, f)
            result = subprocess.run(
                [sys.executable, os.path.join(TOOLS, "export_state_dict.py"),
                 "--state-dict", os.path.join(tmp, "sd.pt"), "--config",
                 os.path.join(tmp, "base.json"), "--output", os.path.join(tmp, "m")],
                capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("num_attention_heads", result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
