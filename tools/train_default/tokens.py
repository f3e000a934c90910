"""Token ids through favor-model's tokenizer: exactly the ids favor-server
feeds the model for the same text ([CLS] ... [SEP], BERT-uncased WordPiece
from the model folder's tokenizer.json)."""

import json
import subprocess
import threading


def tokenize(favor_model, model_dir, texts):
    """A list of id lists, one per text (texts must be non-empty)."""
    process = subprocess.Popen([favor_model, "tokenize", model_dir],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, encoding="utf-8")

    def feed():
        for text in texts:
            process.stdin.write(json.dumps(text, ensure_ascii=False) + "\n")
        process.stdin.close()

    writer = threading.Thread(target=feed)
    writer.start()
    ids = [[int(t) for t in line.split()] for line in process.stdout]
    writer.join()
    if process.wait() != 0 or len(ids) != len(texts):
        raise RuntimeError(f"favor-model tokenize failed ({len(ids)} of {len(texts)})")
    return ids


def truncate(ids, max_tokens):
    """Keeps [CLS] and [SEP] and the first max_tokens - 2 tokens between."""
    if len(ids) <= max_tokens:
        return ids
    return ids[:max_tokens - 1] + ids[-1:]
