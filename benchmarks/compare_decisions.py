"""Compare what streamk.gpu decides and uploads for a 2,000-shape sample at two commits (no GPU).

For each case (shape, dtype, operand layouts, C given or not, schedule, tile, fixup, tuning) and
each preset Target, ``build_plan`` runs on a stand-in device that has the Target's residencies and
records what a real one would be handed: the orientation, tile and kernels, the Schedule's CTA
ranges, the fixup plan, every launch step, the parameter block template and the uploaded table
arrays. The base commit runs in a subprocess from a ``git worktree`` of it; the working tree's run
also calls ``decide()`` alone and checks that the plan carries exactly its Decision. Prints the
identical / different counts and exits 1 on any difference.

    python benchmarks/compare_decisions.py --base abcd906 [--count 2000] [--seed 41]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("h100", "h200", "a100")
SCHEDULES = (("auto", None, None, {}),) * 10 + (
    ("data-parallel", None, None, {}), ("stream-k", None, None, {}), ("two-tile-sk-dp", None, None, {}),
    ("dp-one-tile-sk", None, None, {}), ("fixed-split", None, None, {"splits": 2}),
    ("stream-k", "turnstile", None, {}), ("stream-k", "separate-reduce", None, {}), ("stream-k", "atomic", None, {}),
    ("stream-k", "last-arrival", None, {}), ("auto", "separate-reduce", None, {}), ("auto", "atomic", None, {}),
    ("auto", None, "64x64", {}), ("auto", None, "128x256x64", {}), ("auto", None, "128x128x64", {}),
    ("data-parallel", None, 64, {}), ("auto", None, "32x32", {}), ("auto", None, "64x8", {}),
    ("auto", "turnstile", "128x256", {}), ("given:stream-k", None, None, {}),
    ("given:two-tile-sk-dp", "turnstile", None, {}))
TUNINGS = ({},) * 6 + ({"narrow": "never"}, {"narrow": "always"}, {"pdl": True}, {"pdl": False}, {"multicast": False})


def cases(count: int, seed: int) -> list[dict]:
    """The sample: corpus shapes (m, n, k log-uniform in [128, 8192]) and decode-like ones, each
    with a dtype, A's and B's layouts, C given (row- or column-major) or not, operand addresses
    (some only 2-byte aligned), a schedule (a name, or "given:NAME": a Schedule the caller built),
    tile, fixup and tuning, drawn from one seed."""
    import numpy as np

    from streamk.sim.corpus import corpus, decode_corpus

    rng = np.random.default_rng(seed)
    shapes = [tuple(int(v) for v in s) for s in corpus(count - count // 4, seed)]
    shapes += [tuple(int(v) for v in s) for s in decode_corpus(count // 4, seed)]
    out = []
    for i, (m, n, k) in enumerate(shapes):
        dtype = ("float16", "bfloat16", "float64")[int(rng.integers(3)) if i % 5 else 0]
        schedule, fixup, tile, options = SCHEDULES[int(rng.integers(len(SCHEDULES)))]
        out.append({"i": i, "m": m, "n": n, "k": k, "dtype": dtype,
                     "a_cm": bool(rng.random() < 0.3), "b_cm": bool(rng.random() < 0.4),
                     "c": ("none", "row", "col")[int(rng.choice(3, p=(0.6, 0.3, 0.1)))],
                     "host": bool(rng.random() < 0.05), "a_shift": 2 * int(rng.random() < 0.1),
                     "schedule": schedule, "fixup": fixup, "tile": tile, "options": options,
                     "tuning": TUNINGS[int(rng.integers(len(TUNINGS)))], "target": TARGETS[i % len(TARGETS)]})
    return out


class _Buffer:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class StandIn:
    """A device as build_plan sees one, without CUDA: the Target's SMs and arch, each main kernel's
    residency the Target's (a launch asking for half an SM's shared memory: one per SM), fixed
    block sizes and shared memory per entry name, uploads recorded."""

    def __init__(self, target, by_name) -> None:
        self.target, self.arch, self.sms, self.name = target, target.arch, target.sms, f"stand-in {target.name}"
        self.by_name, self.uploads = by_name, []

    def block_size(self, name: str) -> int:
        return 384 if "sm90" in name else 128

    def smem_bytes(self, name: str) -> int:
        return 1024 * (sum(name.encode()) % 60)

    def occupancy(self, name: str, threads: int, smem: int) -> int:
        if smem >= 1 << 20:
            return 1
        v = self.by_name[name]
        return self.target.kernel(v.dtype, v.tile).ctas_per_sm if v.role == "main" else 2

    def one_per_sm_smem(self, name: str, threads: int, smem: int) -> int:
        return smem + (1 << 20)

    def cluster_residency(self, name: str, threads: int, smem: int, cluster: int) -> int:
        return self.sms // cluster * cluster

    def function(self, name: str, smem: int = 0) -> str:
        return name

    def upload(self, array):
        self.uploads.append(array.copy())
        return _Buffer(1 << 32)


def _digest(x) -> str:
    import numpy as np

    x = np.ascontiguousarray(x)
    return f"{x.dtype}{list(x.shape)}:{hashlib.sha256(x.tobytes()).hexdigest()[:16]}"


def _struct(s) -> dict:
    """A ctypes Structure's fields, nested ones as dicts."""
    import ctypes

    out = {}
    for name, kind in s._fields_:
        v = getattr(s, name)
        if isinstance(v, ctypes.Structure):
            out[name] = _struct(v)
        elif isinstance(v, ctypes.Array):
            out[name] = list(v)
        else:
            out[name] = v
    return out


def operands(case: dict):
    """A, B and C of ``case`` as the library describes them (no memory behind the addresses)."""
    try:
        from streamk.gpu.decide.operands import Operand
    except ImportError:
        from streamk.gpu.operands import Operand

    m, n, k, dtype = case["m"], case["n"], case["k"], case["dtype"]
    kind = "numpy" if case["host"] else "cuda"
    base = 0 if case["host"] else 1 << 20

    def op(rows, cols, column_major, ptr, dt):
        strides = (1, rows) if column_major else (cols, 1)
        return Operand(None, kind, 0 if case["host"] else ptr, (rows, cols), strides, dt)

    out_dtype = "float64" if dtype == "float64" else "float32"
    a = op(m, k, case["a_cm"], base + case["a_shift"], dtype)
    b = op(k, n, case["b_cm"], base + (1 << 30), dtype)
    c = None if case["c"] == "none" else op(m, n, case["c"] == "col", base + (2 << 30), out_dtype)
    return a, b, c


def dump(case: dict) -> dict:
    """What build_plan decides and uploads for ``case`` (or the error it raises)."""
    try:
        from streamk.gpu.runtime import plan as planning
    except ImportError:  # before the runtime room
        from streamk.gpu import plan as planning
    from streamk.gpu.request import Tuning, request
    from streamk.target import preset

    try:
        from streamk.gpu.catalogue import BY_NAME
    except ImportError:
        from streamk.gpu.kernel_registry import BY_NAME
    target = preset(case["target"])
    dev = StandIn(target, BY_NAME)
    a, b, c = operands(case)
    try:
        schedule = case["schedule"]
        if schedule.startswith("given:"):  # a Schedule built by the caller, on the paper tile
            from streamk.sched import make_schedule
            from streamk.shapes import GemmShape

            tile = target.tiles_for(case["dtype"])[0]
            schedule = make_schedule(schedule.split(":")[1], GemmShape(case["m"], case["n"], case["k"]), tile,
                                     target.machine(case["dtype"], tile))
        req = request(schedule, case["fixup"], case["tile"], None, dict(case["options"]), Tuning(**case["tuning"]))
        p = planning.build_plan(dev, None, a, b, c, req)
    except Exception as exc:  # a refusal is part of the behaviour compared
        return {"error": f"{type(exc).__name__}: {exc}"}
    s = p.schedule
    out = {
        "shape": [p.shape.m, p.shape.n, p.shape.k],
        "transposed": p.transposed, "tile": [s.tile.bm, s.tile.bn, s.tile.bk],
        "kernels": [p.spec.main, p.spec.reduce, p.spec.prescale, p.spec.pack],
        "schedule": {"decomposition": s.decomposition, "grid": s.grid, "fixup": s.fixup, "tile_order": s.tile_order,
                     "machine": [s.machine.sms, s.machine.ctas_per_sm] if s.machine else None,
                     "ctas": [[(u.tile, u.k_begin, u.k_end) for u in cta] for cta in s.ctas]},
        "fixup": {"policy": p.plan.policy, "num_slots": p.plan.num_slots,
                  **{f: _digest(getattr(p.plan, f)) for f in ("action", "slot", "read_offsets", "read_slots",
                                                              "wait_offsets", "wait_units", "tile_offsets",
                                                              "tile_units", "unit_cta")}},
        "steps": [{"name": st.name, "function": st.function, "grid": st.grid, "grid_y": st.grid_y, "block": st.block,
                   "smem": st.smem, "pdl": st.pdl, "packs": st.packs, "tma": st.tma, "cluster": st.cluster}
                  for st in p.steps],
        "uploads": [_digest(u) for u in dev.uploads],
        "template": _struct(p.template), "pack": _struct(p.pack) if p.pack is not None else None,
        "needs": {f: getattr(p.needs, f) for f in p.needs.__dataclass_fields__},
        "extents": list(p.extents), "residency": p.residency, "coresident": p.coresident,
        "maps": json.loads(json.dumps(p.maps)), "pairs": getattr(p, "shares", getattr(p, "pairs", 0)), "names": p.names,
    }
    decided = getattr(p, "decision", None)
    if decided is not None:  # the working tree: decide() alone gives the plan's Decision
        from streamk.gpu.decide import decide

        again = decide(a, b, c, target, req)
        same = (again.transposed, again.spec, again.schedule, again.main, again.widths, again.layout) == \
            (decided.transposed, decided.spec, decided.schedule, decided.main, decided.widths, decided.layout)
        if not same:
            out["decide_differs_from_plan"] = True
    return out


def run_side(count: int, seed: int, path: str) -> None:
    with open(path, "w") as f:
        for case in cases(count, seed):
            f.write(json.dumps({"case": case, "got": dump(case)}, default=str) + "\n")


def both_sides(base: str, tree: Path, script: str, args: list[str]) -> tuple[Path, Path] | None:
    """Run ``script --side FILE args`` on the base commit's streamk (a worktree at ``tree``) and on this
    checkout's, at once, each in its own process; the two files, base's first (None where a side failed)."""
    base_worktree(base, tree)
    tmp = Path(tempfile.mkdtemp(prefix="sides_"))
    files = (tmp / "base.out", tmp / "head.out")
    procs = [subprocess.Popen([sys.executable, script, "--side", str(out), *args],
                              env={**os.environ, "PYTHONPATH": str(src)}, cwd=str(tmp))
             for out, src in zip(files, (tree, ROOT))]
    return None if any([p.wait() for p in procs]) else files


def base_worktree(base: str, tree: Path) -> Path:
    """``tree``, a git worktree of this checkout at commit ``base`` (added or checked out as needed)."""
    # a name such as HEAD or main means this checkout's commit, not the base worktree's
    base_commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", base], capture_output=True, text=True,
                                 check=True).stdout.strip()
    if not (tree / "streamk").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), base_commit], check=True)
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if head != base_commit:
        subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--detach", base_commit], check=True)
    return tree


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="abcd906", help="the commit to compare against (default abcd906)")
    ap.add_argument("--worktree", default="/tmp/base41", help="where the base commit's worktree lives")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--side", help=argparse.SUPPRESS)  # internal: dump one side to this file
    args = ap.parse_args()
    if args.side:
        run_side(args.count, args.seed, args.side)
        return 0
    sides = both_sides(args.base, Path(args.worktree), __file__, ["--count", str(args.count), "--seed", str(args.seed)])
    if sides is None:
        print("a side failed", file=sys.stderr)
        return 2
    base, head = ([json.loads(line) for line in side.read_text().splitlines()] for side in sides)
    assert [r["case"] for r in base] == [r["case"] for r in head], "the two sides drew different cases"
    same = [b["got"] == h["got"] for b, h in zip(base, head)]
    errors = sum("error" in b["got"] for b in base)
    transposed = sum(bool(b["got"].get("transposed")) for b in base)
    tiles = {tuple(b["got"]["tile"]) for b in base if "tile" in b["got"]}
    print(f"{len(same)} cases ({', '.join(TARGETS)}; {transposed} run transposed, {errors} refused, "
          f"{len(tiles)} distinct tiles): {sum(same)} identical, {len(same) - sum(same)} different")
    for b, h, ok in zip(base, head, same):
        if not ok:
            keys = sorted(k for k in set(b["got"]) | set(h["got"]) if b["got"].get(k) != h["got"].get(k))
            print(f"  differs: {b['case']} in {keys}")
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
