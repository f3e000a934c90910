#!/usr/bin/env python3
"""Writes the strings the tokenizer.json parity tests encode.

Usage: parity_strings.py <corpus.txt> <output>

The output is corpus.txt's strings followed by MIXED_COUNT strings built
here from a fixed seed: random runs drawn from pools of the cases that
byte-level and SentencePiece-style tokenizers split differently (combining
marks, CJK, emoji with ZWJ sequences, skin tones and flags, C0/C1 controls,
whitespace runs, mixed scripts, digits, punctuation, apostrophe
contractions, words of the models' vocabularies). Same format as corpus.txt:
one JSON string literal a line. Deterministic: the same output every run.
"""
import json
import random
import sys

SEED = 36
MIXED_COUNT = 1200

WORDS = ("the quick brown fox jumps over lazy dog Hello world tokenizer "
         "embedding server naïve café résumé Straße Ελλάδα Москва 東京 서울 "
         "مرحبا שלום สวัสดี नमस्ते ünïcödé hello HELLO Hello's it's we'll "
         "I'm they've don't 1234 3.14 2024-01-15 https://example.com/a?b=1 "
         "user@example.org C++ x86_64 <s> </s> <unk> [CLS]").split()
CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单导级跑片ひらがなカタカナ한국어"
COMBINING = ["\u0301", "\u0300", "\u0308", "\u0327", "\u0303", "\u030a",
             "\u0323", "\u0336", "\u20dd", "\u0e31", "\u094d", "\u05b8",
             "\u064e", "\u3099", "\u302a"]
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈",
         "🇯🇵", "🇫🇷", "1\ufe0f\u20e3", "❤\ufe0f", "🧑\u200d🤝\u200d🧑",
         "👩🏾\u200d💻", "🏴\U000e0067\U000e0062\U000e0073\U000e0063"
         "\U000e0074\U000e007f", "🐶", "🎉", "☺", "🫠", "\U0001f9d4\u200d"
         "\u2642\ufe0f"]
CONTROLS = [chr(c) for c in range(0x00, 0x20)] + ["\x7f"] + [
    chr(c) for c in range(0x80, 0xA0)]
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\u00a0", "\u3000",
          "\u2009", "\u200b", "\u2028", "\u202f", "\ufeff", " " * 9,
          "\u1680", "\u2002\u2003"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + [
    "…", "—", "«", "»", "¿", "¡", "、", "。", "「", "」", "’", "'s", "'ll",
    "'ve", "'re", "'d", "'m", "'t"]
RARE = ["\U0001d400", "\U00020000", "\ue000", "\U0010fffd", "ǅ", "ﬁ",
        "Ⅻ", "①", "ｆｕｌｌ", "\u0130", "ß", "ſ", "\u00ad", "\u2061"]


def piece(rng):
    kind = rng.randrange(9)
    if kind == 0:
        return rng.choice(WORDS)
    if kind == 1:
        return "".join(rng.choice(CJK) for _ in range(rng.randint(1, 6)))
    if kind == 2:
        base = rng.choice("aeiouAEIOUnc" + "ㄱα" + "กनא")
        return base + "".join(rng.choice(COMBINING)
                              for _ in range(rng.randint(1, 4)))
    if kind == 3:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))
    if kind == 4:
        return rng.choice(CONTROLS)
    if kind == 5:
        return rng.choice(SPACES)
    if kind == 6:
        return rng.choice(PUNCT)
    if kind == 7:
        return str(rng.randrange(10 ** rng.randint(1, 8)))
    return rng.choice(RARE)


def mixed_strings():
    rng = random.Random(SEED)
    out = []
    for _ in range(MIXED_COUNT):
        parts = [piece(rng) for _ in range(rng.randint(1, 14))]
        joiner = rng.choice(["", " ", " ", " "])
        out.append(joiner.join(parts))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n")
                 if line and not line.startswith("#")]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("# tests/tokenizer/parity_strings.py: corpus.txt, then "
                f"{MIXED_COUNT} mixed strings (seed {SEED})\n")
        for line in lines:
            f.write(line + "\n")
        for text in mixed_strings():
            f.write(json.dumps(text) + "\n")
    print(f"parity_strings: {len(lines) + MIXED_COUNT} strings")


if __name__ == "__main__":
    main()
