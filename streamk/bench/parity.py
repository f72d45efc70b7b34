"""Issue 42's target table in one run (``streamk bench --parity``): auto against cuBLAS where models
run, each row with its goal and whether the run met it.

Rows (ratios are cuBLAS's time over ours, so above 1 is faster than cuBLAS; "cuBLAS" is the faster
of its FP32-out and FP16/BF16-out runs where both exist; ours writes FP32, and the aligned and Linear
rows come twice more with ours at its faster output too, FP32 or the inputs' dtype):
* the aligned corpus (n and k multiples of 8), FP16 and BF16: geomean >= 1.0, no shape below 0.8;
* torch's Linear, x @ W.t() on the Llama-2/3 layers, 1-8192 tokens: geomean >= 1.0, none below 0.9;
* 8192^3 and 4096^3, FP16 and BF16, each alone after a pause: >= 1.0;
* the FP64 corpus and 8192^3 FP64: >= 1.0 against cuBLAS's FP64;
* the paper's unaligned corpus: >= 0.9 against cuBLAS on zero-padded copies, >= 2.5 against cuBLAS
  on the raw shapes.
Every result is checked against a reference before it is timed into the table. The rows' CSVs and
the table (parity.md) go to the output folder.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Sequence

from ..atomic import replacing
from .harness import geomean, write_rows

# (out_features, in_features) of the Llama-2-7B and Llama-3-8B blocks' layers
LLAMA_LAYERS = ((4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096), (4096, 14336))
LINEAR_TOKENS = (1, 16, 128, 512, 2048, 8192)
SQUARES = (8192, 4096)
FP64_COUNT = 200  # the FP64 corpus row's shapes (the issue's)
LINEAR_MAX_RELERR = 1e-2  # against float64: above this a launch is broken, not slow


@dataclass(frozen=True)
class Row:
    """One target: what was measured (ratios, one per shape) against its goal."""

    target: str
    ratios: tuple[float, ...]
    geo_goal: float
    worst_goal: float | None = None

    @property
    def geo(self) -> float:
        return geomean(self.ratios)

    @property
    def worst(self) -> float:
        return min(self.ratios, default=math.nan)

    @property
    def met(self) -> bool:
        return self.geo >= self.geo_goal and (self.worst_goal is None or self.worst >= self.worst_goal)

    def cells(self) -> tuple[str, str, str, str]:
        goal = f">= {self.geo_goal:g}x" + (f", none < {self.worst_goal:g}" if self.worst_goal is not None else "")
        got = f"{self.geo:.3f}x" + (f", min {self.worst:.3f} ({len(self.ratios)} shapes)" if len(self.ratios) > 1 else "")
        return self.target, goal, got, "met" if self.met else "not met"


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table: target, goal, measured, met."""
    lines = ["| target | goal | measured | |", "| --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def best_cublas(r: dict) -> float:
    """cuBLAS's faster output dtype for a bench row (FP64 has only its raw run)."""
    return min(r["cublas_raw"], r.get("cublas_half", math.inf))


def best_ours(r: dict) -> float:
    """auto's faster output dtype for a row that timed it with a 16-bit C too (``auto_half``)."""
    return min(r["auto"], r.get("auto_half", math.inf))


def corpus_row(rows: list[dict], label: str, worst_goal: float | None,
               ours: Callable[[dict], float] = lambda r: r["auto"]) -> Row:
    """A part's row (bench.harness or time_linear rows): auto (``ours``: its FP32 C, or best_ours)
    against cuBLAS at its best."""
    return Row(label, tuple(best_cublas(r) / ours(r) for r in rows), 1.0, worst_goal)


def unaligned_rows(rows: list[dict]) -> list[Row]:
    """The paper corpus: against cuBLAS on zero-padded copies and on the raw shapes."""
    n = len(rows)
    return [Row(f"unaligned corpus vs cuBLAS on padded copies, {n} shapes",
                tuple(r["cublas_padded"] / r["auto"] for r in rows), 0.9),
            Row(f"unaligned corpus vs cuBLAS on the raw shapes, {n} shapes",
                tuple(r["cublas_raw"] / r["auto"] for r in rows), 2.5)]


def time_linear(m: int, n: int, k: int, stream) -> dict:
    """x @ W.t() (x m x k, W n x k, FP16 in): auto against cuBLAS's FP32-out and FP16-out runs,
    CUDA-graph replays interleaved (bench.harness), after a float64 check."""
    import torch

    from ..errors import StreamkError
    from ..gpu import prepare
    from .harness import cublas, time_interleaved

    gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
    x = torch.randn(m, k, generator=gen, device="cuda").half()
    W = torch.randn(n, k, generator=gen, device="cuda").half()
    ref = x.double() @ W.double().t()
    stream.wait_stream(torch.cuda.current_stream())  # x, W and the outputs are made on the current stream
    launches, errs = {}, {}
    for name, out in (("auto", torch.empty(m, n, device="cuda")), ("auto_half", torch.empty(m, n, device="cuda").half())):
        p = launches[name] = prepare(x, W.t(), out)
        p.run(stream.cuda_stream)
        stream.synchronize()
        errs[name] = float((out.double() - ref).norm() / ref.norm())
        if not errs[name] <= LINEAR_MAX_RELERR:
            raise StreamkError(f"x @ W.t() {m}x{n}x{k} ({out.dtype} C): relative error {errs[name]:.1e}; run the GPU tests")
    t = time_interleaved({"cublas_raw": cublas(x, W.t(), torch.float32), "cublas_half": lambda: torch.mm(x, W.t()),
                          **{name: (lambda p=p: p.launch.enqueue(stream.cuda_stream)) for name, p in launches.items()}},
                         stream)
    p = launches["auto"]
    return dict(m=m, n=n, k=k, relerr=errs["auto"], auto_half_relerr=errs["auto_half"], tile=str(p.schedule.tile),
                transposed=p.transposed, **{name: med for name, (med, _, _) in t.items()})


def run(count: int, seed: int, out: str, log: Callable[[str], None] = print) -> list[Row]:
    """Measure every target on the current GPU (bench.harness's timing), write the parts' CSVs and
    parity.md under ``out``, and return the rows."""
    import torch

    from ..gpu.runtime.device_runtime import clear_cache
    from .harness import bench_shape, corpus

    stream = torch.cuda.Stream()
    os.makedirs(out, exist_ok=True)
    rows: list[Row] = []

    def part(name: str, shapes, dtype: str, alone: bool = False, half_out: bool = False) -> list[dict]:
        got: list[dict] = []
        for shape in shapes:
            bench_shape(shape, dtype, stream, got, ["auto"], alone, half_out=half_out)
            torch.cuda.synchronize()
            clear_cache()
        write_rows(os.path.join(out, f"parity_{name}.csv"), got)
        log(f"{name}: {len(got)} shapes timed")
        return got

    aligned = corpus(count, seed, "aligned")
    faster = []  # the same parts with ours at its faster output (FP32 or the inputs' dtype)
    for dtype, label in (("float16", "FP16"), ("bfloat16", "BF16")):
        got = part(f"aligned_{dtype}", aligned, dtype, half_out=True)
        rows.append(corpus_row(got, f"aligned corpus {label}, {len(got)} shapes", 0.8))
        faster.append(corpus_row(got, f"aligned corpus {label}, each side's faster C, {len(got)} shapes", 0.8,
                                 best_ours))
    linear = []
    for m in LINEAR_TOKENS:
        for n, k in LLAMA_LAYERS:
            linear.append(time_linear(m, n, k, stream))
            clear_cache()
    write_rows(os.path.join(out, "parity_linear.csv"), linear)
    layers = f"x @ W.t(), {len(LLAMA_LAYERS)} Llama layers x {LINEAR_TOKENS[0]}-{LINEAR_TOKENS[-1]} tokens"
    rows.append(corpus_row(linear, layers, 0.9))
    rows += faster + [corpus_row(linear, f"{layers}, each side's faster C", 0.9, best_ours)]
    log(f"linear: {len(linear)} shapes timed")
    for dtype, label in (("float16", "FP16"), ("bfloat16", "BF16")):
        got = part(f"squares_{dtype}", [(s, s, s) for s in SQUARES], dtype, alone=True)
        rows += [Row(f"{r['m']}^3 {label}, alone after a pause", (best_cublas(r) / r["auto"],), 1.0) for r in got]
    got = part("float64", corpus(min(count, FP64_COUNT), seed, "paper"), "float64")
    rows.append(corpus_row(got, f"FP64 corpus, {len(got)} shapes", None))
    got = part("float64_8192", [(8192, 8192, 8192)], "float64", alone=True)
    rows += [Row("8192^3 FP64, alone after a pause", (got[0]["cublas_raw"] / got[0]["auto"],), 1.0)]
    got = part("unaligned_float16", corpus(count, seed, "paper"), "float16")
    rows += unaligned_rows(got)
    text = table(rows)
    with replacing(os.path.join(out, "parity.md")) as tmp, open(tmp, "w") as f:
        f.write(text + "\n")
    return rows
