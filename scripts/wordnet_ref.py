#!/usr/bin/env python3
"""Independent reference for the `wordnet` task (src/eval/tasks/wordnet.c): rebuilds its items
from a WordNet 3.0 dict directory with plain Python and writes their count, the first ids with
their gold positions, and the sha256 of the listing "id<TAB>gold<TAB>c0|c1|c2|c3<TAB>context\\n"
over all items in order. tests/test_wordnet.c compares the C loader with this file.

    python3 scripts/wordnet_ref.py /usr/share/wordnet > tests/data/wordnet_ref.json
"""
import hashlib, json, re, sys

M = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return state, z ^ (z >> 31)


def main(d):
    tags, first = {}, {}
    for line in open(f"{d}/cntlist.rev", encoding="utf-8"):
        key, sense, cnt = line.split()
        lemma, rest = key.split("%", 1)
        if rest.startswith("1:") and sense == "1":
            tags[lemma] = int(cnt)
    for line in open(f"{d}/index.noun", encoding="utf-8"):
        if line.startswith("  "):
            continue
        f = line.split()
        first[f[0]] = int(f[6 + int(f[3])])
    items = []
    for line in open(f"{d}/data.noun", encoding="utf-8"):
        if line.startswith("  "):
            continue
        head, gloss = line.split(" | ", 1)
        f = head.split()
        off, word = int(f[0]), f[4]
        if not re.fullmatch("[a-z]{3,}", word) or first.get(word) != off or tags.get(word, 0) < 10:
            continue
        g = gloss.split(";")[0].strip()
        if len(g) < 10 or word in g.lower():
            continue
        items.append((splitmix64(off)[1], off, word, g))
    items.sort()
    h, out = hashlib.sha256(), []
    for _, off, word, g in items:
        st, _ = splitmix64(off)
        st, r = splitmix64(st)
        gold = r % 4
        ch = [None] * 4
        ch[gold] = word
        for k in range(4):
            while ch[k] is None:
                st, r = splitmix64(st)
                w = items[r % len(items)][2]
                if w not in ch:
                    ch[k] = w
        iid = f"noun/{off:08d}"
        ctx = f"Question: What word is defined as: {g}?\nAnswer:"
        h.update(f"{iid}\t{gold}\t{'|'.join(ch)}\t{ctx}\n".encode())
        out.append([iid, gold])
    json.dump({"items": len(items), "listing_sha256": h.hexdigest(), "first": out[:5]}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet")
