#!/usr/bin/env python3
"""Distils a softmax-attention Favor model into a FAVOR+ (or FAVOR++) student.

    tools/distill/distill.py --teacher build/transfer/softmax \
        --output build/distilled --favor-model build/server/model/tools/favor-model \
        --data build/train-default/data --steps 1000

(`make distill` runs this.) The teacher is a Favor model folder or a
Hugging Face BERT, RoBERTa, XLM-RoBERTa, NomicBERT or ModernBERT folder
(hf_folder.py: the student
is then written as the teacher's folder with a favor.json naming its
attention, and its card as DISTILLED.md). The student starts from the teacher's weights
with its attention swapped for the kernel favor-server will run (--kernel,
--features, --epsilon, --projection-seed): the projection is not learnt but
drawn exactly as the server draws it (tools/train_default/model.py), so the
served model is the trained one. It learns to reproduce the teacher's
per-token hidden states at --layers (mean squared error over real tokens)
and its pooled, L2-normalised embedding (1 - cosine), on unlabeled text:

  --data DIR    the corpora of `make train-data` (DIR/*_train.jsonl, every
                query and document);
  --data FILE   FILE.jsonl: each line's "text" (or "query" and "doc");
                any other file: one text per non-empty line.

Length curriculum (models with rotary or no positions): the first half of
the steps reads texts cut at --teacher-tokens (the teacher's training
length); the second half packs texts into inputs that grow geometrically to
--long-tokens, with fewer inputs a batch so that a batch holds about as many
tokens. The teacher reads every input with exact attention, in windows of
--teacher-window tokens where that is set and the input is longer.

CPU by default (--threads), CUDA when present (--device); bfloat16 autocast
for the student's products only where the processor has native bfloat16
(AVX512-BF16 or AMX, or a CUDA device that supports it); seeded; writes a
checkpoint every --checkpoint-every steps and continues from it with
--resume (the result is the same bytes as an uninterrupted run). Output: a
Favor model folder (config.json, model.safetensors, the teacher's
tokenizer, training.json and a README.md card) that favor-server serves.
"""

import argparse
import copy
import datetime
import glob
import hashlib
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
_ROOT = os.path.join(_HERE, "..", "..")
sys.path.insert(0, os.path.join(_ROOT, "tools", "train_default"))
sys.path.insert(0, os.path.join(_ROOT, "tools"))
sys.path.insert(0, _HERE)
import export_state_dict  # noqa: E402
from hardware import native_bfloat16  # noqa: E402
import hf_folder  # noqa: E402
import model as favor_model  # noqa: E402
import tokens  # noqa: E402

# The arguments a checkpoint must agree on to be resumed.
RESUME_KEYS = ("kernel", "features", "epsilon", "projection_seed", "steps",
               "batch", "lr", "layers", "hidden_weight", "cosine_weight",
               "teacher_tokens", "long_tokens", "long_share", "teacher_window",
               "seed", "max_texts", "eval_texts", "bfloat16")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--teacher", required=True, help="Favor model folder (softmax)")
    p.add_argument("--output", required=True, help="model folder to write")
    p.add_argument("--favor-model", required=True,
                   help="the favor-model binary (tokenises with the teacher's tokenizer)")
    p.add_argument("--data", default=os.path.join(_ROOT, "build", "train-default", "data"),
                   help="a folder of `make train-data` corpora or a text file")
    p.add_argument("--work", default="",
                   help="token cache and checkpoint folder (default OUTPUT.work)")
    p.add_argument("--kernel", choices=("favor+", "favor++"), default="favor+")
    p.add_argument("--features", type=int, default=0,
                   help="m, random features (default: the teacher's, else 256)")
    p.add_argument("--epsilon", type=float, default=1e-4,
                   help="feature epsilon (default the server's; make distill uses "
                        "1e-8, which distils better: docs/models.md, \"Why the swap\")")
    p.add_argument("--projection-seed", type=int, default=-1,
                   help="default: the teacher's projection_seed, else 0")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--minutes", type=float, default=0,
                   help="stop (and write the student) after this much training")
    p.add_argument("--batch", type=int, default=32,
                   help="inputs a batch at --teacher-tokens")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--layers", default="all",
                   help="layers whose hidden states are matched: 'all', 'last' "
                        "or comma-separated numbers (1 = first layer's output)")
    p.add_argument("--hidden-weight", type=float, default=1.0)
    p.add_argument("--cosine-weight", type=float, default=1.0)
    p.add_argument("--teacher-tokens", type=int, default=128,
                   help="the teacher's training length")
    p.add_argument("--long-tokens", type=int, default=1024,
                   help="longest input of the curriculum (0: none)")
    p.add_argument("--long-share", type=float, default=1.0,
                   help="of the second half's steps, the share that reads long "
                        "inputs (the rest stay at --teacher-tokens; 0: none)")
    p.add_argument("--teacher-window", type=int, default=0,
                   help="the teacher reads inputs longer than this in windows "
                        "(0: exact attention over the whole input)")
    p.add_argument("--max-texts", type=int, default=50000,
                   help="texts drawn (seeded) from --data and tokenised")
    p.add_argument("--eval-texts", type=int, default=200,
                   help="of those, held out to measure cosine to the teacher")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--bfloat16", default="auto", choices=("auto", "0", "1"),
                   help="bfloat16 autocast for the student (auto: where native)")
    p.add_argument("--dtype", default="float16", choices=("float32", "float16", "bfloat16"),
                   help="weights as written")
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--resume", action="store_true",
                   help="continue from WORK/checkpoint.pt when it exists")
    p.add_argument("--snapshot-at", default="",
                   help="comma-separated steps at which to also write the student "
                        "as it is then, to OUTPUT-atSTEP (e.g. the 30-minute point "
                        "of a 60-minute run)")
    p.add_argument("--stop-at", type=int, default=0,
                   help="checkpoint and stop after this step, without writing")
    args = p.parse_args(argv)
    args.work = args.work or args.output.rstrip("/") + ".work"
    args.snapshot_at = {int(x) for x in args.snapshot_at.split(",") if x.strip()}
    return args


# ---- the teacher and the student ------------------------------------------

def read_config(folder):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def load_encoder(folder, config_json=None, extras=None):
    """favor_model.Encoder with `folder`'s weights (float32) and the config
    `config_json` (default: the folder's). Tensors that mean pooling leaves
    unused (`pooler.*`, which `favor-model init` writes) go into `extras`,
    to be written back unchanged."""
    c = config_json or read_config(folder)
    if hf_folder.is_hugging_face(read_config(folder)):
        try:
            return hf_folder.load(folder, c.get("attention") if config_json else None,
                                  extras)
        except ValueError as error:
            raise SystemExit(f"{folder}: {error}")
    try:
        config = favor_model.Config.from_favor(c)
    except ValueError as error:
        raise SystemExit(f"{folder}: {error}")
    encoder = favor_model.Encoder(config)
    state = export_state_dict.read_safetensors(os.path.join(folder, "model.safetensors"))
    state = {k: v.float() for k, v in state.items()}
    for name in [n for n in state if n.startswith("pooler.")]:
        tensor = state.pop(name)
        if extras is not None:
            extras[name] = tensor
    missing, unexpected = encoder.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise SystemExit(f"{folder}: weights this tool does not compute: "
                         f"missing {missing}, unexpected {unexpected}")
    return encoder


def student_config(teacher_json, args, version):
    """The student's config.json (Favor's format), or for a Hugging Face
    folder {"attention": the student's attention} (its favor.json's)."""
    if hf_folder.is_hugging_face(teacher_json):
        return {"attention": {"kernel": args.kernel,
                              "num_random_features": args.features,
                              "feature_epsilon": args.epsilon,
                              "projection_seed": args.projection_seed}}
    c = json.loads(json.dumps(teacher_json))
    attention = c.setdefault("attention", {})
    attention["kernel"] = args.kernel
    attention["num_random_features"] = args.features
    attention["feature_epsilon"] = args.epsilon
    attention["projection_seed"] = args.projection_seed
    attention.setdefault("orthogonal", True)
    attention.setdefault("row_norm", "chi")
    c["version"] = version
    return c


def embed(encoder, id_lists, device="cpu"):
    """Each input alone (no padding), float64 (len, hidden): the tool's own
    forward, what favor-server must serve."""
    encoder.eval()
    with torch.no_grad():
        return torch.stack([
            encoder(torch.tensor([ids], device=device),
                    torch.ones(1, len(ids), dtype=torch.bool, device=device))[0]
            for ids in id_lists]).double().cpu()


# ---- data -------------------------------------------------------------------

def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_texts(path):
    if os.path.isdir(path):
        texts = []
        for name in sorted(glob.glob(os.path.join(path, "*_train.jsonl"))):
            for row in read_jsonl(name):
                texts += [row["query"], row["doc"]]
        if not texts:
            raise SystemExit(f"{path} has no *_train.jsonl (run make train-data)")
        return texts
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            if path.endswith(".jsonl"):
                row = json.loads(line)
                texts += [row["text"]] if "text" in row else [row["query"], row["doc"]]
            else:
                texts.append(line.strip())
    if not texts:
        raise SystemExit(f"{path} holds no text")
    return texts


def load_ids(args):
    """(training id lists, held-out id lists): --max-texts distinct texts
    drawn with --seed, tokenised by the teacher's tokenizer, cached."""
    texts = sorted(set(t for t in read_texts(args.data) if t.strip()))
    random.Random(args.seed).shuffle(texts)
    texts = texts[:args.max_texts]
    name = tokenizer_file(args.teacher, read_config(args.teacher))
    with open(os.path.join(args.teacher, name), "rb") as f:
        key = hashlib.sha256(f.read() + json.dumps(texts).encode()).hexdigest()[:16]
    cache = os.path.join(args.work, f"tokens-{key}.pt")
    if os.path.exists(cache):
        ids = torch.load(cache)
    else:
        ids = tokens.tokenize(args.favor_model, args.teacher, texts)
        torch.save(ids, cache + ".tmp")
        os.replace(cache + ".tmp", cache)
    held = min(args.eval_texts, len(ids) // 2)
    return ids[held:], ids[:held]


def curriculum(step, args, rotary_or_none):
    """(max tokens, inputs) of `step`'s batch: the teacher's length for the
    first half of the steps; in the second, a share `long_share` of the
    steps (spread evenly) packs inputs growing to `long_tokens`, the others
    stay at the teacher's length."""
    base = args.teacher_tokens
    if not rotary_or_none or args.long_tokens <= base or step <= args.steps // 2:
        return base, args.batch
    half = max(1, args.steps - args.steps // 2)
    index = step - args.steps // 2
    if math.floor(index * args.long_share) == math.floor((index - 1) * args.long_share):
        return base, args.batch
    fraction = index / half
    length = int(round(base * (args.long_tokens / base) ** fraction))
    return length, max(1, args.batch * base // length)


class Batches:
    """Seeded inputs: texts in a shuffled order, cut at the length, or,
    beyond the teacher's length, packed ([CLS] t1 t2 ... [SEP]) to it."""

    def __init__(self, ids, seed):
        self.ids = ids
        self.rng = random.Random(seed)
        self.order = []

    def _next(self):
        if not self.order:
            self.order = list(range(len(self.ids)))
            self.rng.shuffle(self.order)
        return self.ids[self.order.pop()]

    def take(self, length, count, pack):
        rows = []
        for _ in range(count):
            row = self._next()
            if pack:
                body = list(row[1:-1])
                while len(body) < length - 2:
                    body += self._next()[1:-1]
                row = [row[0]] + body[:length - 2] + [row[-1]]
            rows.append(tokens.truncate(row, length))
        return rows

    def state(self):
        return {"rng": self.rng.getstate(), "order": list(self.order)}

    def restore(self, state):
        self.rng.setstate(state["rng"])
        self.order = list(state["order"])


def pad(rows, device):
    length = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), length, dtype=torch.long)
    keep = torch.zeros(len(rows), length, dtype=torch.bool)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
        keep[i, :len(row)] = True
    return ids.to(device), keep.to(device)


# ---- the objective -----------------------------------------------------------

def layer_indices(spec, count):
    if spec == "all":
        return list(range(1, count + 1))
    if spec == "last":
        return [count]
    chosen = [int(x) for x in spec.split(",")]
    if any(not 0 <= i <= count for i in chosen):
        raise SystemExit(f"--layers {spec}: the model has layers 1 to {count}")
    return chosen


@torch.no_grad()
def teacher_targets(teacher, ids, keep, window):
    """(pooled, hidden states): exact attention over each input, or over
    windows of `window` tokens (each window alone) when it is longer."""
    if not window or ids.shape[1] <= window:
        return teacher.forward_all(ids, keep)
    hidden = None
    for start in range(0, ids.shape[1], window):
        part_keep = keep[:, start:start + window].clone()
        empty = ~part_keep.any(1)
        part_keep[empty, 0] = True  # padding-only windows: ignored below
        _, states = teacher.forward_all(ids[:, start:start + window], part_keep)
        hidden = states if hidden is None else [torch.cat([a, b], 1)
                                                 for a, b in zip(hidden, states)]
    return favor_model.pool(hidden[-1], keep), hidden


def losses(student, teacher, ids, keep, layers, args, autocast):
    target_pooled, target_hidden = teacher_targets(teacher, ids, keep, args.teacher_window)
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=autocast):
        pooled, hidden = student.forward_all(ids, keep)
    weights = keep[..., None].float()
    count = weights.sum() * hidden[0].shape[-1]
    mse = sum(((hidden[i].float() - target_hidden[i]) ** 2 * weights).sum() / count
              for i in layers) / len(layers)
    cosine = (1 - (pooled.float() * target_pooled).sum(-1)).mean()
    return args.hidden_weight * mse + args.cosine_weight * cosine, mse, cosine


def held_out(student, teacher, id_lists, layers, args, device):
    """On the held-out texts: the cosine of the student's embeddings to the
    teacher's (each text alone, cut at --long-tokens; mean and 5th
    percentile) and the objective
    (texts cut at --teacher-tokens, in float32)."""
    if not id_lists:
        return {}
    # Whole up to the curriculum's longest input (the teacher's exact
    # attention is quadratic: a 20k-token manual page would take minutes).
    whole = [tokens.truncate(r, max(args.teacher_tokens, args.long_tokens))
             for r in id_lists]
    got = embed(student, whole, device)
    want = embed(teacher, whole, device)
    cosine = (got * want).sum(-1)
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(id_lists), 32):
            rows = [tokens.truncate(r, args.teacher_tokens)
                    for r in id_lists[start:start + 32]]
            ids, keep = pad(rows, device)
            total += losses(student, teacher, ids, keep, layers, args,
                            False)[0].item() * len(rows)
    return {"mean": cosine.mean().item(),
            "p5": torch.quantile(cosine, 0.05).item(),
            "loss": total / len(id_lists)}


class Progress:
    """One stderr line: a bar, the step, the loss and the time left;
    rewritten in place on a terminal, a line every 10 steps otherwise."""

    def __init__(self, total, first):
        self.total, self.first, self.start = total, first, time.time()
        self.tty = sys.stderr.isatty()

    def update(self, step, loss, length, count):
        if not self.tty and step % 10 and step != self.total:
            return
        done = step - self.first + 1
        elapsed = time.time() - self.start
        left = elapsed / done * (self.total - step)
        bar = "#" * int(20 * step / self.total)
        line = (f"[{bar:<20}] step {step}/{self.total} loss {loss:.4f} "
                f"len {length}x{count} {_clock(elapsed)} elapsed, {_clock(left)} left")
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)

    def close(self):
        if self.tty:
            print(file=sys.stderr)


def _clock(seconds):
    return str(datetime.timedelta(seconds=int(seconds)))


# ---- checkpoints -------------------------------------------------------------

def save_checkpoint(path, state):
    torch.save(state, path + ".tmp")
    with open(path + ".tmp", "rb") as f:
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def load_checkpoint(path, args):
    state = torch.load(path, map_location="cpu", weights_only=False)
    for key, value in state["arguments"].items():
        if getattr(args, key) != value:
            raise SystemExit(f"{path} was written with --{key.replace('_', '-')} "
                             f"{value}, not {getattr(args, key)}")
    return state


# ---- the run -----------------------------------------------------------------

def distill(args):
    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if args.device == "auto" else args.device))
    os.makedirs(args.work, exist_ok=True)
    teacher_json = read_config(args.teacher)
    hugging_face = hf_folder.is_hugging_face(teacher_json)
    teacher = load_encoder(args.teacher).to(device).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    attention = (hf_folder.Folder(args.teacher).overlay if hugging_face
                 else teacher_json).get("attention", {})
    if args.features <= 0:
        args.features = attention.get("num_random_features", 256)
    if args.projection_seed < 0:
        args.projection_seed = attention.get("projection_seed", 0)
    args.bfloat16 = int(native_bfloat16(device)) if args.bfloat16 == "auto" else int(args.bfloat16)
    version = (f"distilled-{args.kernel}-m{args.features}-from-"
               f"{teacher_json.get('version', os.path.basename(args.teacher.rstrip('/')))}"
               f"-seed{args.seed}-{args.steps}steps")
    config_json = student_config(teacher_json, args, version)
    torch.manual_seed(args.seed)
    extras = {}
    student = load_encoder(args.teacher, config_json, extras).to(device)
    rotary_or_none = student.config.position_embedding_type in ("rotary", "none")
    if not rotary_or_none:
        # Absolute positions: nothing past the position table.
        limit = student.config.max_sequence_length
        args.teacher_tokens = min(args.teacher_tokens, limit)
        args.long_tokens = min(args.long_tokens, limit)
    layers = layer_indices(args.layers, student.config.num_hidden_layers)
    train_ids, held_ids = load_ids(args)
    print(f"{len(train_ids)} training texts, {len(held_ids)} held out; device "
          f"{device}, bfloat16 {'on' if args.bfloat16 else 'off'}", file=sys.stderr)

    optimizer = torch.optim.AdamW(student.parameters(), lr=args.lr, weight_decay=0.0)
    warmup = max(1, args.steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup,
                                 max(0.0, (args.steps - s) / max(1, args.steps - warmup))))
    batches = Batches(train_ids, args.seed)
    path = os.path.join(args.work, "checkpoint.pt")
    first, before, history = 1, 0.0, []
    swap = None
    if args.resume and os.path.exists(path):
        state = load_checkpoint(path, args)
        student.load_state_dict(state["student"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        batches.restore(state["batches"])
        torch.set_rng_state(state["torch_rng"])
        first, before, history = state["step"] + 1, state["seconds"], state["history"]
        swap = state["swap"]
        print(f"resumed from {path} at step {state['step']}", file=sys.stderr)
    if swap is None:
        swap = held_out(student, teacher, held_ids, layers, args, device)
    def write(trained, output, step, seconds):
        """The student as a model folder at `output`, its card and
        training.json, with the held-out figures of the weights as written."""
        student = trained if device.type == "cpu" else copy.deepcopy(trained).cpu()
        name = version if step == args.steps else f"{version}-at{step}"
        if hugging_face:
            hf_folder.write(student, args.teacher, output, config_json["attention"],
                            name, extras, getattr(torch, args.dtype))
        else:
            state = {k: v.detach() for k, v in student.state_dict().items()}
            state.update(extras)
            export_state_dict.export(state, dict(config_json, version=name), output,
                                     dtype=getattr(torch, args.dtype))
            copy_tokenizer(args.teacher, output, teacher_json)
        # Figures on the weights as written (float16 by default).
        written = load_encoder(output).to(device)
        after = held_out(written, teacher, held_ids, layers, args, device)
        record = {"version": name, "teacher": os.path.abspath(args.teacher),
                  "teacher_version": (hf_folder.Folder(args.teacher).overlay if hugging_face
                                      else teacher_json).get(
                      "version", os.path.basename(os.path.abspath(args.teacher))),
                  "data": os.path.abspath(args.data), "steps_run": step,
                  "seconds": round(seconds), "device": str(device),
                  "held_out": {"swapped": swap, "distilled": after},
                  "loss": {"first": history[0][2] if history else None,
                           "last": history[-1][2] if history else None},
                  "arguments": {k: getattr(args, k) for k in RESUME_KEYS + ("minutes", "dtype")},
                  "history": history}
        with open(os.path.join(output, "training.json"), "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        write_card(args, output, record, len(train_ids), len(held_ids))
        print(f"wrote {output} after {seconds / 60:.1f} min, {step} steps; "
              f"loss {record['loss']['first']} -> {record['loss']['last']}; cosine to "
              f"the teacher {swap.get('mean', float('nan')):.4f} -> "
              f"{after.get('mean', float('nan')):.4f}", file=sys.stderr)
        return record

    start = time.time() - before
    progress = Progress(args.steps, first)
    step = first - 1
    for step in range(first, args.steps + 1):
        student.train()
        length, count = curriculum(step, args, rotary_or_none)
        rows = batches.take(length, count, pack=length > args.teacher_tokens)
        ids, keep = pad(rows, device)
        loss, mse, cosine = losses(student, teacher, ids, keep, layers, args,
                                   bool(args.bfloat16))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        history.append([step, length, float(f"{loss.item():.6g}"), float(f"{mse.item():.6g}"),
                        float(f"{cosine.item():.6g}")])
        progress.update(step, loss.item(), length, count)
        out_of_time = args.minutes and time.time() - start >= 60 * args.minutes
        stop = step == args.stop_at
        if (args.checkpoint_every and step % args.checkpoint_every == 0) or stop \
                or out_of_time:
            save_checkpoint(path, {
                "step": step, "seconds": time.time() - start, "history": history,
                "swap": swap, "student": student.state_dict(),
                "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                "batches": batches.state(), "torch_rng": torch.get_rng_state(),
                "arguments": {k: getattr(args, k) for k in RESUME_KEYS}})
        if step in args.snapshot_at and step < args.steps:
            # The snapshot's own time (writing, the held-out figures) is
            # not training time.
            began = time.time()
            write(student, f"{args.output.rstrip('/')}-at{step}", step, began - start)
            start += time.time() - began
        if stop:
            progress.close()
            print(f"stopped at step {step}; resume with --resume ({path})",
                  file=sys.stderr)
            return None
        if out_of_time:
            break
    progress.close()
    return write(student, args.output, step, time.time() - start)


def tokenizer_file(folder, config_json):
    if hf_folder.is_hugging_face(config_json):
        # The server's choice (model_folder.cc): tokenizer.json, else vocab.txt.
        files = hf_folder.Folder(folder).tokenizer_files()
        if not files:
            raise SystemExit(f"{folder} has no tokenizer.json or vocab.txt")
        return files[0]
    return config_json.get("tokenizer", {}).get("file") or "tokenizer.json"


def copy_tokenizer(teacher, output, teacher_json):
    name = tokenizer_file(teacher, teacher_json)
    for file in (name, name + ".license"):
        if os.path.exists(os.path.join(teacher, file)):
            shutil.copy(os.path.join(teacher, file), os.path.join(output, file))


def write_card(args, output, record, train_count, held_count):
    swap, after = record["held_out"]["swapped"], record["held_out"]["distilled"]

    def cos(c):
        return f"{c['mean']:.4f} / {c['p5']:.4f}" if c else "n/a"

    def loss(c):
        return f"{c['loss']:.5f}" if c else "n/a"

    lines = [
        f"# Model card: `{record['version']}`", "",
        "A FAVOR+ student distilled from a softmax-attention teacher by "
        "tools/distill/distill.py (models/README.md, \"Distilling a softmax "
        "model\").", "",
        "| | |", "|---|---|",
        f"| teacher | `{record['teacher_version']}` ({record['teacher']}) |",
        f"| attention | {args.kernel}, m = {args.features}, ε = {args.epsilon:g}, "
        f"projection seed {args.projection_seed} + layer (drawn as favor-server draws it) |",
        f"| data | {record['data']}: {train_count} texts for training, "
        f"{held_count} held out |",
        f"| steps | {record['steps_run']} of {args.steps} (batch {args.batch} at "
        f"{args.teacher_tokens} tokens, curriculum to {args.long_tokens} on "
        f"{args.long_share:g} of the second half's steps) |",
        f"| objective | {args.hidden_weight:g} × MSE of hidden states at layers "
        f"{args.layers} + {args.cosine_weight:g} × (1 − cosine) of pooled embeddings |",
        f"| time | {record['seconds']} s on {record['device']}, seed {args.seed} |",
        f"| loss | {record['loss']['first']} (first step) → {record['loss']['last']} (last) |",
        f"| cosine to the teacher, held-out texts (mean / 5th pct) | swapped, no "
        f"training: {cos(swap)}; distilled: {cos(after)} |",
        f"| objective on the held-out texts | swapped: {loss(swap)}; distilled: "
        f"{loss(after)} |", "",
        "training.json has every step's loss and the full arguments.", ""]
    # A Hugging Face folder keeps its own README.md (the hub's card).
    card = "DISTILLED.md" if hf_folder.is_hugging_face(read_config(output)) else "README.md"
    with open(os.path.join(output, card), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv=None):
    distill(parse_args(argv))


if __name__ == "__main__":
    main()
