#!/usr/bin/env python3
"""Reference outputs for the C++ encoder, from an independent implementation.

    parity_reference.py --output DIR [--only CASE ...]

For every case of parity/cases.py (one per value of each axis of the model
config, plus the interactions that matter) it draws random weights, exports
them through tools/export_state_dict.py into DIR/repository/<case>/, runs
every test sequence through the reference alone (batch of one, float64,
from the exported float32 weights) and writes the outputs to
DIR/expected/<case>.json for model_parity_test.cc, which runs the same sequences
packed into one call through the C++ encoder and compares.

The reference (parity/) is the forward pass of docs/models.md written from
the formulas with PyTorch's functional layers; attention is
tests/attention/kernel_reference.py's transcription of each kernel's paper
plus the C++'s documented stabilisers (parity/attention.py); projections
are stored in the file or drawn from the seed by
tests/attention/projection_reference.py. Before any case, parity/self_check.py
holds the reference to torch.nn.TransformerEncoder and
torch.nn.MultiheadAttention and to the formulas' known properties.

DIR/cases.json lists the cases written, by group. DIR/expected/<case>.json holds
token_ids, offsets and "case": "tokens" (each sequence's
output vectors), "mean", "cls", "attention" (one vector per sequence), the
same with "_normalized", and "default" (each sequence's rows with the
config's own pooling and normalize, what an Embed call without options
returns).
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity import cases  # noqa: E402
from parity import encoder  # noqa: E402
from parity import self_check  # noqa: E402
from parity import weights  # noqa: E402


def pooled_outputs(config, outputs, query):
    result = {}
    for pooling in ("mean", "cls", "attention"):
        vectors = [encoder.pool(y, pooling, query) for y in outputs]
        result[pooling] = [v.tolist() for v in vectors]
        result[pooling + "_normalized"] = [
            encoder.l2_normalised(v).tolist() for v in vectors]
    default = []
    for y in outputs:
        rows = encoder.pool(y, config["pooling"], query).reshape(-1, y.shape[1])
        default.append((encoder.l2_normalised(rows) if config["normalize"]
                        else rows).tolist())
    result["default"] = default
    return result


def check_floor(name, reference, options):
    stats = reference.stats
    if not stats.rows:
        return
    share = stats.floored / stats.rows
    print(f"{name}: ScaleNorm's floor divides {stats.floored} of "
          f"{stats.rows} rows")
    if options["floor"] and not 0 < share < 1:
        sys.exit(f"{name}: the case must floor some rows and not others")
    if not options["floor"] and stats.floored:
        sys.exit(f"{name}: ScaleNorm's floor is active where it should not be")


def run_case(index, name, config, options, sequences, output):
    model, projections = weights.make_model(config, 20240501 + index,
                                            options["stored"],
                                            options["query_key_scale"])
    weights.export(config, model, os.path.join(output, "repository", name),
                   options["torch_names"])
    reference = encoder.Reference(config, model, projections)
    with torch.no_grad():
        outputs = [reference.forward(ids) for ids in sequences]
    check_floor(name, reference, options)
    case = {"model": name, "tokens": [y.tolist() for y in outputs]}
    case.update(pooled_outputs(config, outputs, model["pooler.query"]))
    return case


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True)
    parser.add_argument("--only", nargs="*", help="cases to write (default all)")
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    self_check.run()
    gen = torch.Generator().manual_seed(20240501)
    sequences = [torch.randint(0, cases.VOCAB, (n,), generator=gen).tolist()
                 for n in cases.LENGTHS]
    results, groups = {}, {}
    for index, (group, name, config, options) in enumerate(cases.case_table()):
        if args.only and name not in args.only:
            continue
        results[name] = run_case(index, name, config, options, sequences,
                                 args.output)
        groups.setdefault(group, []).append(name)
    offsets = [0]
    for ids in sequences:
        offsets.append(offsets[-1] + len(ids))
    token_ids = [t for ids in sequences for t in ids]
    # One file per case: each test process reads only its own.
    os.makedirs(os.path.join(args.output, "expected"), exist_ok=True)
    for name, case in results.items():
        with open(os.path.join(args.output, "expected", name + ".json"), "w") as out:
            json.dump({"token_ids": token_ids, "offsets": offsets, "case": case}, out)
    with open(os.path.join(args.output, "cases.json"), "w") as out:
        json.dump(groups, out)
    print(f"wrote {len(results)} cases to {args.output}")


if __name__ == "__main__":
    main()
