// f64_config.cuh: constants of the FP64 DMMA mainloop (f64.cuh) for one CTA tile. The catalogue
// (streamk/gpu/catalogue/variants.py) instantiates F64Tile<BM, BN, STAGES> for each FP64 tile it
// ships: 64x64x16 (the paper's, shipped and calibrated) and the larger 128x64x16 and 128x128x16,
// which stream fewer operand bytes from L2 per flop (8 (BM + BN) / (BM BN) bytes a multiply-add:
// 0.25 on 64x64, 0.19 on 128x64, 0.125 on 128x128; 64x64 near cuBLAS's FP64 rate would ask the
// L2 for over 5 TB/s on an H100); 128x128's 32x64 warps also read fewer shared-memory bytes per
// flop (8 (WM + WN) / (WM WN): 0.375, 0.5 on 32x32). Which of these wins is for the GPU to say
// (benchmarks/f64_probe.py).
#pragma once

namespace streamk {
namespace sm80 {

// DMMA shape. sm_80 has only m8n8k4; sm_90 adds m16n8k{4,8,16} (PTX ISA 7.8), and on an H100
// m8n8k4 keeps the FP64 tensor pipe 90% busy at half the FP64 peak (ncu, LOG.md v12), so sm_90
// builds use m16n8k8 on the paper's tile and the widest shape that fits on the others (F64Shape).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr bool F64_WIDE = true;
#else
constexpr bool F64_WIDE = false;
#endif

// Per tile: the warp grid, the k of the sm_90 DMMA and the MAC iterations per pipeline stage.
// The pipeline double-buffers a k-step's fragments (pipeline.cuh): (WM / 16) MMA_K / 2 + (WN / 8)
// MMA_K / 4 doubles a thread per buffer. The widest DMMA whose two buffers fit beside the
// accumulators under 255 registers with no spill in the mainloop (ptxas, NVRTC 13.5):
//   32x32 warps (64 accumulator registers): m16n8k16, 2 x 32 doubles of fragments;
//   32x64 warps (128): m16n8k4, 2 x 12 doubles (m16n8k8's 2 x 24 spilled 3 words a stage inside
//   the mainloop; m16n8k16's 2 x 48 would need 320 registers).
// m16n8k16 (and the 128x128 tile's 2 stages) take two MAC iterations a stage: an even number of
// k-steps per stage, half the barriers; a unit's odd last iteration shares its stage with zeros.
template <int BM, int BN>
struct F64Shape;
// the paper's FP64 tile (shipped and calibrated as it is): 4 warps as 2 x 2 of 32x32, m16n8k8,
// one MAC iteration a stage
template <>
struct F64Shape<64, 64> {
  static constexpr int WARPS_M = 2, WARPS_N = 2, WIDE_K = 8, STAGE_ITERS = 1;
};
// 8 warps as 4 x 2 of 32x32, m16n8k16, k-32 stages; one CTA per SM (255 registers on sm_90a, 56 B
// of spills outside the mainloop)
template <>
struct F64Shape<128, 64> {
  static constexpr int WARPS_M = 4, WARPS_N = 2, WIDE_K = 16, STAGE_ITERS = 2;
};
// 8 warps as 4 x 2 of 32x64 (CUTLASS's sm80 FP64 threadblock and warp shapes, github NVIDIA/cutlass
// include/cutlass/gemm/device/default_gemm_configuration.h), m16n8k4, k-32 stages; one CTA per SM.
// Two stages: the epilogue's 139,264-byte C tile needs 2 x 70,656 B; 3 stages (211,968 B) fit too
// but spilled 176 B outside the mainloop, 2 stages 32 B.
template <>
struct F64Shape<128, 128> {
  static constexpr int WARPS_M = 4, WARPS_N = 2, WIDE_K = 4, STAGE_ITERS = 2;
};

template <int BM_, int BN_, int STAGES_>
struct F64Tile {
  using Shape = F64Shape<BM_, BN_>;
  static constexpr int BM = BM_;            // CTA tile rows
  static constexpr int BN = BN_;
  static constexpr int BK = 16;             // k per MAC iteration (the Schedule's)
  static constexpr int STAGES = STAGES_;    // cp.async pipeline depth
  static constexpr int STAGE_ITERS = Shape::STAGE_ITERS;
  static constexpr int STAGE_K = BK * STAGE_ITERS;  // k per pipeline stage
  static constexpr int WARPS_M = Shape::WARPS_M;
  static constexpr int WARPS_N = Shape::WARPS_N;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WARP_M = BM / WARPS_M;
  static constexpr int WARP_N = BN / WARPS_N;
  static constexpr bool WIDE = F64_WIDE;
  static constexpr int MMA_M = WIDE ? 16 : 8;  // mma.sync m16n8k{4,8,16} / m8n8k4 f64 (DMMA)
  static constexpr int MMA_N = 8;
  static constexpr int MMA_K = WIDE ? Shape::WIDE_K : 4;
  static constexpr int FRAG_M = WARP_M / MMA_M;
  static constexpr int FRAG_N = WARP_N / MMA_N;
  static constexpr int MMA_ACC = MMA_M * MMA_N / 32;  // accumulators per thread per mma: 4 / 2
  static constexpr int MMA_A = MMA_M * MMA_K / 32;    // A fragment doubles per thread per mma
  static constexpr int MMA_B = MMA_N * MMA_K / 32;    // B fragment doubles
  static constexpr int ACC = FRAG_M * FRAG_N * MMA_ACC;  // fp64 accumulators per thread
  static constexpr int ELEM_BYTES = 8;
  static constexpr int CHUNK = 16 / ELEM_BYTES;  // 2 doubles per cp.async
  // Row strides of 4 (mod 16) doubles: the 16 lanes of a half-warp's 8-byte fragment load (4 rows
  // x 4 doubles of A, 4 k-rows x 4 columns of B) then fall in 16 distinct 8-byte bank pairs, so a
  // warp's load takes the minimum 2 wavefronts.
  static constexpr int A_PAD = 4;
  static constexpr int B_PAD = 4;
  static constexpr int A_LD = STAGE_K + A_PAD;
  static constexpr int B_LD = BN + B_PAD;
  static constexpr int A_STAGE = BM * A_LD;  // elements per stage
  static constexpr int B_STAGE = STAGE_K * B_LD;
  static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * ELEM_BYTES;

  static_assert(THREADS == 128 || THREADS == 256, "4 or 8 warps");
  static_assert(STAGES >= 2, "a stage in flight while one is read");
  static_assert(ACC * THREADS == BM * BN, "accumulators cover the tile once");
  static_assert(WARP_M % 16 == 0 && WARP_N % 8 == 0, "whole mmas per warp on either arch");
  static_assert(BM * STAGE_K % (CHUNK * THREADS) == 0 && STAGE_K * BN % (CHUNK * THREADS) == 0,
                "every thread copies whole 16-byte chunks");
  static_assert(A_LD % 16 == 4 && B_LD % 16 == 4, "fragment loads conflict-free (row strides 4 mod 16 doubles)");
  static_assert(STAGE_K % MMA_K == 0 && (STAGE_K / MMA_K) % 2 == 0, "an even number of mma k-steps a stage");
};

static_assert(F64Tile<64, 64, 4>::SMEM_BYTES == 75776, "4 stages of (64x20 + 16x68) doubles");
static_assert(F64Tile<64, 64, 4>::THREADS == 128, "the paper's FP64 tile: 4 warps");

}  // namespace sm80
}  // namespace streamk
