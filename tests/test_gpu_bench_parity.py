"""`streamk bench --parity` on a GPU: every target of issue 42's table measured and written, on a
corpus of two shapes (the rows that are single large GEMMs run as in the full table)."""

import csv
import os

from gpu_support import GPU

pytestmark = GPU


def test_parity_measures_every_target_and_writes_the_table_and_each_parts_csv(tmp_path):
    from streamk.bench.parity import LINEAR_TOKENS, LLAMA_LAYERS, run

    rows = run(2, 4247, str(tmp_path), log=lambda line: None)
    targets = [r.target for r in rows]
    assert targets[:3] == ["aligned corpus FP16, 2 shapes", "aligned corpus BF16, 2 shapes",
                           f"x @ W.t(), {len(LLAMA_LAYERS)} Llama layers x 1-8192 tokens"]
    assert {"8192^3 FP16, alone after a pause", "4096^3 BF16, alone after a pause", "FP64 corpus, 2 shapes",
            "8192^3 FP64, alone after a pause"} <= set(targets)
    assert targets[-2:] == ["unaligned corpus vs cuBLAS on padded copies, 2 shapes",
                            "unaligned corpus vs cuBLAS on the raw shapes, 2 shapes"]
    assert targets[3:6] == ["aligned corpus FP16, each side's faster C, 2 shapes",
                            "aligned corpus BF16, each side's faster C, 2 shapes",
                            f"x @ W.t(), {len(LLAMA_LAYERS)} Llama layers x 1-8192 tokens, each side's faster C"]
    assert all(r.ratios and all(x > 0 for x in r.ratios) for r in rows)
    assert len(rows[2].ratios) == len(LINEAR_TOKENS) * len(LLAMA_LAYERS)
    with open(tmp_path / "parity.md") as f:
        assert f.read().count("\n") == len(rows) + 2
    with open(tmp_path / "parity_aligned_float16.csv") as f:
        got = list(csv.DictReader(f))
    assert len(got) == 2 and all(float(r["auto_relerr"]) < 1e-2 and float(r["auto_half_relerr"]) < 1e-2 for r in got)
    assert {f"parity_{p}.csv" for p in ("linear", "squares_bfloat16", "float64", "float64_8192",
                                         "unaligned_float16")} <= set(os.listdir(tmp_path))
