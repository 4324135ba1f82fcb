#!/usr/bin/env python3
"""Reference ids of the Hugging Face CLIP fast tokenizer for a few thousand generated strings.

Independent implementation: the Rust `tokenizers` library (PyPI `tokenizers`, through
transformers' CLIPTokenizerFast when available) loaded from the real CLIP vocabulary in
${GOLDEN}/sd1/tokenizer/ (vocab.json + merges.txt + tokenizer.json: openai/clip-vit-large-patch14
layout). The vocabulary itself is NOT written out (it may not be copied into the repository);
only the strings and their ids are, into tests/data/clip/hf_ids.json, which
tests/unit/test_clip_tokenizer.c compares against (reading the vocabulary from the golden dir).

Strings: ASCII words in mixed case, punctuation, digits, contractions ('s 't 're 've 'm 'll 'd,
also upper case and inside punctuation runs), whitespace runs (tab, CR/LF, NBSP, U+3000,
U+2028), precomposed and combining accents (NFC), Latin/Greek/Cyrillic (final sigma, U+0130,
sharp s), CJK, Hangul syllables and jamo, Devanagari and Arabic (combining marks split \\p{L}
runs), digits of other scripts, superscripts and Roman numerals (\\p{N}), emoji (ZWJ, skin tones,
flags), the special tokens in upper and lower case, invalid-looking escapes. Only characters
of Unicode 9 or older are used there.

Then n/3 random sequences of letters, jamo and combining marks (NFC reordering/composition) and
n/3 strings of random assigned code points below U+30000 (every script's classes and case).
Those use this Python's Unicode data (the list is fixed by the seed); the C tables
(src/text/gen_clip_unicode.py) come from the same, and the Rust crates agreed on all of them.

Re-run:  python3 tests/golden/gen_clip_tokens.py [--golden /work/shared/golden] [--n 3000]
"""
import argparse
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

WORDS = ("a photo of cat dog astronaut riding horse masterpiece best quality ultra detailed "
         "landscape mountain river sunset golden hour portrait woman man girl boy city street "
         "night neon cyberpunk oil painting watercolor sketch anime style by greg rutkowski "
         "artstation trending octane render 8k hdr bokeh cinematic lighting sharp focus "
         "pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism xyzzy "
         "qwertyuiop zxcv lol brb").split()
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
CONTR = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'LL", "'D", "'x", "''"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", " \t ", "\u00a0", "\u3000", "\u2028", "\u2003", "\u0085"]
UNI = [
    "café", "naïve", "façade", "Ångström", "e\u0301", "A\u030a", "o\u0308\u0304", "n\u0303",
    "a\u0323\u0302", "ÜBER", "STRAẞE", "ß", "İstanbul", "ΟΔΟΣ", "Ελληνικά", "σοφία", "Москва",
    "русский", "ЁЛКА", "日本の桜", "中文", "漢字かなカナ", "한국어", "\u1100\u1161\u11a8",
    "ｆｕｌｌｗｉｄｔｈ", "हिन्दी", "नमस्ते", "العربية", "שלום", "ไทย", "١٢٣", "٤٥", "０１２",
    "x²", "³√", "Ⅻ", "ⅷ", "½", "№", "€", "£", "¥", "©", "™", "—", "–", "…", "“quoted”", "‘single’",
    "«guillemets»", "🐱", "🚗", "🎉", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "❤️", "☃", "★", "\u200b",
    "\ufeff", "\u00ad", "ﬁ", "Ǆ", "ǅ", "Ω", "Å", "K",
]
SPECIAL = ["<|startoftext|>", "<|endoftext|>", "<|ENDOFTEXT|>", "<|endoftext|", "<|"]


def piece(r):
    k = r.random()
    if k < 0.40:
        w = r.choice(WORDS)
        m = r.random()
        if m < 0.2:
            w = w.upper()
        elif m < 0.4:
            w = w.capitalize()
        elif m < 0.5:
            w = "".join(c.upper() if r.random() < 0.5 else c for c in w)
        return w
    if k < 0.52:
        return "".join(r.choice(PUNCT) for _ in range(r.randint(1, 4)))
    if k < 0.62:
        return str(r.randint(0, 10 ** r.randint(1, 7)))
    if k < 0.72:
        return r.choice(WORDS) + r.choice(CONTR)
    if k < 0.92:
        return r.choice(UNI)
    if k < 0.95:
        return r.choice(SPECIAL)
    return "".join(chr(r.randint(0x21, 0x7e)) for _ in range(r.randint(1, 8)))


def make_strings(n, seed):
    r = random.Random(seed)
    out = ["", " ", "a", "A", "'s", "'", "''s", "x's", "!'s", "3.14", "1,000", "a\u00a0b",
           "  leading", "trailing  ", "\t\n", "<|startoftext|>", "<|endoftext|><|endoftext|>"]
    while len(out) < n:
        parts = []
        for _ in range(r.randint(1, 12)):
            parts.append(piece(r))
            parts.append(r.choice(SPACES) if r.random() < 0.8 else "")
        s = "".join(parts)
        if r.random() < 0.3:
            s = s.strip()
        out.append(s)
    return out


def make_combining(n, seed):
    """Letters, Hangul jamo/syllables and combining marks in random order: NFC reordering and
    composition (also of non-adjacent marks), U+0130, Kelvin/Angstrom/Ohm singletons."""
    r = random.Random(seed)
    marks = list(range(0x300, 0x370)) + [0x591, 0x5B0, 0x5BC, 0x5C1, 0x93C, 0x94D, 0x1DC0, 0x20D0,
                                          0x302A, 0x3099, 0x309A]
    bases = (list(range(0x41, 0x5B)) + list(range(0xC0, 0x180)) + list(range(0x391, 0x3A9)) +
             list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3)) +
             list(range(0xAC00, 0xAC40)) + [0x3046, 0x304B, 0x30A6, 0x928, 0x5D0, 0x1E9E, 0x130,
                                            0x212B, 0x2126, 0x212A, 0xFB01, 0x1F00, 0x1FB3])
    return ["".join(chr(r.choice(marks)) if r.random() < 0.45 else chr(r.choice(bases))
                    for _ in range(r.randint(1, 10))) for _ in range(n)]


def make_random_codepoints(n, seed):
    """Any assigned, non-private code point below U+30000 (Python's Unicode data), with some
    ASCII between: the letter / number / whitespace classes and lower case of every script."""
    import unicodedata as u
    r = random.Random(seed)
    pool = [c for c in range(0x20, 0x30000) if u.category(chr(c)) not in ("Cs", "Co", "Cn")]
    return ["".join(chr(r.choice(pool)) if r.random() < 0.7 else r.choice(" aB1's.")
                    for _ in range(r.randint(1, 12))) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--golden", default=os.path.join(HERE, "..", "..", "..", "shared", "golden"))
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "clip", "hf_ids.json"))
    a = ap.parse_args()
    tok_dir = os.path.join(a.golden, "sd1", "tokenizer")
    import tokenizers
    try:
        from transformers import CLIPTokenizerFast
        tok = CLIPTokenizerFast.from_pretrained(tok_dir)
        tool = "transformers CLIPTokenizerFast (tokenizers %s)" % tokenizers.__version__

        def enc(s):
            return tok(s, add_special_tokens=False)["input_ids"]
    except Exception:  # transformers missing: the same Rust pipeline from tokenizer.json
        t = tokenizers.Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
        tool = "tokenizers %s Tokenizer.from_file(tokenizer.json)" % tokenizers.__version__

        def enc(s):
            return t.encode(s, add_special_tokens=False).ids
    strings = (make_strings(a.n, a.seed) + make_combining(a.n // 3, a.seed + 1) +
               make_random_codepoints(a.n // 3, a.seed + 2))
    cases = [[s, enc(s)] for s in strings]
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"tool": tool, "vocab": "golden sd1/tokenizer (openai/clip-vit-large-patch14)",
                   "note": "ids without BOS/EOS (add_special_tokens=False)",
                   "cases": cases}, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print("wrote %d cases to %s (%d bytes) with %s" % (len(cases), a.out, os.path.getsize(a.out), tool))


main()
