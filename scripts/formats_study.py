#!/usr/bin/env python3
"""formats_study.py: the format x method table of docs/results/formats.md from hifa4-eval run
directories (analysis aid; not used by the tool or its tests).

  scripts/formats_study.py LABEL=RUN_DIR:MODE [...] --tasks arc_easy,arc_challenge,hellaswag
                           [--pair B_LABEL/A_LABEL ...]

Each LABEL names one (run, mode); every run's first mode is its reference (bf16), and the runs
must share the reference's bits (checked: the reference samples must be identical). Per task and
label: accuracy (pred) with its binomial stderr, flips vs the reference with a Wilson 95%
interval, Quant Hurts / Helps with McNemar's exact p, token-level KL (each item's mean over its
scored tokens, then the mean over items) with a 95% bootstrap interval over items, and the
median |margin change| vs the reference (margin = gold log-likelihood minus the best other) with
a bootstrap interval. --pair B/A: the ratio of mean KL B/A over items (paired bootstrap), per
task and pooled over the tasks, and the items where B's KL is lower (sign test)."""
import json, math, random, subprocess, sys

BOOT = 2000


def samples(run, task, mode):
    out = subprocess.run(["zstdcat", f"{run}/samples-{task}-{mode}.jsonl.zst"], check=True, capture_output=True,
                         text=True).stdout
    return {s["idx"]: s for s in map(json.loads, out.splitlines())}


def reference(run):
    return json.load(open(f"{run}/run.json"))["modes"][0]


def wilson(k, n):
    if n == 0:
        return (0, 0)
    z, p = 1.96, k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0, c - h), min(1, c + h))


def binom_two_sided(k, n):
    if n == 0:
        return 1.0
    # exact, in log space: 0.5 ** n underflows and comb(n, i) overflows a float past n ~ 1,000
    lp = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(n + 1)]
    return min(1.0, sum(math.exp(v) for v in lp if v <= lp[k] + 1e-9))


def boot(vals, stat, rng):
    n = len(vals)
    est = sorted(stat([vals[rng.randrange(n)] for _ in range(n)]) for _ in range(BOOT))
    return est[int(0.025 * BOOT)], est[int(0.975 * BOOT) - 1]


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def mean(v):
    return sum(v) / len(v)


def item_kl(s):
    return sum(s["kl"]) / len(s["kl"]) if s.get("kl") else 0.0


def main():
    args = sys.argv[1:]
    tasks = args[args.index("--tasks") + 1].split(",")
    pairs = [args[i + 1] for i, a in enumerate(args) if a == "--pair"]
    labels = [a for i, a in enumerate(args) if "=" in a and (i == 0 or args[i - 1] not in ("--tasks", "--pair"))]
    L = {}
    for a in labels:
        name, rm = a.split("=", 1)
        run, mode = rm.rsplit(":", 1)
        L[name] = (run, mode)
    rng = random.Random(1)
    data = {}  # (label, task) -> (ref samples, mode samples)
    ref0 = {}
    for name, (run, mode) in L.items():
        for t in tasks:
            r = samples(run, t, reference(run))
            if t in ref0 and any(ref0[t][i]["logliks"] != r[i]["logliks"] for i in r):
                sys.exit(f"{run}: reference samples of {t} differ from the first run's")
            ref0.setdefault(t, r)
            data[(name, t)] = (r, samples(run, t, mode))
    print("| task | mode | acc % | flips % (n) [95%] | hurts / helps (p) | token KL [95%] | median abs dmargin [95%] |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for t in tasks:
        r = ref0[t]
        n = len(r)
        acc = sum(s["pred"] == s["gold"] for s in r.values()) / n
        print(f"| {t} | bf16 (reference) | {100 * acc:.1f} +- {100 * math.sqrt(acc * (1 - acc) / n):.1f} | | | | |")
        for name in L:
            ref, ms = data[(name, t)]
            idx = sorted(ms)
            a = sum(ms[i]["pred"] == ms[i]["gold"] for i in idx) / len(idx)
            flips = sum(ms[i]["pred"] != ref[i]["pred"] for i in idx)
            lo, hi = wilson(flips, len(idx))
            hurts = sum(ref[i]["pred"] == ref[i]["gold"] and ms[i]["pred"] != ms[i]["gold"] for i in idx)
            helps = sum(ref[i]["pred"] != ref[i]["gold"] and ms[i]["pred"] == ms[i]["gold"] for i in idx)
            kls = [item_kl(ms[i]) for i in idx]
            klo, khi = boot(kls, mean, rng)
            dm = [abs(ms[i]["margin"] - ref[i]["margin"]) for i in idx]
            mlo, mhi = boot(dm, median, rng)
            print(f"| {t} | {name} | {100 * a:.1f} | {100 * flips / len(idx):.1f}% ({flips}) [{100 * lo:.1f}, {100 * hi:.1f}] | {hurts} / {helps} "
                  f"(p={binom_two_sided(min(hurts, helps), hurts + helps):.2g}) | {mean(kls):.3f} [{klo:.3f}, {khi:.3f}] | "
                  f"{median(dm):.2f} [{mlo:.2f}, {mhi:.2f}] |")
    if pairs:
        print("\n| KL ratio (paired) | " + " | ".join(tasks) + " | pooled |")
        print("|---|" + "---|" * (len(tasks) + 1))
    for p in pairs:
        b, a = p.split("/")
        cells, pool = [], []
        for t in tasks:
            sa, sb = data[(a, t)][1], data[(b, t)][1]
            idx = sorted(set(sa) & set(sb))
            pr = [(item_kl(sa[i]), item_kl(sb[i])) for i in idx]
            pool += pr
            cells.append(ratio_cell(pr, rng))
        cells.append(ratio_cell(pool, rng))
        print(f"| {b} / {a} | " + " | ".join(cells) + " |")


def ratio_cell(pr, rng):
    stat = lambda v: sum(y for _, y in v) / max(1e-300, sum(x for x, _ in v))
    lo, hi = boot(pr, stat, rng)
    lower = sum(y < x for x, y in pr)
    ne = sum(y != x for x, y in pr)
    return f"{stat(pr):.2f} [{lo:.2f}, {hi:.2f}], {lower}/{ne} lower (p={binom_two_sided(min(lower, ne - lower), ne):.2g})"


if __name__ == "__main__":
    main()
