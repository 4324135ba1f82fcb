#!/usr/bin/env python3
"""Reference ids of the Hugging Face tokenizers library for Qwen2's byte-level BPE on a few
thousand generated strings.

Independent implementation: the Rust `tokenizers` library (PyPI `tokenizers`,
Tokenizer.from_file) loaded from the stand-in Qwen2 tokenizer of
${GOLDEN}/qwen_image/tokenizer/tokenizer.json (Qwen2's pipeline: NFC, Split with the Qwen2
regex (Isolated), ByteLevel, BPE, 31 added special tokens). The vocabulary is NOT written out
(it may not be copied into the repository); only the strings and their ids are, into
tests/data/qwen_text/qwen2_tokenizer_hf.json, which tests/unit/test_qwen2_tokenizer.c compares
against (reading the vocabulary from the golden dir at run time).

Strings: caption-like ASCII words in mixed case, punctuation runs (with and without a leading
space, followed by CR/LF runs), digit runs (split one digit per piece), contractions
('s 't 're 've 'm 'll 'd in any case, and ones that are not: 'x, ''), whitespace runs of every
kind before words, punctuation and line ends (the \\s+(?!\\S) rule), precomposed and combining
accents (NFC), other scripts, emoji, the special tokens (<|im_start|>, <|im_end|>, ... and broken
or upper-case forms that are not special), the Qwen-Image prompt template around a prompt.
Each case is [text, ids] or, for texts without added tokens, [text, ids, split] where split lists
the pre-tokenizer's pieces (lengths in code points of the NFC'd text, from
Tokenizer.pre_tokenizer.pre_tokenize_str), which checks the split regex on its own.
Then n/3 random sequences of letters and combining marks (NFC) and n/3 strings of random
assigned code points below U+30000 (Python's Unicode data; the C tables come from the same).

Re-run:  python3 tests/golden/gen_qwen2_tokenizer_ref.py [--golden /work/shared/golden] [--n 3000]
"""
import argparse
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

WORDS = ("a red fox sitting in snowy forest watercolor painting lighthouse on rocky coast at "
         "sunset zebra playing harmonica the moon neon sign says open above café door poster "
         "with ball and green box gradient background yellow triangle purple ring flat design "
         "describe image by detailing color shape size texture quantity text spatial "
         "relationships of objects photo cat dog astronaut riding horse masterpiece best "
         "quality ultra detailed landscape mountain river golden hour portrait woman man girl "
         "city street night cyberpunk oil sketch anime style cinematic lighting sharp focus "
         "pneumonoultramicroscopicsilicovolcanoconiosis xyzzy qwertyuiop zxcv").split()
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
CONTR = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D",
         "'M", "'x", "''", "'", "'ſ", "'K"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n ", " \t ", "\u00a0", "\u3000",
          "\u2028", "\u2003", "\u0085", "\r", "\x0b", "\x0c", "  \n  ", "\t\t"]
UNI = [
    "café", "naïve", "façade", "Ångström", "e\u0301", "A\u030a", "o\u0308\u0304", "n\u0303",
    "a\u0323\u0302", "ÜBER", "STRAẞE", "ß", "İstanbul", "ΟΔΟΣ", "Ελληνικά", "Москва", "ЁЛКА",
    "日本の桜", "中文", "漢字かなカナ", "한국어", "\u1100\u1161\u11a8", "ｆｕｌｌｗｉｄｔｈ",
    "हिन्दी", "नमस्ते", "العربية", "שלום", "ไทย", "١٢٣", "٤٥", "０１２", "x²", "³√", "Ⅻ",
    "½", "№", "€", "£", "©", "™", "—", "…", "“quoted”", "«guillemets»", "🐱", "🎉", "👍🏽",
    "👨\u200d👩\u200d👧", "🇫🇷", "❤️", "☃", "★", "\u200b", "\ufeff", "\u00ad", "ﬁ", "Ǆ", "Ω",
    "Å", "K", "\x01", "\x7f", "\x1b[0m",
]
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|vision_start|>", "<|image_pad|>",
           "<|vision_end|>", "<think>", "</think>", "<tool_call>", "<|tms_token|>",
           "<|IM_START|>", "<|im_start|", "<|im_", "<|", "|>", "<im_end>"]
TEMPLATE = ("<|im_start|>system\nDescribe the image by detailing the color, shape, size, "
            "texture, quantity, text, spatial relationships of the objects and "
            "background:<|im_end|>\n<|im_start|>user\n")
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n"


def piece(r):
    k = r.random()
    if k < 0.38:
        w = r.choice(WORDS)
        m = r.random()
        if m < 0.2:
            w = w.upper()
        elif m < 0.4:
            w = w.capitalize()
        elif m < 0.5:
            w = "".join(c.upper() if r.random() < 0.5 else c for c in w)
        return w
    if k < 0.50:
        return "".join(r.choice(PUNCT) for _ in range(r.randint(1, 4)))
    if k < 0.60:
        return str(r.randint(0, 10 ** r.randint(1, 7)))
    if k < 0.70:
        return r.choice(WORDS) + r.choice(CONTR)
    if k < 0.86:
        return r.choice(UNI)
    if k < 0.93:
        return r.choice(SPECIAL)
    return "".join(chr(r.randint(0x21, 0x7e)) for _ in range(r.randint(1, 8)))


def make_strings(n, seed):
    r = random.Random(seed)
    out = ["", " ", "a", "A", "'s", "'", "''s", "x's", "!'s", "3.14", "1,000", "a\u00a0b",
           "  leading", "trailing  ", "\t\n", "a  b", "a   b", "a \n b", "a\n\n\nb", "!!\n\n",
           " !!\r\n", "hello\r\n\r\nworld", "   ", "\n", " \n", "\n ", "x \t", "it's", "IT'S",
           "we'VE", "'ll'd", "a'ſ", "<|im_start|>", "<|im_start|><|im_end|>",
           "<|im_start|>user\nhi<|im_end|>", " <|im_end|> ", "<|endoftext|>x",
           TEMPLATE + SUFFIX, TEMPLATE + "a red fox" + SUFFIX]
    while len(out) < n:
        parts = []
        for _ in range(r.randint(1, 12)):
            parts.append(piece(r))
            parts.append(r.choice(SPACES) if r.random() < 0.8 else "")
        s = "".join(parts)
        if r.random() < 0.3:
            s = s.strip()
        if r.random() < 0.05:
            s = TEMPLATE + s + SUFFIX
        out.append(s)
    return out


def make_combining(n, seed):
    """Letters, Hangul jamo/syllables and combining marks in random order (NFC reordering and
    composition), with spaces and punctuation between."""
    r = random.Random(seed)
    marks = list(range(0x300, 0x370)) + [0x591, 0x5B0, 0x5BC, 0x93C, 0x94D, 0x1DC0, 0x20D0,
                                          0x302A, 0x3099, 0x309A]
    bases = (list(range(0x41, 0x5B)) + list(range(0xC0, 0x180)) + list(range(0x391, 0x3A9)) +
             list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) +
             list(range(0x11A8, 0x11C3)) + list(range(0xAC00, 0xAC40)) +
             [0x3046, 0x304B, 0x30A6, 0x928, 0x5D0, 0x1E9E, 0x130, 0x212B, 0x2126, 0x212A,
              0xFB01, 0x1F00, 0x1FB3, 0x20, 0x2E, 0x27])
    return ["".join(chr(r.choice(marks)) if r.random() < 0.45 else chr(r.choice(bases))
                    for _ in range(r.randint(1, 10))) for _ in range(n)]


def make_random_codepoints(n, seed):
    """Any assigned, non-private code point below U+30000 (Python's Unicode data), with some
    ASCII between: the letter / number / whitespace classes of every script."""
    import unicodedata as u
    r = random.Random(seed)
    pool = [c for c in range(0x20, 0x30000) if u.category(chr(c)) not in ("Cs", "Co", "Cn")]
    return ["".join(chr(r.choice(pool)) if r.random() < 0.7 else r.choice([" ", "a", "B", "1",
                                                                             "'s", ".", "\n", "  "])
                    for _ in range(r.randint(1, 12))) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--golden", default=os.path.join(HERE, "..", "..", "..", "shared", "golden"))
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "qwen_text",
                                                  "qwen2_tokenizer_hf.json"))
    a = ap.parse_args()
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(
        os.path.join(a.golden, "qwen_image", "tokenizer", "tokenizer.json"))
    tool = "tokenizers %s Tokenizer.from_file(tokenizer.json)" % tokenizers.__version__
    strings = (make_strings(a.n, a.seed) + make_combining(a.n // 3, a.seed + 1) +
               make_random_codepoints(a.n // 3, a.seed + 2))
    specials = [a["content"] for a in json.load(open(os.path.join(
        a.golden, "qwen_image", "tokenizer", "tokenizer.json"), encoding="utf-8"))["added_tokens"]]
    cases = []
    for s in strings:
        case = [s, tok.encode(s, add_special_tokens=False).ids]
        if not any(t in s for t in specials):
            # the pre-tokenizer alone: piece lengths in code points of the NFC'd text
            norm = tok.normalizer.normalize_str(s)
            pieces = tok.pre_tokenizer.pre_tokenize_str(norm)
            lens, pos = [], 0
            for _, (b, e) in pieces:
                assert b == pos, (s, pieces)
                lens.append(e - b)
                pos = e
            assert pos == len(norm), (s, pieces)
            case.append(lens)
        cases.append(case)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"tool": tool, "vocab": "golden qwen_image/tokenizer (stand-in Qwen2 BPE)",
                   "note": "[text, ids(, split)]: ids with add_special_tokens=False (the "
                           "ByteLevel post-processor adds nothing either way); split: piece "
                           "lengths (code points of the NFC text) of the pre-tokenizer",
                   "cases": cases}, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print("wrote %d cases to %s (%d bytes) with %s" % (len(cases), a.out, os.path.getsize(a.out),
                                                       tool))


main()
