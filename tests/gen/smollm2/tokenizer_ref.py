#!/usr/bin/env python3
"""Tokenizer reference ids for SmolLM2-135M-Instruct (GGUF), as transformers 4.45.2 builds it.

Outputs (in /work/refs/):
  tokenizer_ref.jsonl.zst   one JSON object per line: {"cat", "text", "utf8_hex", "ids"[, "ids_smollm_pre"]}
                            (lines end with "\n" only; texts are raw UTF-8 and may contain U+2028, U+0085
                            and U+0000 (escaped as \u0000): split on "\n" only; utf8_hex = the text's bytes)
                            ids = tok(text, add_special_tokens=False)["input_ids"] from
                            AutoTokenizer.from_pretrained(dir, gguf_file=...);
                            ids_smollm_pre is present only where a tokenizer with the
                            llama.cpp 'smollm' pre-tokenization (see below) gives different ids.
  tokenizer_policy.json     special-token facts: what add_special_tokens=True adds, bos/eos/unk/pad
                            as transformers builds them vs. the GGUF metadata, examples.
  tokenizer_transformers_4.45.2.json   tok.backend_tokenizer.to_str() (inspection only, not for commit)

Ran with (see /work/refs/SOURCES.md):
  Python 3.11.2 (Debian 12 /usr/bin/python3; venv /work/venv --system-site-packages)
  transformers 4.45.2, tokenizers 0.20.3, gguf 0.19.0, numpy 1.24.2 (Debian),
  torch 1.13.0a0 (Debian python3-torch 1.13.1+dfsg), zstandard 0.25.0; lm-eval 0.4.5 not used here.

Run:
  /work/venv/bin/python /work/refs/scripts/tokenizer_ref.py [GGUF_DIR] [GGUF_FILE]
  defaults: /work/cache/smollm2  SmolLM2-135M-Instruct.Q4_1.gguf

The "smollm_pre" comparison tokenizer is built here with the `tokenizers` library from the same
GGUF vocab and merges: pre-tokenizer Sequence[Digits(individual_digits=True),
ByteLevel(add_prefix_space=False, use_regex=True)] (= llama.cpp's pre-type 'smollm': split every
\\p{N} character, then the GPT-2 regex), BPE without unk token and without byte fallback, no
post-processor, the 17 CONTROL tokens as special added tokens. It is only a comparison; the
reference ids are the transformers ones.
"""
import importlib.metadata as md
import json
import os
import sys
import time

import zstandard

GGUF_DIR = sys.argv[1] if len(sys.argv) > 1 else "/work/cache/smollm2"
GGUF_FILE = sys.argv[2] if len(sys.argv) > 2 else "SmolLM2-135M-Instruct.Q4_1.gguf"
OUTDIR = "/work/refs"


def test_strings():
    S = []

    def add(cat, items):
        for t in items:
            S.append((cat, t))

    add("empty", [""])
    add("prose", [
        "Hello world",
        "Hello, world!",
        "The quick brown fox jumps over the lazy dog.",
        "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
        "I'm sure you'll agree that we've done what we'd planned; they're here and it's fine.",
        "DON'T SHOUT. I'M NOT DEAF, YOU'RE JUST LOUD.",
        "She said, \"Don't go there.\" He replied: 'Why not?'",
        "Photosynthesis converts light energy into chemical energy stored in glucose.",
        "The mitochondria is the powerhouse of the cell.",
        "Water boils at 100 degrees Celsius at sea level.",
        "In 1492, Columbus sailed the ocean blue.",
        "Mr. Smith went to Washington D.C. on Jan. 5th, 2021.",
        "e.g. this, i.e. that, etc.",
        "Wait... what?! No way!!!",
        "Question: Which of these is a mammal?\nAnswer: whale",
        "Question: What is the boiling point of water?\nAnswer:",
        " Answer",
        " the",
        "the",
        "The",
        " The",
        "  the",
        "unbelievably",
        "antidisestablishmentarianism",
        "supercalifragilisticexpialidocious",
        "Pneumonoultramicroscopicsilicovolcanoconiosis is a long word.",
        "rock'n'roll",
        "o'clock",
        "the dog's bone and the dogs' bones",
        "It's, it'S, IT'S, it 's",
        "we'LL, they'Re, I'D, you'VE",
        "state-of-the-art, well-known, mother-in-law",
        "A/B testing and/or C/D",
        "Once upon a time, in a land far, far away, there lived a king who had three daughters.",
        "The committee's decision — announced on Tuesday — surprised everyone.",
        "Energy cannot be created or destroyed; it can only be transformed from one form to another.",
        "Plants need sunlight, water, and carbon dioxide to grow.",
        "lowercase only sentence without punctuation",
        "ALL CAPS SENTENCE WITHOUT PUNCTUATION",
        "MiXeD cAsE tExT",
        "camelCaseIdentifier and snake_case_identifier and kebab-case-identifier",
        "Hello\nworld",
        "Hello\n\nworld",
        "Hello \nworld",
        "Hello\n world",
        "end of text.\n",
        "tl;dr: read the docs.",
        "The price is $19.99 (or €18,50).",
        "50% off! #sale @store &more",
        "user@example.com wrote: https://www.example.org/path?query=1&x=y#frag",
    ])
    add("code", [
        "def add(a, b):\n    return a + b\n",
        "for i in range(10):\n\tprint(i)",
        "import numpy as np\nx = np.zeros((3, 4), dtype=np.float32)",
        "class Foo(Bar):\n    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n",
        "#include <stdio.h>\n\nint main(void) {\n    printf(\"hello, world\\n\");\n    return 0;\n}\n",
        "static inline float f16_to_f32(uint16_t h) { return (float)h; }",
        "if (x != NULL && *x >= 0x7f) { x[i++] <<= 2; }",
        "for (int i = 0; i < n; ++i) sum += a[i] * b[i];",
        "function greet(name) {\n  return `Hello, ${name}!`;\n}",
        "const arr = [1, 2, 3].map(x => x * 2);",
        "let x: Option<Vec<u8>> = None;\nfn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
        "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n",
        "SELECT id, name FROM users WHERE age > 30 ORDER BY name DESC;",
        "<html><body><div class=\"x\">Hi &amp; bye</div></body></html>",
        "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do echo \"$f\"; done",
        "{\"key\": \"value\", \"n\": 42, \"list\": [true, false, null]}",
        "\\begin{equation} E = mc^2 \\end{equation}",
        "main :: IO ()\nmain = putStrLn \"Hello\" >> return ()",
        "public static void main(String[] args) { System.out.println(\"Hi\"); }",
        "x = lambda: None  # comment\n",
        "    indented four\n        indented eight\n",
        "\t\ttabbed twice\n",
        "a==b!=c<=d>=e->f=>g::h",
        "i++; j--; k **= 2; l //= 3; m %= 4;",
        "/* block comment */ // line comment",
        "`~!@#$%^&*()_+-=[]{}|;':\",./<>?",
        "<?php echo $var; ?>",
        "df.groupby('col').agg({'x': 'mean'}).reset_index()",
        "```python\nprint('hi')\n```",
        "def f():\n\n\n    pass",
        "print(\"\\t\\n\\r\")",
        "0xDEADBEEF 0b1010 0o777 1_000_000",
        "std::vector<std::pair<int, int>> v;",
        "git commit -m \"fix: bug #123\"",
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);",
        "  - item one\n  - item two\n",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "x[::-1], y[1:-1], z[..., None]",
        "@decorator\ndef g(): ...",
    ])
    add("numbers", [
        "0", "7", "42", "123", "1234", "12345", "1234567890",
        " 1", " 12", " 123", "  1", "   123", "\t42", "\n42",
        "x1", "x 1", "x  1", "x   1", "a1b2c3", "abc123def",
        "3.14159", "2.71828182845904523536", "-17", "+5", "1e-10", "6.022e23",
        "1,000,000", "1.000.000,50", "2024-01-15", "12:34:56", "(555) 123-4567",
        "98765432109876543210987654321098765432109876543210",
        "The year 2025 has 365 days.",
        "Version 1.2.3-beta+build.45",
        "٣٤٥ Arabic-Indic digits", "१२३ Devanagari digits", "１２３ fullwidth digits",
        "² ³ ¹ superscripts", "½ ¼ ¾ fractions", "Ⅻ roman numeral", "①②③ circled",
        "10^9 + 7", "2**31 - 1 = 2147483647", "0.000001",
    ])
    add("whitespace", [
        " ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r",
        " \n", "\n ", " \n ", "\t \n", "a b", "a  b", "a   b", "a\tb", "a\t\tb", "a \tb", "a\t b",
        "a\nb", "a\r\nb", "a\r\n\r\nb", "a\rb", "a \r\n b", "line1\r\nline2\r\nline3\r\n",
        "   leading spaces", "trailing spaces   ", "  both  ", "\tleading tab", "trailing tab\t",
        "\n\nleading newlines", "trailing newlines\n\n", " a", "a ", " a ",
        "a\u00a0b (no-break space)", "a\u3000b (ideographic space)", "a\u2028b (line separator)",
        "a\x0bb (vertical tab)", "a\x0cb (form feed)", "a\u2009b (thin space)", "a\u200bb (zero-width space)",
        "spaces  \t  mixed \n\t\n  ",
    ])
    add("unicode", [
        "café", "cafe\u0301 (decomposed)", "naïve résumé façade", "Größe Straße Äpfel", "¿Dónde está el baño?",
        "Ñandú", "Tiếng Việt có dấu", "Ελληνικά γράμματα", "Русский текст", "Українська мова",
        "日本語のテキスト", "中文文本测试", "한국어 텍스트", "こんにちは世界", "你好，世界！",
        "漢字とひらがなとカタカナ", "ｶﾀｶﾅ halfwidth",
        "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "❤️", "I love 🍕 and 🍣!", "🤖🚀✨",
        "مرحبا بالعالم", "שלום עולם", "English then عربي then English", "\u202eRTL override\u202c",
        "नमस्ते दुनिया", "สวัสดีชาวโลก", "ሰላም ዓለም", "Բարեւ", "ქართული",
        "Z\u0351\u0352\u0353a\u0354\u0355l\u0356\u0357g\u0358o", "e\u0301\u0302\u0303\u0304",
        "∀x∈ℝ: x² ≥ 0", "∑ᵢ aᵢ ≤ ∫ f(x) dx", "→ ← ↑ ↓ ⇒", "┌─┐│└┘", "© ® ™ § ¶ † ‡",
        "\ufeffBOM at start", "\ufffd replacement char", "\ue000 private use", "x\u200dy (ZWJ)",
        "ﬁ ligature", "Ω Ω (ohm vs omega)", "Å Å (angstrom vs A-ring)",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters", "𠀀 CJK extension B",
    ])
    add("invalid_looking", [
        "\\xff\\xfe", "%C3%28 percent-encoded", "Ã© mojibake Ã¼", "\\u00e9 escaped", "&#233; &eacute;",
        "<0x0A>", "<0xFF>", "<unk>", "<s>", "</s>", "<pad>", "[CLS] [SEP] [MASK]",
        "\\n literal backslash-n", "\x00 NUL", "\x01\x02\x03", "\x7f DEL", "\x1b[31mred\x1b[0m",
        "\x04", "\x06", "\x13\x14", "a\x16b\x1dc",
        "\U00050000", "\U0008ABCD", "x\U00040000y",
        "\u0080\u0085\u009f C1 controls", "\ud7ff\ue000 around surrogates", "\U0010FFFF max code point",
    ])
    add("special_strings", [
        "<|im_start|>", "<|im_end|>", "<|endoftext|>",
        "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n",
        "text<|endoftext|>more text", "<|endoftext|><|endoftext|>", " <|im_start|> ", "a<|im_end|>b",
        "<|im_start|", "im_start|>", "<|IM_START|>", "< |im_start| >", "<|im_start|><|im_end|>",
        "<repo_name>foo<file_sep>bar<filename>", "<jupyter_code>print(1)<jupyter_output>1",
        "<gh_stars>100", "<issue_start>title<issue_comment>text<issue_closed>", "<empty_output>",
        "The token <|endoftext|> ends a document.",
    ])
    add("misc", [
        "a", "A", "z", "!", "?", ".", ",", "'", "\"", "-", "_", "~", "`", "^", "|", "\\", "/",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ab" * 40, "the " * 30, "!!!!!!!!!!!!!!!!!!!!", "................", "----------------",
        "================", "________________", "don’t won’t it’s (curly apostrophes)", "“quoted” ‘single’",
        "http://example.com/a/b/c.html", "C:\\Users\\Name\\file.txt", "/usr/local/bin/python3",
        "**bold** _italic_ `code` ~~strike~~", "# Heading\n## Subheading\n",
        "(((nested))) [[brackets]] {{braces}}", "A. B. C. D.", "(A) (B) (C) (D)", "1. 2. 3.",
        " A", " B", " C", " D", "Answer: A", "Answer: (B)",
    ])
    return S


def build_smollm_pre(gguf_path):
    from gguf import GGUFReader
    from tokenizers import Tokenizer, AddedToken, pre_tokenizers, decoders
    from tokenizers.models import BPE
    r = GGUFReader(gguf_path)
    f = r.fields["tokenizer.ggml.tokens"]
    toks = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    f = r.fields["tokenizer.ggml.merges"]
    merges = [tuple(bytes(f.parts[i]).decode("utf-8").split(" ")) for i in f.data]
    f = r.fields["tokenizer.ggml.token_type"]
    ttype = [int(f.parts[i][0]) for i in f.data]
    vocab = {t: i for i, t in enumerate(toks)}
    tk = Tokenizer(BPE(vocab, merges, unk_token=None, fuse_unk=False, byte_fallback=False))
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken(toks[i], normalized=False, special=True) for i, t in enumerate(ttype) if t == 3])
    return tk


def main():
    from transformers import AutoTokenizer
    import transformers, tokenizers
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(GGUF_DIR, gguf_file=GGUF_FILE)
    t_load = time.time() - t0
    alt = build_smollm_pre(os.path.join(GGUF_DIR, GGUF_FILE))

    strings = test_strings()
    texts = [t for _, t in strings]
    assert len(set(texts)) == len(texts), [t for t in texts if texts.count(t) > 1]
    lines, ndiff, nrt = [], 0, 0
    diffs = []
    t0 = time.time()
    for cat, text in strings:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        rec = {"cat": cat, "text": text, "utf8_hex": text.encode("utf-8").hex(), "ids": ids}
        a = alt.encode(text, add_special_tokens=False).ids
        if a != ids:
            rec["ids_smollm_pre"] = a
            ndiff += 1
            diffs.append((text, tok.convert_ids_to_tokens(ids), alt.id_to_token and [alt.id_to_token(i) for i in a]))
        if tok.decode(ids) == text:
            nrt += 1
        lines.append(json.dumps(rec, ensure_ascii=False))
    t_enc = time.time() - t0
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with open(os.path.join(OUTDIR, "tokenizer_ref.jsonl.zst"), "wb") as f:
        f.write(zstandard.ZstdCompressor(level=19).compress(data))

    # policy / special tokens
    ex = ["Hello world", "", "<|im_start|>user\nhi<|im_end|>"]
    policy = {
        "generator": {"script": "refs/scripts/tokenizer_ref.py", "python": sys.version.split()[0],
                      "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                      "gguf": md.version("gguf")},
        "transformers_tokenizer_class": type(tok).__name__,
        "transformers_special_tokens": {
            "bos_token": tok.bos_token, "bos_token_id": tok.bos_token_id,
            "eos_token": tok.eos_token, "eos_token_id": tok.eos_token_id,
            "unk_token": tok.unk_token, "unk_token_id": tok.unk_token_id,
            "pad_token": tok.pad_token, "pad_token_id": tok.pad_token_id,
            "add_bos_token": getattr(tok, "add_bos_token", None),
            "add_eos_token": getattr(tok, "add_eos_token", None),
            "all_special_tokens": tok.all_special_tokens,
        },
        "add_special_tokens_true_examples": [
            {"text": t, "ids_add_special_tokens_true": tok(t)["input_ids"],
             "ids_add_special_tokens_false": tok(t, add_special_tokens=False)["input_ids"]} for t in ex],
        "gguf_metadata": {
            "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm",
            "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
            "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.padding_token_id": 2,
            "tokenizer.ggml.add_bos_token": False, "tokenizer.ggml.add_space_prefix": False,
            "tokenizer.ggml.add_eos_token": "absent",
        },
        "published_policy": "No BOS and no EOS are added when encoding plain text (GGUF "
                            "tokenizer.ggml.add_bos_token = false; add_eos_token absent). "
                            "<|im_start|> (1) and <|im_end|> (2) appear only through the ChatML chat template; "
                            "<|endoftext|> (0) is the document separator of the pre-training data.",
        "transformers_4.45.2_issues": [
            "GGUFLlamaConverter.tokenizer() reads eos_token from proto.tokens[proto.bos_token_id] and then swaps "
            "the two when filling additional_kwargs, so both bos_token and eos_token become <|im_start|> (id 1); "
            "the GGUF's eos <|im_end|> (2) is lost (tok.eos_token_id == 1).",
            "The GGUF key tokenizer.ggml.add_bos_token=false is not read: the LlamaTokenizerFast gets "
            "add_bos_token=True and a TemplateProcessing post-processor '<|im_start|> $A', so "
            "add_special_tokens=True (the default) prepends id 1.",
            "tokenizer.ggml.pre='smollm' is ignored: the pre-tokenizer is plain ByteLevel(use_regex=True) (GPT-2 regex), "
            "without the Digits(individual_digits) split; this changes ids where a whitespace run precedes a digit "
            "(e.g. 'x  1'), see ids_smollm_pre.",
            "The BPE model gets unk_token='<|endoftext|>' (GGUF unknown_token_id 0), byte_fallback=True, fuse_unk=True: "
            "bytes with no byte-level token in the vocab (0x04 0x06 0x13 0x14 0x16 0x1D 0xF1 0xF2 among those valid "
            "UTF-8 can contain) become id 0; a tokenizer without unk drops them.",
            "pad_token is None although the GGUF has padding_token_id 2.",
        ],
        "counts": {"strings": len(strings), "smollm_pre_differs": ndiff, "decode_roundtrip_equal": nrt},
        "timing_s": {"load_tokenizer": round(t_load, 2), "encode_all": round(t_enc, 3)},
    }
    with open(os.path.join(OUTDIR, "tokenizer_policy.json"), "w") as f:
        json.dump(policy, f, indent=1, ensure_ascii=False)
    with open(os.path.join(OUTDIR, "tokenizer_transformers_4.45.2.json"), "w") as f:
        f.write(tok.backend_tokenizer.to_str(pretty=True))
    print(f"{len(strings)} strings, {ndiff} differ with smollm pre-tokenization, {nrt} decode round-trips; "
          f"load {t_load:.1f}s encode {t_enc:.2f}s")
    for d in diffs:
        print("  DIFF", repr(d[0])[:60], d[1][:12], "| smollm_pre:", d[2][:12])


if __name__ == "__main__":
    main()
