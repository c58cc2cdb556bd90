#!/usr/bin/env python3
"""paired_kl.py: item-paired comparison of two attention modes' token-level KL against the
run's reference, from hifa4-eval samples files (analysis aid for the ablation of docs/results/qmean.md; not used
by the tool or its tests).

  scripts/paired_kl.py RUN_A:MODE_A RUN_B:MODE_B TASK [TASK...]

For each task: items, mean KL of A and B (each item's mean over its scored tokens, then the
mean over items; report.md weights by tokens instead), the ratio B/A with a 95% bootstrap
interval over items (2000 resamples, seed 1), and the items where B's KL is lower (with a
two-sided sign-test p). Then the decision margins (gold option's log-likelihood minus the best
other option's) against the reference mode of RUN_A: the median |margin change| of A and of B,
and the items where B's margin moved less. Both runs must share their reference's bits (the
same model and task data; the Q-Mean form does not touch the reference)."""
import json, math, random, subprocess, sys


def item_kl(run, mode, task):
    out = subprocess.run(["zstdcat", f"{run}/samples-{task}-{mode}.jsonl.zst"], check=True, capture_output=True, text=True).stdout
    kl = {}
    for line in out.splitlines():
        s = json.loads(line)
        if s.get("kl"):
            kl[s["idx"]] = sum(s["kl"]) / len(s["kl"])
    return kl


def margins(run, mode, task):
    out = subprocess.run(["zstdcat", f"{run}/samples-{task}-{mode}.jsonl.zst"], check=True, capture_output=True, text=True).stdout
    m = {}
    for line in out.splitlines():
        s = json.loads(line)
        ll, g = s["logliks"], s["gold"]
        m[s["idx"]] = ll[g] - max(x for i, x in enumerate(ll) if i != g)
    return m


def reference(run):
    return json.load(open(f"{run}/summary.json"))["reference"]


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def margin_table(ra, ma, rb, mb, tasks):
    ref = reference(ra)
    print(f"\n| task | median abs margin change vs {ref}: {ma} | {mb} | items where {mb} moved less (sign p) |")
    print("|---|---:|---:|---|")
    for task in tasks:
        r, a, b = margins(ra, ref, task), margins(ra, ma, task), margins(rb, mb, task)
        idx = sorted(set(r) & set(a) & set(b))
        da, db = [abs(a[i] - r[i]) for i in idx], [abs(b[i] - r[i]) for i in idx]
        less = sum(1 for x, y in zip(da, db) if y < x)
        n = sum(1 for x, y in zip(da, db) if y != x)
        print(f"| {task} | {median(da):.3f} | {median(db):.3f} | {less}/{n} (p={sign_p(less, n):.2g}) |")


def sign_p(k, n):
    # two-sided exact binomial p for k of n at 1/2
    tail = sum(math.comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2.0 ** n
    return min(1.0, 2 * tail)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    (ra, ma), (rb, mb) = (a.rsplit(":", 1) for a in sys.argv[1:3])
    rng = random.Random(1)
    print(f"| task | items | KL {ma} | KL {mb} | ratio [95% CI] | items lower in {mb} (sign p) |")
    print("|---|---:|---:|---:|---|---|")
    for task in sys.argv[3:]:
        a, b = item_kl(ra, ma, task), item_kl(rb, mb, task)
        idx = sorted(set(a) & set(b))
        xa, xb = [a[i] for i in idx], [b[i] for i in idx]
        n = len(idx)
        ratio = sum(xb) / sum(xa)
        boots = []
        for _ in range(2000):
            s = [rng.randrange(n) for _ in range(n)]
            boots.append(sum(xb[i] for i in s) / sum(xa[i] for i in s))
        boots.sort()
        lower = sum(1 for p, q in zip(xa, xb) if q < p)
        ties = sum(1 for p, q in zip(xa, xb) if q == p)
        print(f"| {task} | {n} | {sum(xa) / n:.4f} | {sum(xb) / n:.4f} | {ratio:.3f} [{boots[49]:.3f}, {boots[1949]:.3f}] | "
              f"{lower}/{n - ties} (p={sign_p(lower, n - ties):.2g}) |")
    margin_table(ra, ma, rb, mb, sys.argv[3:])


if __name__ == "__main__":
    main()
