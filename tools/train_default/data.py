"""The default model's training and test data: text that Debian ships.

Three sources, each a set of (query, document) pairs with a group that the
train/test split keeps whole (so no test pair shares a package, synset or
manual page with a training pair):

  debian   apt's English descriptions (Translation-en): a package's short
           description against its long one; grouped by source package.
  wordnet  WordNet 3.0 (wordnet-base): a synset's lemmas against its
           definition, and each usage example against the definition;
           grouped by synset.
  man      manual pages of the packages in MAN_PACKAGES: the NAME line's
           description (after " - ") against the DESCRIPTION section for
           training, against the whole page less its NAME section for the
           long-document test; grouped by page name.

Everything here is deterministic: files are read in sorted order, the split
is a hash of the group's name, and duplicates keep their first occurrence.
"""

import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

from debian import deb822

# The packages whose manual pages are read; setup.sh installs them.
MAN_PACKAGES = [
    "manpages", "manpages-dev", "git-man", "openssl", "coreutils",
    "util-linux", "systemd", "openssh-client", "bash", "tar", "rsync", "gawk",
    "iproute2", "procps", "dpkg", "apt", "debhelper", "make", "findutils",
    "grep", "sed", "gzip", "xz-utils", "perl-doc", "ncurses-bin",
]
# Percent of groups held out for testing, per source.
TEST_PERCENT = {"debian": 4, "wordnet": 4, "man": 12}


def held_out(source, group):
    digest = hashlib.sha256(f"{source}/{group}".encode()).digest()
    return int.from_bytes(digest[:4], "little") % 100 < TEST_PERCENT[source]


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


# ---- Debian package descriptions -------------------------------------------

def _deb822(path):
    data = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", path],
                          check=True, capture_output=True).stdout
    return deb822.Deb822.iter_paragraphs(data.decode("utf-8", "replace").splitlines())


def _long_description(lines):
    """Debian policy 5.6.13: ' .' is an empty line, the rest is indented."""
    out = []
    for line in lines:
        line = line[1:] if line.startswith(" ") else line
        out.append("" if line.strip() == "." else line)
    return "\n".join(out).strip()


def debian_pairs(lists_dir):
    sources = {}
    for path in sorted(glob.glob(os.path.join(lists_dir, "*_bookworm_main_binary-amd64_Packages*"))):
        for p in _deb822(path):
            sources[p["Package"]] = p.get("Source", p["Package"]).split(" ")[0]
    pairs, seen = [], set()
    for path in sorted(glob.glob(os.path.join(lists_dir, "*_bookworm_main_i18n_Translation-en*"))):
        for p in _deb822(path):
            lines = p.get("Description-en", "").split("\n")
            short, long = lines[0].strip(), _long_description(lines[1:])
            key = squash(long).lower()
            if len(long.split()) < 12 or len(short.split()) < 2 or key in seen:
                continue
            seen.add(key)
            pairs.append({"query": short, "doc": long,
                          "group": sources.get(p["Package"], p["Package"])})
    return pairs


# ---- WordNet ---------------------------------------------------------------

def wordnet_synsets(directory="/usr/share/wordnet"):
    """Synsets from the data.* files (format: wndb(5WN))."""
    synsets = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(directory, f"data.{pos}"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):  # the licence header
                    continue
                fields, _, gloss = line.partition(" | ")
                parts = fields.split()
                count = int(parts[3], 16)
                lemmas = [parts[4 + 2 * i].replace("_", " ") for i in range(count)]
                lemmas = [re.sub(r"\([a-z]+\)$", "", w) for w in lemmas]
                pieces = [s.strip() for s in gloss.strip().split(";")]
                definition = "; ".join(s for s in pieces if not s.startswith('"'))
                examples = [s.strip('"').strip() for s in pieces if s.startswith('"')]
                synsets.append({"id": f"{pos}/{parts[0]}", "lemmas": lemmas,
                                "definition": definition, "examples": examples})
    return synsets


def wordnet_pairs(synsets):
    lemma, example = [], []
    for s in synsets:
        if not s["definition"]:
            continue
        lemma.append({"query": ", ".join(s["lemmas"]), "doc": s["definition"],
                      "group": s["id"]})
        for e in s["examples"]:
            if len(e.split()) >= 3:
                example.append({"query": e, "doc": s["definition"], "group": s["id"]})
    return lemma, example


# ---- Manual pages ----------------------------------------------------------

def _man_files():
    files = set()
    for package in MAN_PACKAGES:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True,
                                text=True).stdout.split("\n")
        files.update(f for f in listed
                     if re.match(r"^/usr/share/man/man[1-8]/[^/]+\.gz$", f)
                     and os.path.isfile(f) and not os.path.islink(f))
    return sorted(files)


def _render(path):
    with gzip.open(path, "rb") as f:
        if f.read(4) == b".so ":  # a page that only includes another
            return path, None
    env = dict(os.environ, MANWIDTH="100", MAN_KEEP_FORMATTING="0", LC_ALL="C.UTF-8")
    run = subprocess.run(f"man --no-hyphenation --no-justification -l '{path}' "
                         "2>/dev/null | col -bx", shell=True, capture_output=True,
                         env=env, timeout=120)
    return path, run.stdout.decode("utf-8", "replace")


def _sections(text):
    """The page's sections: a heading is a line in capitals at column 0."""
    sections, name, body = [], None, []
    for line in text.split("\n"):
        if re.match(r"^[A-Z][A-Z0-9 /_-]+$", line.strip()) and not line.startswith(" "):
            if name is not None:
                sections.append((name, "\n".join(body).strip()))
            name, body = line.strip(), []
        elif name is not None:
            body.append(line)
    if name is not None:
        sections.append((name, "\n".join(body).strip()))
    return sections


def man_pages(workers=2):
    with ThreadPoolExecutor(workers) as pool:
        rendered = list(pool.map(_render, _man_files()))
    pages, seen = [], set()
    for path, text in rendered:
        if not text:
            continue
        sections = _sections(text)
        named = dict(sections)
        name_line = squash(named.get("NAME", ""))
        if " - " not in name_line or "DESCRIPTION" not in named:
            continue
        summary = name_line.split(" - ", 1)[1].strip()
        body = "\n\n".join(f"{n}\n{b}" for n, b in sections if n != "NAME")
        if (len(summary.split()) < 2 or len(named["DESCRIPTION"].split()) < 5
                or body in seen):
            continue
        seen.add(body)
        page = os.path.basename(path)[:-3]
        pages.append({"page": page, "summary": summary,
                      "description": named["DESCRIPTION"], "body": body})
    return pages


# ---- The whole set -----------------------------------------------------------

def build(lists_dir, out_dir):
    """Writes <task>_<split>.jsonl into out_dir; returns {file: rows}."""
    os.makedirs(out_dir, exist_ok=True)
    debian = debian_pairs(lists_dir)
    lemma, example = wordnet_pairs(wordnet_synsets())
    pages = man_pages()
    man_train = [{"query": p["summary"], "doc": p["description"], "group": p["page"]}
                 for p in pages]
    man_long = [{"query": p["summary"], "doc": p["body"], "group": p["page"]}
                for p in pages]
    tasks = {"debian": ("debian", debian), "wordnet_lemma": ("wordnet", lemma),
             "wordnet_example": ("wordnet", example), "man": ("man", man_train),
             "man_long": ("man", man_long)}
    counts = {}
    for task, (source, rows) in tasks.items():
        for split in ("train", "test"):
            if task == "man_long" and split == "train":
                continue  # the long pages are a test set only
            chosen = [r for r in rows if held_out(source, r["group"]) == (split == "test")]
            path = os.path.join(out_dir, f"{task}_{split}.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                for r in chosen:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
            counts[os.path.basename(path)] = len(chosen)
    return counts


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]
