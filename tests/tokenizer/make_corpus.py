#!/usr/bin/env python3
"""Writes tests/tokenizer/corpus.txt, the tokenizer parity corpus.

Usage: make_corpus.py <output file>     (run by hand; the output is committed)

Deterministic (fixed seed, fixed source files), so rerunning it on a Debian
bookworm machine reproduces the committed file. The file's header says where
each kind of string comes from.
"""
import json
import random
import sys
import unicodedata

SEED = 12

HEADER = """\
# Tokenizer parity corpus (tests/tokenizer/make_corpus.py writes it).
# One test string per line, as a JSON string literal, so that NUL, control
# characters and line breaks fit on one line; lines starting with # are
# comments, and "# kind:" lines name the group that follows.
# Where each kind of string comes from:
# - prose: the first lines of two licence texts that Debian's base-files
#   installs, /usr/share/common-licenses/Apache-2.0 and GPL-3 (both allow
#   verbatim copies).
# - languages (accents, Greek, Cyrillic, Arabic, Hebrew, Persian, Indic,
#   Thai, Lao, Khmer, CJK, Japanese, Korean, Georgian, Armenian, Ethiopic):
#   short everyday sentences written for this corpus.
# - urls, special tokens, casing, long words: written for this corpus.
# - emoji, controls, whitespace, punctuation, combining marks: built from
#   code points by make_corpus.py: every C0 and C1 control and NUL, every
#   White_Space character and the common format characters (ZWSP, ZWJ, BOM,
#   soft hyphen), emoji with ZWJ sequences, skin tones, flags and keycaps.
# - random: seeded random strings (seed 12) over code points of long-stable
#   Unicode blocks (assigned before Unicode 6), so that every tokenizer
#   compared, whatever its Unicode version, classifies them alike.
"""

LANGUAGES = [
    "Le cœur a ses raisons que la raison ne connaît point.",
    "Où est la bibliothèque ? À côté de l'église, près du château.",
    "Übermäßig große Straßen führen nach Köln und München.",
    "¿Dónde está el niño? ¡Está en la canción del señor Muñoz!",
    "A ação da produção começou às três horas, disse João.",
    "Tiếng Việt có rất nhiều dấu: ắ ằ ẳ ẵ ặ ế ề ể ễ ệ.",
    "Zażółć gęślą jaźń — polskie znaki diakrytyczne.",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Çalışkan öğrenciler ılık süt içti; İstanbul ve Iğdır.",
    "Hyvää päivää, mitä kuuluu? Åland ja Öresund.",
    "Þetta reddast, sagði Guðrún á Íslandi.",
    "καλημέρα κόσμε, τι κάνεις σήμερα;",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "Привет, мир! Как дела? Съешь же ещё этих мягких французских булок.",
    "Ґанок, їжак, єнот — українська абетка.",
    "مرحبا بالعالم! كيف حالك اليوم؟",
    "اللُّغَةُ العَرَبِيَّةُ جَمِيلَةٌ جِدًّا",
    "שלום עולם, מה שלומך?",
    "סֵפֶר בְּרֵאשִׁית",
    "سلام دنیا، حال شما چطور است؟",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "আমি বাংলায় গান গাই।",
    "வணக்கம் உலகம்",
    "สวัสดีชาวโลก วันนี้อากาศดีมาก",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
    "ສະບາຍດີ ໂລກ",
    "សួស្តី​ពិភពលោក",
    "你好，世界！今天天气很好。",
    "繁體中文與簡體中文並存。",
    "日本語のテキスト、ひらがなとカタカナと漢字。",
    "東京タワーは３３３メートルです。",
    "안녕하세요 세계! 한국어 문장입니다.",
    "한글은 음절 단위로 조합됩니다",
    "გამარჯობა მსოფლიო",
    "Բարեւ աշխարհ",
    "ሰላም ልዑል",
    "Hello世界мир عالم עולם",
    "naïve café résumé coöperate façade",
    "ÀÁÂÃÄÅ àáâãäå ÈÉÊË èéêë",
    "Ångström, Øresund, Æsir, œuvre",
    "mixed: abcабвαβγ一二三あいう가나다",
    "English text with 中文 inside and Русский too.",
    "numbers ١٢٣ ۴۵۶ १२३ ๑๒๓ 一二三 ①②③",
]

URLS = [
    "https://example.com/path/to/page?query=1&other=two#fragment",
    "http://user:pass@host.example.org:8080/a/b/c.html",
    "ftp://files.example.net/pub/file-1.2.3.tar.gz",
    "mailto:someone@example.com",
    "Contact us at support@example.co.uk or sales+tag@example.io.",
    "www.example.com/index.php?id=42&lang=en_US",
    "https://en.wikipedia.org/wiki/Bidirectional_Encoder_Representations_from_Transformers",
    "See https://example.com/ünïcödé/路径 for details.",
    "file:///usr/share/doc/README.Debian",
    "git@github.example:org/repo.git",
    "C:\\Program Files\\App\\app.exe --flag=value",
    "/usr/local/bin/favor-server --port=50051",
    "int main(int argc, char** argv) { return 0; }",
    "x = a->b + c[i] * (d / e) - f % g;",
    "if (a && b || !c) { x <<= 2; y >>= 3; }",
    "SELECT * FROM users WHERE id = 1 AND name LIKE '%bob%';",
    "<html><body><p class=\"x\">Hello &amp; welcome</p></body></html>",
    "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
    "$HOME/.config/app.yaml: key=value # comment",
    "2024-01-15T12:34:56.789Z",
    "+1 (555) 123-4567, ext. 89",
    "$1,234.56 €99,99 £10 ¥1000 ₹500 ₩3000",
    "100% of 3/4 = 0.75; 2^10 = 1024; 10 ≥ 9 ≠ 8",
    "#hashtag @mention ~tilde `backtick` |pipe|",
    "192.168.0.1:8080 [::1]:443 fe80::1%eth0",
    "e.g. i.e. etc. vs. Mr. Dr. U.S.A.",
    "don't won't can't I'm you're it's",
    "semi;colon,comma.period!exclaim?question",
]

SPECIAL_TOKENS = [
    "[CLS] hello [SEP]",
    "the [MASK] sat on the mat",
    "[mask] lowercase is not special",
    "[UNK][UNK] twice",
    "a[PAD]b",
    "[CLS][SEP][PAD][MASK][UNK]",
    "[ CLS ] [CLS [SEP",
    "[[MASK]]",
    "text with [unused5] inside",
    "[SEP]",
]

CASING = [
    "İSTANBUL istanbul IĞDIR ığdır",
    "STRASSE Straße ẞ",
    "ﬁnance ﬂower ﬀ ﬃ",
    "ＦＵＬＬＷＩＤＴＨ ｆｕｌｌｗｉｄｔｈ １２３",
    "Ⅻ ⅻ Ⅳ ⅳ",
    "K Å Ω (Kelvin, Angstrom, Ohm signs)",
    "ǅ ǈ ǋ ǲ titlecase digraphs",
    "ÉCOLE ÉLÈVE ÇA",
    "ΑΒΓΔΕ ΖΗΘ ικλμ",
    "АБВГД ЁЖЗ",
    "ŉ ǰ ΐ ΰ",
    "Ǆemal ǄEMAL",
    "µ micro sign and μ mu",
    "ſ long s, ꝺ insular d",
    "Ⓐⓑⓒ circled",
    "𝐀𝐁𝐂 𝒜ℬ𝒞 mathematical",
]

LONG_WORDS = [
    "a" * 99,
    "a" * 100,
    "a" * 101,
    "b" * 150,
    "é" * 100,
    "é" * 101,
    "unbelievable" * 8,
    "unbelievable" * 9,
    "x" * 10000,
    "9" * 200,
    "supercalifragilisticexpialidocious",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "Donaudampfschifffahrtsgesellschaftskapitän",
    "中" * 120,
    "한" * 120,
    "ab" * 60 + " short",
    "antidisestablishmentarianism " * 5,
]

EMOJI = [
    "😀", "I ❤️ NY", "👍🏽 thumbs up", "👨‍👩‍👧‍👦 family",
    "🏳️‍🌈 flag", "🇫🇷🇩🇪🇯🇵 flags", "1️⃣2️⃣3️⃣ keycaps",
    "👩🏾‍💻 coder", "🧑‍🤝‍🧑", "emoji😀inside😃words",
    "🙂🙃😉😊😇🥰😍🤩😘😗", "☺ ☹ ☠ ♥ ★ ☆ ✓ ✗",
    "🐶🐱🐭🐹🐰🦊🐻🐼", "👋 hi 👋🏻 👋🏼 👋🏽 👋🏾 👋🏿",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿 Scotland", "❤️‍🔥 heart on fire", "🧔‍♂️ man beard",
    "😀" * 50, "a😀b😀c", "🎉🎉🎉!!!",
]


def to_line(s):
    """s as a JSON string literal with every invisible character escaped,
    so the file reads well and no reader splits a line at U+2028 or NEL."""
    out = []
    for ch in json.dumps(s, ensure_ascii=False):
        if ch != " " and unicodedata.category(ch)[0] in "CZ":
            encoded = ch.encode("utf-16-be")
            for i in range(0, len(encoded), 2):
                out.append("\\u%04x" % int.from_bytes(encoded[i:i + 2], "big"))
        else:
            out.append(ch)
    return "".join(out)


def prose_lines(path, count):
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[:count]


def controls():
    out = []
    for c in list(range(0x00, 0x20)) + [0x7F] + list(range(0x80, 0xA0)):
        out.append(f"a{chr(c)}b")
        out.append(f"word{chr(c)} next")
    out.append("\x00")
    out.append("nul\x00in\x00the\x00middle")
    out.append("\x00\x00\x00 leading nuls")
    out.append("tab\tnewline\ncarriage\rreturn")
    out.append("\ufffd replacement \ufffd char")
    return out


WHITESPACE = [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680] + \
    list(range(0x2000, 0x200B)) + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
FORMAT = [0x00AD, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0xFEFF,
          0x061C, 0x202A, 0x202E]


def whitespace():
    out = []
    for c in WHITESPACE + FORMAT:
        out.append(f"left{chr(c)}right")
    out.append("".join(chr(c) for c in WHITESPACE) + "word")
    out.append("   leading and trailing   ")
    out.append("many" + " " * 500 + "spaces")
    out.append("\n\n\nnewlines\n\n")
    out.append(" \t \u3000 \u00a0 ")
    return out


def punctuation():
    ascii_punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    out = [ascii_punct, ascii_punct[::-1], "...", "?!?!", "--", "—–-",
           "«quoted» „German“ “English” ‘single’ ‹angle›",
           "…⋯ ¡¿ · ・、。「」『』【】〔〕",
           "؟ ، ؛ ۔ । ॥ ։ ፡ ።", "§¶†‡•‣※‼⁇⁈⁉",
           "a.b,c;d:e!f?g", "(((nested)))", "'quoted'", "\"double\"",
           "end.", ".start", "x" + "!" * 300]
    for i in range(0, len(ascii_punct), 4):
        out.append(f"w{ascii_punct[i:i + 4]}w")
    return out


def combining_marks():
    marks = [0x0300, 0x0301, 0x0302, 0x0303, 0x0308, 0x030A, 0x0327, 0x0328,
             0x0331, 0x0345, 0x05B0, 0x064B, 0x0651, 0x093C, 0x0E31, 0x20D7,
             0x3099, 0x309A]
    out = [chr(m) for m in marks]
    out.append(" " + chr(0x0301) + " lone acute after a space")
    out.append(chr(0x0301) + "leading mark")
    out.append("e" + "".join(chr(m) for m in marks[:8]))
    out.append("Z̴̡̛̗̯̰a̷̢̛͚l̸̨̛̩g̶̢̛̫o̵̧̟")
    out.append("a" + chr(0x0345) + chr(0x0301) + chr(0x0316) + "b")
    out.append("q" + chr(0x0307) + chr(0x0323) + " q" + chr(0x0323) + chr(0x0307))
    out.append("e\u0301 vs \u00e9")
    out.append("\u1e0b\u0323 \u1e0d\u0307")
    out.append("\u0041\u030a \u00c5 \u212b")
    out.append("\u0300" * 200)
    return out


# (first, last) inclusive ranges assigned before Unicode 6.
RANDOM_POOLS = [
    (0x20, 0x7E), (0xA0, 0xFF), (0x100, 0x17F), (0x180, 0x24F),
    (0x3B1, 0x3C9), (0x391, 0x3A1), (0x3A4, 0x3A9), (0x410, 0x44F),
    (0x5D0, 0x5EA), (0x621, 0x64A), (0x660, 0x669), (0x905, 0x939),
    (0x966, 0x96F), (0xE01, 0xE2E), (0xE30, 0xE3A), (0x1100, 0x1112),
    (0x3041, 0x3094), (0x30A1, 0x30F6), (0x4E00, 0x9FA5), (0xAC00, 0xD7A3),
    (0x2010, 0x2027), (0x2030, 0x205E), (0x3000, 0x3003), (0x3008, 0x3011),
    (0x300, 0x34E), (0x1F600, 0x1F64F), (0x1F300, 0x1F3F0), (0x2600, 0x26FF),
    (0xFF01, 0xFF5E), (0x0, 0x1F), (0x80, 0x9F), (0xF900, 0xFA2D),
]


def random_strings(rng, count):
    out = []
    for _ in range(count):
        length = rng.randint(1, 60)
        chars = []
        for _ in range(length):
            first, last = rng.choice(RANDOM_POOLS)
            chars.append(chr(rng.randint(first, last)))
        out.append("".join(chars))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rng = random.Random(SEED)
    groups = [
        ("prose (Apache-2.0)", prose_lines(
            "/usr/share/common-licenses/Apache-2.0", 150)),
        ("prose (GPL-3)", prose_lines("/usr/share/common-licenses/GPL-3", 150)),
        ("languages", LANGUAGES),
        ("urls and code", URLS),
        ("special tokens", SPECIAL_TOKENS),
        ("casing", CASING),
        ("long words", LONG_WORDS),
        ("emoji", EMOJI),
        ("controls", controls()),
        ("whitespace", whitespace()),
        ("punctuation", punctuation()),
        ("combining marks", combining_marks()),
        ("random", random_strings(rng, 520)),
    ]
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write(HEADER)
        for kind, strings in groups:
            f.write(f"# kind: {kind}\n")
            for s in strings:
                f.write(to_line(s) + "\n")


if __name__ == "__main__":
    main()
