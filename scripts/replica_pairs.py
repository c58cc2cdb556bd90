#!/usr/bin/env python3
"""replica_pairs.py: paired flip-probability differences between modes of different replica runs
(analysis aid for docs/results/formats.md; not used by the tool or its tests).

  scripts/replica_pairs.py TASK K B_LABEL=RUN:MODE,A_LABEL=RUN:MODE [...]

`run --replicas K` reports paired differences only between the modes of one run; this compares
modes of runs that share their reference (checked: every bf16 replica file must be identical).
Per item, a mode's flip probability is the share of its replicas 0..K whose prediction differs
from the reference's replica of the same number (the run report's "Flip probability vs the
reference"); printed: each mean, and B - A with a 95% percentile bootstrap over items and a
paired sign-flip permutation p (both 2000 resamples, seeds fixed)."""
import functools, random, sys

from formats_study import boot, mean, samples


@functools.lru_cache(maxsize=None)
def preds(run, task, mode, r):
    return {i: s["pred"] for i, s in samples(run, task, f"{mode}_r{r}" if r else mode).items()}


def flip_prob(run, task, mode, k, ref):
    reps = [preds(run, task, mode, r) for r in range(k + 1)]
    return {i: sum(p[i] != q[i] for p, q in zip(reps, ref)) / (k + 1) for i in ref[0]}


def compare(task, k, spec, refs):
    (lb, b), (la, a) = [(s.split("=", 1)[0], s.split("=", 1)[1].rsplit(":", 1)) for s in spec.split(",")]
    for run, _ in (a, b):
        if run not in refs:
            refs[run] = [preds(run, task, "bf16", r) for r in range(k + 1)]
    ref = next(iter(refs.values()))
    if any(v != ref for v in refs.values()):
        sys.exit(f"replica_pairs: the runs' bf16 replicas differ: {sorted(refs)}")
    fb, fa = flip_prob(b[0], task, b[1], k, ref), flip_prob(a[0], task, a[1], k, ref)
    d = [fb[i] - fa[i] for i in ref[0]]
    n, obs = len(d), mean(d)
    lo, hi = boot(d, mean, random.Random(21))
    rng = random.Random(22)
    perm = sum(abs(sum(x if rng.random() < 0.5 else -x for x in d) / n) >= abs(obs) - 1e-12 for _ in range(2000))
    print(f"| {lb} - {la} | {100 * mean(list(fb.values())):.1f} | {100 * mean(list(fa.values())):.1f} | "
          f"{100 * obs:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | {max(perm, 1) / 2000:.2g} |")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    task, k, refs = sys.argv[1], int(sys.argv[2]), {}
    print(f"| B - A ({task}, replicas 0..{k}) | B flip prob % | A flip prob % | B - A points [95%] | p |")
    print("|---|---:|---:|---:|---:|")
    for spec in sys.argv[3:]:
        compare(task, k, spec, refs)


main()
