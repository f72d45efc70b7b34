// sm80_config.cuh: constants of the Ampere-style FP16/BF16 -> FP32 mainloop (sm80_f16.cu).
#pragma once

namespace streamk {
namespace sm80 {

constexpr int BM = 128;              // CTA tile rows (the paper's 128x128x32)
constexpr int BN = 128;              // CTA tile columns
constexpr int BK = 32;               // k per MAC iteration (elements)
// MAC iterations per pipeline stage: 2 copies and waits for a 128x128x64 stage at once (one
// barrier per 64 of k, whole 128-byte lines of A per row: half the L2 requests for A), +6% on
// 8192^3 (LOG.md v8); the Schedule still counts 32-wide iterations, and a unit's odd last
// iteration shares its stage with zeros. 1 builds the 32-wide stages of v1-v7.
#ifndef STREAMK_SM80_STAGE_ITERS
#define STREAMK_SM80_STAGE_ITERS 2
#endif
constexpr int STAGE_ITERS = STREAMK_SM80_STAGE_ITERS;
// cp.async pipeline depth (STAGES - 1 stages in flight): as many as fit 2 CTAs per SM (3 x 35,840 B
// of 64-wide stages, 4 x 18,944 B of 32-wide ones).
#ifndef STREAMK_SM80_STAGES
#define STREAMK_SM80_STAGES (STREAMK_SM80_STAGE_ITERS == 2 ? 3 : 4)
#endif
constexpr int STAGES = STREAMK_SM80_STAGES;
// Warp grid 2 x WARPS_N. Default 2 x 2 = 4 warps of 64x64 (CUTLASS's sm80 128x128x32 shape: fewer
// ldmatrix bytes per mma than 8 warps of 64x32); -DSTREAMK_SM80_WARPS_N=4 builds the 8-warp variant
// (STREAMK_DEFINES, see build.py) for comparison.
#ifndef STREAMK_SM80_WARPS_N
#define STREAMK_SM80_WARPS_N 2
#endif
constexpr int WARPS_M = 2;
constexpr int WARPS_N = STREAMK_SM80_WARPS_N;
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int WARP_M = BM / WARPS_M; // 64 rows per warp
constexpr int WARP_N = BN / WARPS_N; // 64 (or 32) columns per warp
constexpr int MMA_M = 16;            // mma.sync m16n8k16
constexpr int MMA_N = 8;
constexpr int MMA_K = 16;
constexpr int FRAG_M = WARP_M / MMA_M;  // 4 mma rows per warp
constexpr int FRAG_N = WARP_N / MMA_N;  // 8 (or 4) mma columns per warp
constexpr int ACC = FRAG_M * FRAG_N * 4; // fp32 accumulators per thread
constexpr int ELEM_BYTES = 2;
constexpr int CHUNK = 16 / ELEM_BYTES;  // elements per 16-byte cp.async
constexpr int PAD = CHUNK;              // one 16-byte chunk of padding per smem row: ldmatrix conflict-free
constexpr int STAGE_K = BK * STAGE_ITERS;  // k per pipeline stage (elements)
constexpr int A_LD = STAGE_K + PAD;     // smem row of A (k contiguous), elements
constexpr int B_LD = BN + PAD;          // smem row of B (n contiguous), elements
constexpr int A_STAGE = BM * A_LD;      // elements per stage
constexpr int B_STAGE = STAGE_K * B_LD;
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * ELEM_BYTES;
constexpr int A_CHUNKS = BM * STAGE_K / CHUNK / THREADS;  // cp.async per thread per stage
constexpr int B_CHUNKS = STAGE_K * BN / CHUNK / THREADS;

static_assert(THREADS == 128 || THREADS == 256, "4 or 8 warps");
static_assert(FRAG_N % 2 == 0, "B fragments come in pairs of n8 tiles (one ldmatrix.x4.trans)");
static_assert(ACC * THREADS == BM * BN, "accumulators cover the tile once");
static_assert(STAGE_ITERS == 1 || STAGE_ITERS == 2, "one or two MAC iterations per stage (k-128 stages, LOG.md v10: slower)");
static_assert(BM * STAGE_K % (CHUNK * THREADS) == 0 && STAGE_K * BN % (CHUNK * THREADS) == 0,
              "every thread copies whole 16-byte chunks");
static_assert(A_LD * ELEM_BYTES % 16 == 0 && B_LD * ELEM_BYTES % 16 == 0, "smem rows 16-byte aligned");
static_assert(BK % MMA_K == 0, "whole mma k-steps per iteration");
static_assert(STAGE_ITERS != 1 || SMEM_BYTES == STAGES * 18944, "per stage: (128x40 + 32x136) halves");
static_assert(STAGE_ITERS != 2 || SMEM_BYTES == STAGES * 35840, "per stage: (128x72 + 64x136) halves");

}  // namespace sm80
}  // namespace streamk
