// f64_config.cuh: constants of the FP64 DMMA mainloop (f64.cuh).
#pragma once

namespace streamk {
namespace sm80_f64 {

constexpr int BM = 64;               // CTA tile rows (the paper's FP64 64x64x16)
constexpr int BN = 64;
constexpr int BK = 16;
constexpr int STAGES = 4;            // cp.async pipeline depth of the shipped variant (the registry's)
constexpr int WARPS_M = 2;           // warp grid 2 x 2, 32x32 per warp
constexpr int WARPS_N = 2;
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int WARP_M = BM / WARPS_M;
constexpr int WARP_N = BN / WARPS_N;
// DMMA shape. sm_80 has only m8n8k4; sm_90 adds m16n8k{4,8,16} (PTX ISA 7.8), and on an H100
// m8n8k4 keeps the FP64 tensor pipe 90% busy at half the FP64 peak (ncu, LOG.md v12), so sm_90
// builds use m16n8k8.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr bool WIDE = true;
#else
constexpr bool WIDE = false;
#endif
constexpr int MMA_M = WIDE ? 16 : 8;  // mma.sync m16n8k8 / m8n8k4 f64 (DMMA)
constexpr int MMA_N = 8;
constexpr int MMA_K = WIDE ? 8 : 4;
constexpr int FRAG_M = WARP_M / MMA_M;  // 2 / 4
constexpr int FRAG_N = WARP_N / MMA_N;  // 4
constexpr int MMA_ACC = MMA_M * MMA_N / 32;  // accumulators per thread per mma: 4 / 2
constexpr int MMA_A = MMA_M * MMA_K / 32;    // A fragment doubles per thread per mma: 4 / 1
constexpr int MMA_B = MMA_N * MMA_K / 32;    // B fragment doubles: 2 / 1
constexpr int ACC = FRAG_M * FRAG_N * MMA_ACC;  // fp64 accumulators per thread (32 either way)
constexpr int ELEM_BYTES = 8;
constexpr int CHUNK = 16 / ELEM_BYTES;  // 2 doubles per cp.async
constexpr int A_PAD = 4;                // A rows 160 B: a warp's fragment loads take the minimum 2 wavefronts
constexpr int B_PAD = 4;                // B rows 544 B: likewise
constexpr int A_LD = BK + A_PAD;
constexpr int B_LD = BN + B_PAD;
constexpr int A_STAGE = BM * A_LD;
constexpr int B_STAGE = BK * B_LD;
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * ELEM_BYTES;
constexpr int A_CHUNKS = BM * BK / CHUNK / THREADS;
constexpr int B_CHUNKS = BK * BN / CHUNK / THREADS;

static_assert(THREADS == 128, "4 warps");
static_assert(ACC * THREADS == BM * BN, "accumulators cover the tile once");
static_assert(BM * BK % (CHUNK * THREADS) == 0 && BK * BN % (CHUNK * THREADS) == 0,
              "every thread copies whole 16-byte chunks");
static_assert(A_LD * ELEM_BYTES % 16 == 0 && B_LD * ELEM_BYTES % 16 == 0, "smem rows 16-byte aligned");
static_assert(BK % MMA_K == 0, "whole mma k-steps per iteration");
static_assert(SMEM_BYTES == 75776, "4 stages of (64x20 + 16x68) doubles");

}  // namespace sm80_f64
}  // namespace streamk
