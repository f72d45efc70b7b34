// half_config.cuh: constants of the Ampere-style FP16/BF16 -> FP32 mainloop (half.cuh) for one
// CTA tile. The catalogue (streamk/gpu/catalogue/variants.py) instantiates Tile<BM, BN, STAGES> for
// each tile it ships: 128x128 (the paper's), 64x64 and the rectangles and 32-row tiles for
// problems of few tiles, where one SM writing a 64 KB tile of C (~2.5 us on an H100) and idle SMs
// cost more than a small tile's lower tensor-core efficiency (benchmarks/LOG.md v13, v14), and
// 128x256 for large GEMMs (v15).
#pragma once

namespace streamk {
namespace sm80 {

// MAC iterations per pipeline stage: 2 copies and waits for a k-64 stage at once (one barrier per
// 64 of k, whole 128-byte lines of A per row: half the L2 requests for A), +6% on 8192^3 (LOG.md
// v8); the Schedule still counts 32-wide iterations, and a unit's odd last iteration shares its
// stage with zeros.
constexpr int STAGE_ITERS = 2;
// cp.async pipeline depth as many as fit 2 CTAs of the 128x128 tile per SM (3 x 35,840 B); the
// 256-wide tile keeps 3 too: 4 was 3.6% slower on the 50 corpus shapes that take it (LOG.md v15b).
constexpr int STAGES = 3;
// Warp grid 2 x 2 = 4 warps of 64x64 on the 128x128 tile (CUTLASS's sm80 128x128x32 shape: fewer
// ldmatrix bytes per mma than 8 warps of 64x32); 2 x 4 on the 256-wide tile (8 warps of 64x64).
constexpr int WARPS_M = 2;
constexpr int WIDE_WARPS_N = 4;
constexpr int WARPS_N = 2;

template <int BM_, int BN_, int STAGES_ = STAGES>
struct Tile {
  static constexpr int BM = BM_;             // CTA tile rows
  static constexpr int BN = BN_;             // CTA tile columns
  static constexpr int BK = 32;              // k per MAC iteration (elements)
  static constexpr int STAGE_ITERS = sm80::STAGE_ITERS;
  static constexpr int STAGES = STAGES_;
  static constexpr int WARPS_M = sm80::WARPS_M;
  static constexpr int WARPS_N = BN == 256 ? WIDE_WARPS_N : sm80::WARPS_N;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WARP_M = BM / WARPS_M;  // 64 rows per warp (32 in the 64x64 tile)
  static constexpr int WARP_N = BN / WARPS_N;  // 64 (or 32) columns per warp
  static constexpr int MMA_M = 16;             // mma.sync m16n8k16
  static constexpr int MMA_N = 8;
  static constexpr int MMA_K = 16;
  static constexpr int FRAG_M = WARP_M / MMA_M;   // mma rows per warp
  static constexpr int FRAG_N = WARP_N / MMA_N;   // mma columns per warp
  static constexpr int ACC = FRAG_M * FRAG_N * 4; // fp32 accumulators per thread
  static constexpr int ELEM_BYTES = 2;
  static constexpr int CHUNK = 16 / ELEM_BYTES;   // elements per 16-byte cp.async
  static constexpr int PAD = CHUNK;               // one 16-byte chunk of padding per smem row: ldmatrix conflict-free
  static constexpr int STAGE_K = BK * STAGE_ITERS;  // k per pipeline stage (elements)
  static constexpr int A_LD = STAGE_K + PAD;      // smem row of A (k contiguous), elements
  static constexpr int B_LD = BN + PAD;           // smem row of B (n contiguous, padded), elements
  static constexpr int A_STAGE = BM * A_LD;       // elements per stage

  static_assert(THREADS == 128 || THREADS == 256, "4 or 8 warps");
  static_assert(STAGES >= 2, "a stage in flight while one is read");
  static_assert(FRAG_N % 2 == 0, "B fragments come in pairs of n8 tiles (one ldmatrix.x4.trans)");
  static_assert(ACC * THREADS == BM * BN, "accumulators cover the tile once");
  static_assert(STAGE_ITERS == 2, "two MAC iterations per stage (k-128 stages, LOG.md v10: slower)");
  static_assert(BM * STAGE_K % (CHUNK * THREADS) == 0 && STAGE_K * BN % (CHUNK * THREADS) == 0,
                "every thread copies whole 16-byte chunks");
  static_assert(A_LD * ELEM_BYTES % 16 == 0 && B_LD * ELEM_BYTES % 16 == 0, "smem rows 16-byte aligned");
  static_assert(BK % MMA_K == 0, "whole mma k-steps per iteration");
};

static_assert(Tile<128, 128>::THREADS == 128 && Tile<128, 256>::THREADS == 256, "4 warps, 8 on the wide tile");
static_assert(Tile<128, 128>::STAGES * (Tile<128, 128>::A_STAGE + Tile<128, 128>::STAGE_K * Tile<128, 128>::B_LD) * 2 ==
                  3 * 35840,
              "per stage: (128x72 + 64x136) halves");

}  // namespace sm80
}  // namespace streamk
