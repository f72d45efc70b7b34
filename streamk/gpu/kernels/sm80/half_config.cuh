// sm80_config.cuh: constants of the Ampere-style FP16/BF16 -> FP32 mainloop (sm80_half.cuh) for
// one CTA tile. sm80::Tile<128, 128> is the paper's 128x128x32 (sm80_f16.cu and its narrow-copy
// variants); sm80::Tile<64, 64> the small tile of sm80_f16_t64.cu, for problems of few 128x128
// tiles, where one SM writing a 64 KB tile of C (~2.5 us on an H100) and the idle SMs cost more
// than the small tile's lower tensor-core efficiency (benchmarks/LOG.md v13); sm80::Tile<128, 256>
// the large tile of sm80_f16_wide.cu (v15).
#pragma once

namespace streamk {
namespace sm80 {

// MAC iterations per pipeline stage: 2 copies and waits for a k-64 stage at once (one barrier per
// 64 of k, whole 128-byte lines of A per row: half the L2 requests for A), +6% on 8192^3 (LOG.md
// v8); the Schedule still counts 32-wide iterations, and a unit's odd last iteration shares its
// stage with zeros. 1 builds the 32-wide stages of v1-v7.
#ifndef STREAMK_SM80_STAGE_ITERS
#define STREAMK_SM80_STAGE_ITERS 2
#endif
// cp.async pipeline depth (STAGES - 1 stages in flight): as many as fit 2 CTAs of the 128x128 tile
// per SM (3 x 35,840 B of 64-wide stages, 4 x 18,944 B of 32-wide ones).
#ifndef STREAMK_SM80_STAGES
#define STREAMK_SM80_STAGES (STREAMK_SM80_STAGE_ITERS == 2 ? 3 : 4)
#endif
// Warp grid 2 x WARPS_N of the 128x128 tile. Default 2 x 2 = 4 warps of 64x64 (CUTLASS's sm80
// 128x128x32 shape: fewer ldmatrix bytes per mma than 8 warps of 64x32); -DSTREAMK_SM80_WARPS_N=4
// builds the 8-warp variant (STREAMK_DEFINES, see build.py) for comparison.
#ifndef STREAMK_SM80_WARPS_N
#define STREAMK_SM80_WARPS_N 2
#endif

// Pipeline depth of the 256-wide tile (one CTA per SM: 4 x 51,200 B of stages still fit). 4: +0.5-1%
// on GEMMs of 0.2-1.1 TFLOP alone, but 3.6% slower on the 50 corpus shapes that take this tile
// (H100, two A-B pairs in one call; LOG.md v15b); 3 kept.
#ifndef STREAMK_SM80_WIDE_STAGES
#define STREAMK_SM80_WIDE_STAGES STREAMK_SM80_STAGES
#endif

constexpr int THREADS_128 = 2 * STREAMK_SM80_WARPS_N * 32;  // block of the 128x128 kernels

template <int BM_, int BN_>
struct Tile {
  static constexpr int BM = BM_;             // CTA tile rows
  static constexpr int BN = BN_;             // CTA tile columns
  static constexpr int BK = 32;              // k per MAC iteration (elements)
  static constexpr int STAGE_ITERS = STREAMK_SM80_STAGE_ITERS;
  static constexpr int STAGES = BN == 256 ? STREAMK_SM80_WIDE_STAGES : STREAMK_SM80_STAGES;
  static constexpr int WARPS_M = 2;
  // 128 wide: STREAMK_SM80_WARPS_N; 256 wide: 4 warps of 64 columns (8 warps of 64x64); else 2
  static constexpr int WARPS_N = BN == 128 ? STREAMK_SM80_WARPS_N : BN == 256 ? 4 : 2;
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
  static_assert(FRAG_N % 2 == 0, "B fragments come in pairs of n8 tiles (one ldmatrix.x4.trans)");
  static_assert(ACC * THREADS == BM * BN, "accumulators cover the tile once");
  static_assert(STAGE_ITERS == 1 || STAGE_ITERS == 2, "one or two MAC iterations per stage (k-128 stages, LOG.md v10: slower)");
  static_assert(BM * STAGE_K % (CHUNK * THREADS) == 0 && STAGE_K * BN % (CHUNK * THREADS) == 0,
                "every thread copies whole 16-byte chunks");
  static_assert(A_LD * ELEM_BYTES % 16 == 0 && B_LD * ELEM_BYTES % 16 == 0, "smem rows 16-byte aligned");
  static_assert(BK % MMA_K == 0, "whole mma k-steps per iteration");
};

using Tile128 = Tile<128, 128>;
using Tile64 = Tile<64, 64>;
static_assert(Tile128::THREADS == THREADS_128, "launch bounds of the 128x128 kernels");
static_assert(STREAMK_SM80_STAGE_ITERS != 2 || STREAMK_SM80_STAGES != 3 ||
                  Tile128::STAGES * (Tile128::A_STAGE + Tile128::STAGE_K * Tile128::B_LD) * 2 == 3 * 35840,
              "per stage: (128x72 + 64x136) halves");

}  // namespace sm80
}  // namespace streamk
