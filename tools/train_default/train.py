#!/usr/bin/env python3
"""Trains Favor's default model on text that Debian ships (models/README.md).

    tools/train_default/train.py --favor-model build/server/model/tools/favor-model \
        --tokenizer build/tokenizers/bert-base-uncased/tokenizer.json \
        --work build/train-default --output models/default

(`make train-default` runs exactly this after tools/train_default/setup.sh.)

Contrastive training with in-batch negatives (symmetric InfoNCE, τ = 0.05) on
the training splits of data.py; each batch is one task and holds one pair per
group. Everything is seeded: the same seed, thread count and machine give the
same weights. The model is written in float16 with its config and tokenizer,
through tools/export_state_dict.py.

Every --checkpoint-every steps (100) the run writes a checkpoint (weights,
optimiser, schedule, data order and random states; atomically) to
WORK/checkpoint-VERSION.pt; the same command with --resume continues from
it and ends with the weights a run without a stop would have written.
"""

import argparse
import json
import math
import os
import random
import shutil
import sys
import time

import torch
from torch.nn import functional as F

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(_HERE, ".."))
import data  # noqa: E402
import model as favor_model  # noqa: E402
import tokens  # noqa: E402
from hardware import native_bfloat16  # noqa: E402
import export_state_dict  # noqa: E402

TASK_WEIGHTS = {"debian": 0.55, "wordnet_lemma": 0.2, "wordnet_example": 0.15,
                "man": 0.10}
TOKENIZER_CONFIG = {
    "file": "tokenizer.json", "lowercase": True, "strip_accents": "as_lowercase",
    "handle_chinese_chars": True, "clean_text": True, "unk_token": "[UNK]",
    "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
    "mask_token": "[MASK]", "add_bos": False, "add_eos": False,
}
SCALE = 20.0  # 1/τ


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--favor-model", required=True, help="the favor-model binary")
    p.add_argument("--tokenizer", required=True, help="BERT-uncased tokenizer.json")
    p.add_argument("--work", required=True, help="data and token cache")
    p.add_argument("--output", required=True, help="model folder to write")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--max-query-tokens", type=int, default=32)
    p.add_argument("--max-doc-tokens", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=400)
    p.add_argument("--data-only", action="store_true",
                   help="write WORK/data and WORK/tokens.pt, then stop")
    p.add_argument("--kernel", choices=("favor+", "softmax"), default="favor+",
                   help="attention while training; softmax is the model of "
                        "bench/transfer_study.py")
    p.add_argument("--bfloat16", default="auto", choices=("auto", "0", "1"),
                   help="bfloat16 autocast for the products while training "
                        "(auto: where the CPU has native bfloat16; emulated "
                        "elsewhere, it is many times slower than float32)")
    p.add_argument("--checkpoint", default="",
                   help="checkpoint file (default WORK/checkpoint-VERSION.pt)")
    p.add_argument("--checkpoint-every", type=int, default=100,
                   help="steps between checkpoints; 0: none")
    p.add_argument("--resume", action="store_true",
                   help="continue from --checkpoint when it exists")
    p.add_argument("--stop-at", type=int, default=0,
                   help="checkpoint and stop after this step, without export")
    return p.parse_args(argv)


# The arguments a checkpoint must agree on to be resumed.
RESUME_KEYS = ("steps", "batch", "lr", "max_query_tokens", "max_doc_tokens",
               "seed", "threads", "eval_every", "kernel", "bfloat16")


def version_name(args):
    name = "default" if args.kernel == "favor+" else args.kernel
    return f"{name}-debian-seed{args.seed}-{args.steps}steps"


def checkpoint_path(args):
    return args.checkpoint or os.path.join(
        args.work, f"checkpoint-{version_name(args)}.pt")


def config_json(config, version):
    c = config.favor_config(version)
    c["tokenizer"] = dict(TOKENIZER_CONFIG)
    return c


def tokenizer_folder(args, config):
    """A model folder that holds only config.json and tokenizer.json: what
    `favor-model tokenize` needs."""
    folder = os.path.join(args.work, "tokenizer")
    os.makedirs(folder, exist_ok=True)
    shutil.copy(args.tokenizer, os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config_json(config, "tokenizer-only"), f)
    return folder


def load_tasks(args, config):
    """{task: {split: [(query ids, doc ids, group)]}}, cached in WORK/tokens."""
    data_dir = os.path.join(args.work, "data")
    if not os.path.exists(os.path.join(data_dir, "done")):
        counts = data.build(os.path.join(args.work, "apt-lists"), data_dir)
        print("data:", json.dumps(counts), flush=True)
        open(os.path.join(data_dir, "done"), "w").close()
    cache = os.path.join(args.work, "tokens.pt")
    if os.path.exists(cache):
        return torch.load(cache)
    folder = tokenizer_folder(args, config)
    tasks = {}
    for task in TASK_WEIGHTS:
        tasks[task] = {}
        for split in ("train", "test"):
            rows = data.read(os.path.join(data_dir, f"{task}_{split}.jsonl"))
            q = tokens.tokenize(args.favor_model, folder, [r["query"] for r in rows])
            d = tokens.tokenize(args.favor_model, folder, [r["doc"] for r in rows])
            tasks[task][split] = [(a, b, r["group"]) for a, b, r in zip(q, d, rows)]
    torch.save(tasks, cache)
    return tasks


class Batches:
    """Seeded batches: a task drawn by TASK_WEIGHTS, then the next pairs of
    its shuffled order, one per group."""

    def __init__(self, tasks, batch, seed):
        self.rng = random.Random(seed)
        self.tasks = {t: s["train"] for t, s in tasks.items()}
        self.order = {t: [] for t in self.tasks}
        self.batch = batch

    def _next_index(self, task):
        if not self.order[task]:
            order = list(range(len(self.tasks[task])))
            self.rng.shuffle(order)
            self.order[task] = order
        return self.order[task].pop()

    def __next__(self):
        names = list(TASK_WEIGHTS)
        task = self.rng.choices(names, [TASK_WEIGHTS[n] for n in names])[0]
        rows, groups, skipped = [], set(), []
        while len(rows) < self.batch:
            i = self._next_index(task)
            row = self.tasks[task][i]
            if row[2] in groups:
                skipped.append(i)
                continue
            groups.add(row[2])
            rows.append(row)
        self.order[task].extend(reversed(skipped))  # first in the next batch
        return task, rows

    def state(self):
        return {"rng": self.rng.getstate(),
                "order": {t: list(o) for t, o in self.order.items()}}

    def restore(self, state):
        self.rng.setstate(state["rng"])
        self.order = {t: list(o) for t, o in state["order"].items()}


def pad(id_lists, max_tokens):
    cut = [tokens.truncate(ids, max_tokens) for ids in id_lists]
    length = max(len(ids) for ids in cut)
    ids = torch.zeros(len(cut), length, dtype=torch.long)
    keep = torch.zeros(len(cut), length, dtype=torch.bool)
    for i, row in enumerate(cut):
        ids[i, :len(row)] = torch.tensor(row)
        keep[i, :len(row)] = True
    return ids, keep


def contrastive_loss(q, d):
    scores = SCALE * q @ d.T
    target = torch.arange(len(q))
    return (F.cross_entropy(scores, target) + F.cross_entropy(scores.T, target)) / 2


@torch.no_grad()
def embed(encoder, id_lists, max_tokens, batch=64):
    out = []
    order = sorted(range(len(id_lists)), key=lambda i: len(id_lists[i]))
    for start in range(0, len(order), batch):
        chunk = [id_lists[i] for i in order[start:start + batch]]
        out.append(encoder(*pad(chunk, max_tokens)))
    vectors = torch.cat(out)
    result = torch.empty_like(vectors)
    result[torch.tensor(order)] = vectors
    return result


def quick_eval(encoder, rows, args, limit=500):
    """recall@1 and @10 of queries against their documents, first `limit`."""
    rows = rows[:limit]
    q = embed(encoder, [r[0] for r in rows], args.max_query_tokens)
    d = embed(encoder, [r[1] for r in rows], 256)
    rank = (q @ d.T > (q * d).sum(-1, keepdim=True)).sum(-1)
    return (rank < 1).float().mean().item(), (rank < 10).float().mean().item()


def save_checkpoint(path, step, seconds, running, encoder, optimizer,
                    schedule, batches, args):
    """Everything the next step depends on, written atomically (a temporary
    file renamed over the last checkpoint)."""
    state = {"step": step, "seconds": seconds, "running": running,
             "encoder": encoder.state_dict(), "optimizer": optimizer.state_dict(),
             "schedule": schedule.state_dict(), "batches": batches.state(),
             "torch_rng": torch.get_rng_state(),
             "arguments": {k: getattr(args, k) for k in RESUME_KEYS}}
    temporary = path + ".tmp"
    torch.save(state, temporary)
    with open(temporary, "rb") as f:
        os.fsync(f.fileno())
    os.replace(temporary, path)


def load_checkpoint(path, args):
    state = torch.load(path, weights_only=False)
    for key, value in state["arguments"].items():
        if getattr(args, key) != value:
            raise SystemExit(f"{path} was written with --{key.replace('_', '-')} "
                             f"{value}, not {getattr(args, key)}")
    return state


def train(args, config, tasks):
    torch.manual_seed(args.seed)
    encoder = favor_model.Encoder(config)
    decay = [p for n, p in encoder.named_parameters() if p.dim() > 1]
    other = [p for n, p in encoder.named_parameters() if p.dim() <= 1]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": other, "weight_decay": 0.0}],
                                  lr=args.lr)
    warmup = max(1, args.steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (args.steps - s) / (args.steps - warmup))))
    batches = Batches(tasks, args.batch, args.seed)
    path, first, before, running = checkpoint_path(args), 1, 0.0, None
    if args.resume and os.path.exists(path):
        state = load_checkpoint(path, args)
        encoder.load_state_dict(state["encoder"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        batches.restore(state["batches"])
        torch.set_rng_state(state["torch_rng"])
        first, before, running = state["step"] + 1, state["seconds"], state["running"]
        print(f"resumed from {path} at step {state['step']}", flush=True)
    elif args.resume:
        print(f"no checkpoint at {path}: starting from step 1", flush=True)
    start = time.time() - before
    for step in range(first, args.steps + 1):
        encoder.train()
        task, rows = next(batches)
        # bfloat16 products (2.3x faster on this CPU), float32 features,
        # norms and loss; evaluation and export are float32.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(args.bfloat16)):
            q = encoder(*pad([r[0] for r in rows], args.max_query_tokens))
            d = encoder(*pad([r[1] for r in rows], args.max_doc_tokens))
        loss = contrastive_loss(q.float(), d.float())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(encoder.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        if step % 50 == 0:
            print(f"step {step} loss {running:.3f} {time.time() - start:.0f} s", flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            encoder.eval()
            r1, r10 = quick_eval(encoder, tasks["debian"]["test"], args)
            print(f"step {step} debian test (first 500): recall@1 {r1:.3f} "
                  f"recall@10 {r10:.3f}", flush=True)
        stop = step == args.stop_at
        if (args.checkpoint_every and step % args.checkpoint_every == 0) or stop:
            save_checkpoint(path, step, time.time() - start, running, encoder,
                            optimizer, schedule, batches, args)
        if stop:
            print(f"stopped at step {step}; checkpoint {path}", flush=True)
            return encoder, None
    return encoder, time.time() - start


def export(encoder, config, args, seconds):
    version = version_name(args)
    state = {k: v.detach() for k, v in encoder.state_dict().items()}
    export_state_dict.export(state, config_json(config, version), args.output,
                             dtype=torch.float16)
    shutil.copy(args.tokenizer, os.path.join(args.output, "tokenizer.json"))
    shutil.copy(os.path.join(os.path.dirname(args.tokenizer), "LICENSE"),
                os.path.join(args.output, "tokenizer.json.license"))
    with open(os.path.join(args.output, "training.json"), "w") as f:
        json.dump({"version": version, "seconds": round(seconds),
                   "arguments": {k: v for k, v in vars(args).items()
                                 if k not in ("favor_model", "tokenizer", "work",
                                              "output", "data_only", "checkpoint",
                                              "checkpoint_every", "resume",
                                              "stop_at")}},
                  f, indent=2)
        f.write("\n")


def main(argv=None):
    args = parse_args(argv)
    args.bfloat16 = (int(native_bfloat16(torch.device("cpu")))
                     if args.bfloat16 == "auto" else int(args.bfloat16))
    torch.set_num_threads(args.threads)
    config = favor_model.Config(kernel=args.kernel)
    tasks = load_tasks(args, config)
    if args.data_only:
        return
    for task, splits in tasks.items():
        print(f"{task}: {len(splits['train'])} training pairs, "
              f"{len(splits['test'])} test pairs", flush=True)
    encoder, seconds = train(args, config, tasks)
    if seconds is None:
        return
    export(encoder, config, args, seconds)
    print(f"wrote {args.output} after {seconds / 60:.1f} min of training")


if __name__ == "__main__":
    main()
