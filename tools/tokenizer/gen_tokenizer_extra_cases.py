#!/usr/bin/python3
"""Extra tricky tokenizer cases for tests/unit/test_tokenizer.c.

Independent implementation: Google's sentencepiece library (Debian python3-sentencepiece
0.1.97, run with /usr/bin/python3), encoding with ../shared/golden/tokenizer/spiece.model.
Writes tests/data/tokenizer_extra_cases.json (hand-picked tricky strings) and
tests/data/tokenizer_stress_cases.json (corpus lines with long punctuation runs, seeded
random strings) with the same case layout as the golden
cases.json: {category, text, ids, pieces, t5_ids, decoded}. Deterministic. Then run
gen_tokenizer_hf_cases.js, which adds the Hugging Face tokenizer's ids (hf_ids, ...).

Usage: /usr/bin/python3 tools/tokenizer/gen_tokenizer_extra_cases.py [GOLDEN_DIR]
"""
import json
import os
import sys

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GOLDEN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "golden")
if len(sys.argv) <= 1 and not os.path.isdir(GOLDEN):
    GOLDEN = os.path.join(ROOT, "..", "..", "shared", "golden")  # git worktree layout

CASES = [
    # Unicode whitespace that sentencepiece's NMT rules or NFKC turn into spaces (or not)
    ("whitespace", "a\u2002b\u2003c\u2009d\u200ae"),
    ("whitespace", "x\u202fy\u205fz\u1680w"),
    ("whitespace", "line\u2028sep\u2029para"),
    # U+0085 (NEL): the charsmap keeps it (an unknown character for sentencepiece) but HF's
    # WhitespaceSplit splits on it (Rust char::is_whitespace)
    ("whitespace", "para\u0085nel \u0085"),
    ("whitespace", "vt\x0bff\x0cend"),
    ("whitespace", "\u00a0\u00a0leading nbsp"),
    ("whitespace", "a\u3000\u3000b"),
    ("whitespace", "a\t\tb\n\n\nc"),
    ("whitespace", "\u200b"),
    ("whitespace", "\x07\x7f"),
    ("whitespace", " \u3000 \u00a0 "),
    # combining marks and compositions
    ("combining", "e\u0301\u0301 n\u0303 A\u030a o\u0308"),
    ("combining", "\u1100\u1161\u11a8 jamo"),
    ("combining", "\uff76\uff9e\uff8a\uff9f"),
    ("combining", "\uff71\uff72\uff73"),
    ("combining", "i\u0307 \u0130stanbul"),
    # grapheme clusters: HF's Precompiled normalizer works per cluster (see README limits)
    ("grapheme", "x\r\ny \r\n"),
    ("grapheme", "A\u030a\u0301 o\u0308\u0304 \u00e9\u0301 e\u0301x"),
    ("grapheme", "\u0915\u094d\u0937 \u1100\u1161 \uac00\u0301"),
    ("grapheme", "\uff76\uff9e \uff8a\uff9f\uff9e"),
    ("grapheme", "\U0001f1fa\U0001f1f8\U0001f1ef x\u0301\u0301\u0301"),
    # metaspace literal
    ("metaspace", "\u2581"),
    ("metaspace", "\u2581\u2581\u2581"),
    ("metaspace", "a\u2581b"),
    ("metaspace", "\u2581 \u2581"),
    # NFKC compatibility folding
    ("nfkc", "\ufb00 \ufb03 \ufb04 \ufb05 \ufb06"),
    ("nfkc", "\u338f \u33a1 \u337b \u3231"),
    ("nfkc", "\u2103 \u2109 \u2160 \u2161 \u2170"),
    ("nfkc", "\u01c5 \ufdfa"),
    ("nfkc", "\u00b9\u00b2\u00b3 \u2080\u2081\u2082"),
    ("nfkc", "\u215e \u2189"),
    ("nfkc", "\U0001d400\U0001d401\U0001d402 \U0001d49c"),
    ("nfkc", "\u24b6\u24d1"),
    ("nfkc", "\u00df \u1e9e"),
    ("nfkc", "\u2018a\u2019 \u201ab\u201b \u201cc\u201d \u201ed"),
    ("nfkc", "\u2010\u2011\u2012\u2013\u2014\u2015"),
    ("nfkc", "\u2026\u2026\u2026"),
    # unknown characters and runs
    ("unknown", "\U0001f468\u200d\U0001f469\u200d\U0001f467 family"),
    ("unknown", "\U0001f1ef\U0001f1f5 flag"),
    ("unknown", "\U0001f44d\U0001f3fd ok"),
    ("unknown", "\u2764\ufe0f love"),
    ("unknown", "\u732b\u732b dog \u732b"),
    ("unknown", "\u0928\u092e\u0938\u094d\u0924\u0947 \u0645\u0631\u062d\u0628\u0627"),
    ("unknown", "a\u732bb\u732bc"),
    # special tokens separated by spaces (HF matches them; sp.encode spells them out)
    ("special", "<unk> <unk>"),
    ("special", "</s>"),
    ("special", "hello </s> <pad>"),
    # long words and runs
    ("long", "a" * 300),
    ("long", "supercalifragilisticexpialidocious antidisestablishmentarianism"),
    ("punct", "!!!!!!!!!! .... ------ ,,,,"),
    ("punct", "((((nested)))) [[x]] {{y}}"),
    ("mixed", "ＡＩ-generated 4K UHD wallpaper, ｆｕｌｌ-width"),
    ("mixed", "1st 2nd 3rd 4th 100th"),
    ("mixed", "tab\tand\u3000ideographic\u00a0mixed  spaces   here"),
]


def stress_texts(golden):
    """Lines of the training corpus with long runs of one punctuation character (where
    float rounding decides between equal-scoring segmentations) and seeded random strings
    mixing the scripts and characters that normalisation treats specially."""
    import gzip
    import random
    import re

    lines = gzip.open(os.path.join(golden, "tokenizer", "corpus.txt.gz"), "rt",
                      encoding="utf-8").read().split("\n")
    runs = [l[:200] for l in lines if re.search(r"([^\w\s])\1{3,}", l) and "<" not in l]
    seen = set()
    texts = []
    for l in runs:
        if l not in seen:
            seen.add(l)
            texts.append(l)
    texts = texts[:150]
    rnd = random.Random(1234)
    pools = [range(0x20, 0x7F), range(0xA0, 0x250), range(0x300, 0x370), range(0x2000, 0x2070),
             range(0x3000, 0x3010), range(0xFF00, 0xFFEF), range(0x1100, 0x1200),
             range(0xAC00, 0xAC40), range(0x2150, 0x2190), range(0x2460, 0x24FF),
             range(0x3300, 0x3400), range(0xFB00, 0xFB50),
             [0x1F600, 0x1F44D, 0x1F3FD, 0x200D, 0xFE0F, 0x1F1FA, 0x1F1F8],
             [9, 10, 13, 0x85, 0xA0, 0x2581, 0x200B, 0x200C, 0x200D, 0xAD, 0xFEFF, 7, 0x7F]]
    while len(texts) < 400:
        n = rnd.randint(1, 30)
        t = "".join(chr(rnd.choice(list(rnd.choice(pools)))) for _ in range(n))
        if "<" not in t:
            texts.append(t)
    return texts


def write_cases(sp, path, cases, extra):
    out = []
    for category, text in cases:
        ids = sp.encode(text)
        out.append({
            "category": category,
            "text": text,
            "ids": ids,
            "pieces": sp.encode(text, out_type=str),
            "t5_ids": ids + [sp.eos_id()],
            "decoded": sp.decode(ids),
        })
    doc = dict(extra)
    doc["cases"] = out
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path, len(out), "cases")


def main():
    sp = spm.SentencePieceProcessor(model_file=os.path.join(GOLDEN, "tokenizer", "spiece.model"))
    meta = {
        "generator": "tools/tokenizer/gen_tokenizer_extra_cases.py",
        "oracle": "sentencepiece " + spm.__version__ + " on golden/tokenizer/spiece.model",
    }
    write_cases(sp, os.path.join(ROOT, "tests", "data", "tokenizer_extra_cases.json"), CASES, meta)
    stress = [("stress", t) for t in stress_texts(GOLDEN)]
    write_cases(sp, os.path.join(ROOT, "tests", "data", "tokenizer_stress_cases.json"), stress,
                meta)


if __name__ == "__main__":
    main()
