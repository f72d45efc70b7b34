"""How fast HBM streams a weight matrix read in row segments of a given length (the decode regime).

    PYTHONPATH=. python3 benchmarks/dram_rows.py [--rows 11008] [--cols 4096] [--blocks 264]

A decode GEMM (x @ W.t() with few rows of x) is a read of W. Our tiles read W in boxes of many rows
by one k-step (128 bytes of a row on the sm90 tiles, 64 on sm80, 256 on the dot tile). This reads
the same bytes with plain 16-byte loads in chunks of 32 KB, each chunk R rows x S bytes, S from 64 B
to a whole row, and prints the bandwidth for two chunk orders: "k first" (the CTAs at one time read
the same rows at different k, as a split or Stream-K launch does) and "rows first" (they read
different rows at the same k, as data-parallel tiles do). Not a kernel of streamk: a probe of the
memory system, to decide how a decode kernel should lay out its loads.
"""

from __future__ import annotations

import argparse

import cupy
import torch

SOURCE = r"""
extern "C" __global__ void read_rows(const uint4* __restrict__ w, long long row_bytes, int rows, int seg_bytes,
                                     int k_first, unsigned long long* sink) {
  const int chunk_rows = 32768 / seg_bytes, vec_row = seg_bytes / 16, vec_chunk = chunk_rows * vec_row;
  const long long segs = row_bytes / seg_bytes, row_blocks = rows / chunk_rows, chunks = segs * row_blocks;
  unsigned acc = 0;
  for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    const long long rb = k_first ? c / segs : c % row_blocks, s = k_first ? c % segs : c / row_blocks;
#pragma unroll 4
    for (int v = threadIdx.x; v < vec_chunk; v += blockDim.x) {
      const long long r = rb * chunk_rows + v / vec_row;
      const uint4 x = __ldcs(w + (r * row_bytes + s * seg_bytes) / 16 + v % vec_row);
      acc ^= x.x ^ x.y ^ x.z ^ x.w;
    }
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads; never true on random data in practice
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=11008)
    ap.add_argument("--cols", type=int, default=4096, help="FP16 elements a row")
    ap.add_argument("--blocks", type=int, default=264)
    ap.add_argument("--threads", type=int, default=512)
    args = ap.parse_args()
    kernel = cupy.RawKernel(SOURCE, "read_rows")
    W = torch.randn(args.rows, args.cols, device="cuda").half()
    sink = torch.zeros(1, dtype=torch.int64, device="cuda")
    # read (not written: dirty lines would be written back during the timed read) between runs
    flush = torch.ones(64 << 20, dtype=torch.float32, device="cuda")  # 256 MB, larger than the L2
    row_bytes = args.cols * 2
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed(fn, cold: bool = True) -> float:
        times = []
        for i in range(12):
            if cold:
                flush.sum()
            start.record()
            fn()
            end.record()
            end.synchronize()
            if i >= 2:
                times.append(start.elapsed_time(end) * 1e3)
        return sorted(times)[len(times) // 2]

    total = W.numel() * 2
    sum_us, warm_us = timed(lambda: W.sum(dtype=torch.float32)), timed(lambda: W.sum(dtype=torch.float32), False)
    print(f"W {args.rows}x{args.cols} FP16 ({total / 1e6:.1f} MB); torch W.sum: {sum_us:.1f} us, "
          f"{total / sum_us / 1e6:.2f} TB/s; run again at once (part of W still in L2): {warm_us:.1f} us")
    x = torch.randn(16, args.cols, device="cuda").half()
    mm_cold, mm_warm = timed(lambda: x @ W.t()), timed(lambda: x @ W.t(), False)
    print(f"cuBLAS x @ W.t() with 16 rows of x: {mm_cold:.1f} us after an L2 flush ({total / mm_cold / 1e6:.2f} TB/s), "
          f"{mm_warm:.1f} us run again at once")
    print(f"{'segment B':>9} {'rows':>5} {'k first us':>10} {'TB/s':>5} {'rows first us':>13} {'TB/s':>5} "
          f"{'k first, again':>14}")
    seg = 64
    while seg <= min(row_bytes, 32768):
        chunk_rows = 32768 // seg
        used = (args.rows // chunk_rows) * chunk_rows * (row_bytes // seg) * seg
        out = []
        for k_first, cold in ((1, True), (0, True), (1, False)):
            us = timed(lambda: kernel((args.blocks,), (args.threads,), (W.data_ptr(), cupy.int64(row_bytes),
                                                                      cupy.int32(args.rows), cupy.int32(seg),
                                                                      cupy.int32(k_first), sink.data_ptr())), cold)
            out.append((us, used / us / 1e6))
        print(f"{seg:>9} {chunk_rows:>5} {out[0][0]:>10.1f} {out[0][1]:>5.2f} {out[1][0]:>13.1f} {out[1][1]:>5.2f} "
              f"{out[2][0]:>14.1f}")
        seg *= 2


if __name__ == "__main__":
    main()
