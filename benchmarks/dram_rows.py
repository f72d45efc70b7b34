"""How fast HBM streams a weight matrix read in row segments of a given length (the decode regime).

    PYTHONPATH=. python3 benchmarks/dram_rows.py [--rows 11008] [--cols 4096] [--blocks 264]

A decode GEMM (x @ W.t() with few rows of x) is a read of W. Our tiles read W in boxes of many rows
by one k-step (128 bytes of a row on the sm90 tiles, 64 on sm80, 256 on the dot tile). This reads
the same bytes with plain 16-byte loads in chunks of 32 KB, each chunk R rows x S bytes, S from 64 B
to a whole row, and prints the bandwidth for two chunk orders: "k first" (the CTAs at one time read
the same rows at different k, as a split or Stream-K launch does) and "rows first" (they read
different rows at the same k, as data-parallel tiles do); then with TMA box loads into a ring of
shared-memory stages, as the sm90 tiles' producers read, for several rows a CTA, splits and depths. Not a kernel of streamk: a probe of the
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

# One thread a CTA streams its rows of W through a ring of shared-memory stages with TMA box loads,
# as the sm90 tiles' producer does (each stage: rows_per_cta rows x 64 k, in boxes of box_rows rows).
TMA_SOURCE = r"""
// One thread a CTA streams its rows of W through a ring of `stages` shared-memory stages with TMA box loads.
__device__ __forceinline__ void wait_phase(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}

extern "C" __global__ void tma_rows(const void* tmap, int rows, int cols, int rows_per_cta, int box_rows,
                                    int k_splits, int stages, unsigned long long* sink) {
  extern __shared__ __align__(1024) unsigned char ring[];
  __shared__ __align__(8) unsigned long long bars[16];
  if (threadIdx.x != 0) return;
  const unsigned bar0 = (unsigned)__cvta_generic_to_shared(bars);
  const unsigned ring0 = ((unsigned)__cvta_generic_to_shared(ring) + 1023u) & ~1023u;
  for (int s = 0; s < stages; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar0 + 8 * s));
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  const int boxes = rows_per_cta / box_rows, stage_bytes = rows_per_cta * 128;
  const int row_blocks = rows / rows_per_cta, ksteps = cols / 64;
  const int ctas = row_blocks * k_splits;
  int i = 0;
  for (int c = blockIdx.x; c < ctas; c += gridDim.x) {
    const int rb = c / k_splits, ks = c % k_splits;
    const int k0 = ksteps * ks / k_splits, k1 = ksteps * (ks + 1) / k_splits;
    for (int kt = k0; kt < k1; ++kt, ++i) {
      const int s = i % stages;
      const unsigned bar = bar0 + 8 * s;
      if (i >= stages) wait_phase(bar, ((i / stages) - 1) & 1);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(stage_bytes) : "memory");
      for (int b = 0; b < boxes; ++b) {
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
            ::"r"(ring0 + s * stage_bytes + b * box_rows * 128), "l"(tmap), "r"(kt * 64), "r"(rb * rows_per_cta + b * box_rows),
              "r"(bar) : "memory");
      }
    }
  }
  for (int j = i > stages ? i - stages : 0; j < i; ++j) wait_phase(bar0 + 8 * (j % stages), (j / stages) & 1);
  if (i < 0) sink[0] = 1;
}
"""
# (rows a CTA, box rows, k splits, stages): the sm90 64x256 tile's B side under Stream-K (129 CTAs)
# and deeper, one 256-row box, 64x128's under data-parallel and split, 64-row CTAs
TMA_CONFIGS = ((256, 64, 3, 3), (256, 64, 3, 6), (256, 256, 3, 3), (128, 64, 1, 3), (128, 64, 1, 7),
               (128, 64, 3, 3), (64, 64, 2, 4), (256, 64, 1, 6))


def tma_rows(W: torch.Tensor, timed, sink: torch.Tensor) -> None:
    """Time TMA_CONFIGS' box streams of W (L2 flushed before each run)."""
    import ctypes

    from streamk.gpu.runtime.tma import MAP_BYTES, encode

    rows, cols = W.shape
    kernel = cupy.RawKernel(TMA_SOURCE, "tma_rows")
    print(f"{'rows/CTA':>8} {'box rows':>8} {'k splits':>8} {'stages':>6} {'CTAs':>5} {'us':>6} {'TB/s':>5}")
    for per_cta, box_rows, splits, stages in TMA_CONFIGS:
        host = ctypes.create_string_buffer(MAP_BYTES + 64)
        at = (ctypes.addressof(host) + 63) // 64 * 64
        encode(at, "float16", W.data_ptr(), rows, cols, cols, box_rows)
        tmap = torch.frombuffer(bytearray(ctypes.string_at(at, MAP_BYTES)), dtype=torch.uint8).cuda()
        ring = stages * per_cta * 128 + 1024
        kernel.max_dynamic_shared_size_bytes = ring
        ctas = rows // per_cta * splits
        args = (tmap.data_ptr(), cupy.int32(rows), cupy.int32(cols), cupy.int32(per_cta), cupy.int32(box_rows),
                cupy.int32(splits), cupy.int32(stages), sink.data_ptr())
        us = timed(lambda: kernel((ctas,), (32,), args, shared_mem=ring))
        used = rows // per_cta * per_cta * cols * 2
        print(f"{per_cta:>8} {box_rows:>8} {splits:>8} {stages:>6} {ctas:>5} {us:>6.1f} {used / us / 1e6:>5.2f}")


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
    tma_rows(W, timed, sink)


if __name__ == "__main__":
    main()
