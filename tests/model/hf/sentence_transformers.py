"""sentence-transformers' Pooling and Normalize modules (models/Pooling.py,
models/Normalize.py) on one sequence's token vectors, no padding."""

import torch
import torch.nn.functional as F


def pool(tokens, mode):
    if mode == "cls":
        return tokens[0]
    if mode == "mean":
        return tokens.sum(0) / max(tokens.shape[0], 1e-9)
    if mode == "max":
        return tokens.max(0).values
    if mode == "lasttoken":
        return tokens[-1]
    raise ValueError(f"pooling {mode}")


def normalize(vector):
    return F.normalize(vector, p=2, dim=0)


def pooling_config(mode, hidden):
    keys = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
            "max": "pooling_mode_max_tokens", "lasttoken": "pooling_mode_lasttoken"}
    config = {"word_embedding_dimension": hidden}
    for key in ("pooling_mode_cls_token", "pooling_mode_mean_tokens",
                "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"):
        config[key] = key == keys[mode]
    config["include_prompt"] = True
    return config


def modules(normalized):
    listed = [
        {"idx": 0, "name": "0", "path": "",
         "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
    ]
    if normalized:
        listed.append({"idx": 2, "name": "2", "path": "2_Normalize",
                       "type": "sentence_transformers.models.Normalize"})
    return listed
