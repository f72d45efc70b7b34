"""On a GPU: the pack pass copies operands of every row alignment (2-, 4-, 8-byte rows at every
source offset), of rows shorter than a 16-byte chunk, column-major ones and ones of no unit stride
(through its shared-memory tiles), into zero-padded rows, next to NaNs that must never reach C;
FP16, BF16 (through the sm_90a TMA tiles where the GPU has them, else the sm80 tile told to pack)
and FP64."""

from __future__ import annotations

import math

import pytest

from gpu_support import GPU, error_ratio, nan_padded_view
from streamk.gpu.request import Tuning

pytestmark = GPU

PACK_ALL = Tuning(narrow="never")  # pack every operand that is not 16-byte aligned
CASES = [(5, 3, 1), (37, 9, 7), (130, 70, 65), (64, 200, 131), (300, 129, 1001)]


def _tile(dtype: str) -> str | None:
    from streamk.gpu.runtime.device import current

    if dtype == "float64":
        return None
    return "128x128x64" if current().arch == "sm_90a" else "128x128x32"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_pack_copies_rows_of_every_alignment_and_column_major_sources(dtype):
    import torch

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(31)
    failures, ran = [], 0
    for s, (m, n, k) in enumerate(CASES):
        for j in range(8):  # row strides of every residue mod 8, bases at every element offset
            lda, ldb = k + (j + s) % 8, n + (3 * j + 1) % 8
            A = nan_padded_view(m, k, lda, (j * 5 + 1 + s) % 8, dtype, gen)
            B = nan_padded_view(k, n, ldb, (j * 3 + 6) % 8, dtype, gen)
            if j == 3:  # a column-major A: a view of a NaN-padded k x m matrix, transposed
                A = nan_padded_view(k, m, m + 2, 3, dtype, gen).t()
            if j == 7:  # the same with 16-byte aligned columns (the pack's vector loads)
                A = nan_padded_view(k, m, -(-m // 8) * 8 + 8, 0, dtype, gen).t()
            if j == 5:  # a B of no unit stride: every other row and third column of a NaN-padded matrix
                B = nan_padded_view(2 * k, 3 * n, 3 * n + 1, 3, dtype, gen)[::2, ::3]
            C = torch.full((m, n), math.nan, device="cuda", dtype=torch.float64 if dtype == "float64" else None)
            p = prepare(A, B, C, schedule="data-parallel" if j % 2 else "stream-k", tile=_tile(dtype), _tuning=PACK_ALL)
            p.run()
            torch.cuda.synchronize()
            ran += 1
            packed = any("pack" in name for name in p.launch.names)
            ratio = error_ratio(C, A, B)
            if ratio > 1 or not packed:
                failures.append((m, n, k, lda, ldb, j, ratio, p.launch.names))
    assert ran == 8 * len(CASES)
    assert not failures, failures[:5]
