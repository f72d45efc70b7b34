// f64.cuh: the FP64 (DMMA) mainloop, C = alpha*A@B + beta*C in FP64, run by the outer loop
// (common/outer_loop.cuh) over any Schedule table under any fixup policy (common/fixup.cuh).
//
// Double<LOAD_BYTES, F64Tile<BM, BN, STAGES>> (f64_config.cuh): a BM x BN x 16 tile per MAC
// iteration, warps of WM x WN (F64Shape), mma.sync m8n8k4 f64 on sm_80, m16n8k8, m16n8k16 or
// m16n8k4 (as the tile's registers allow) on sm_90, a STAGES-deep cp.async pipeline
// (sm80/pipeline.cuh) of STAGE_ITERS MAC iterations a stage, fragments read from shared memory with
// 8-byte loads (ldmatrix is 16-bit only) from rows padded to 4 (mod 16) doubles. The tiles:
//   64x64x16 (the paper's): 4 warps as 2 x 2 of 32x32 (4x4 m8n8k4 / 2x4 m16n8k8 a warp per k-step),
//     4 stages: 4 x (64x20 + 16x68) x 8 B = 75,776 B of shared memory, 2 CTAs per SM;
//   128x64x16: 8 warps as 4 x 2 of 32x32, m16n8k16 on sm_90, 3 stages of two MAC iterations:
//     3 x (128x36 + 32x68) x 8 B = 162,816 B, one CTA per SM;
//   128x128x16: 8 warps as 4 x 2 of 32x64, m16n8k4 on sm_90, 2 stages of two MAC iterations:
//     2 x (128x36 + 32x132) x 8 B = 141,312 B (the epilogue stages the 139,264-byte C tile in it),
//     one CTA per SM.
// The whole block is one thread group.
// Arch: sm_80 and later (DMMA; runs on sm_90a).
// Operands: A m x k row-major (lda), B k x n row-major (ldb), 16-byte aligned rows with the
// element past an odd k (A) or odd n (B) zero; LOAD_BYTES 8 copies one double at a time and reads
// row-major operands of any k and n in place (the host packs only column-major or misaligned
// ones). Out-of-range rows and k are zero-filled by cp.async; C stores are predicated with any
// strides.
#pragma once

#include "../common/epilogue.cuh"
#include "../common/ptx.cuh"
#include "../common/schedule_table.cuh"
#include "f64_config.cuh"
#include "pipeline.cuh"

namespace streamk {
namespace sm80 {

template <int LOAD_BYTES_, class T>
struct Double {
  using Config = T;
  using Acc = double;
  static constexpr int LOAD_BYTES = LOAD_BYTES_;  // 8: one double per copy, rows of any length
  static constexpr int BM = T::BM, BN = T::BN, THREADS = T::THREADS, ACC = T::ACC;
  using Elem = double;
  static constexpr int STAGES = T::STAGES, A_STAGE = T::A_STAGE, B_STAGE = T::B_STAGE;
  static constexpr int SMEM_BYTES = T::SMEM_BYTES;
  static constexpr int SMEM_ALIGN = 16;  // 16-byte cp.async destinations
  static constexpr int KSTEPS = T::STAGE_K / T::MMA_K;  // mma k-steps per stage
  static constexpr int BK = T::BK, A_LD = T::A_LD, B_LD = T::B_LD;
  static constexpr bool B_SWIZZLE = false;  // padded rows (pipeline.cuh)
  static constexpr int STAGE_ITERS = T::STAGE_ITERS, STAGE_K = T::STAGE_K;
  static constexpr int WARPS_N = T::WARPS_N, WARP_M = T::WARP_M, WARP_N = T::WARP_N, MMA_M = T::MMA_M,
                       MMA_N = T::MMA_N, MMA_K = T::MMA_K, FRAG_M = T::FRAG_M, FRAG_N = T::FRAG_N,
                       MMA_ACC = T::MMA_ACC, MMA_A = T::MMA_A, MMA_B = T::MMA_B, ELEM_BYTES = T::ELEM_BYTES;
  static constexpr bool WIDE = T::WIDE;

  // fragment element i of thread tid -> (row, col) inside the tile. m8n8k4: 2 accumulators per
  // mma, row g, columns 2t, 2t+1; m16n8k8 and m16n8k16: 4, rows g and g + 8 (g = lane / 4, t = lane % 4)
  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    const int warp = tid / 32, lane = tid % 32;
    const int mi = i / (FRAG_N * MMA_ACC), ni = (i / MMA_ACC) % FRAG_N, e = i % MMA_ACC;
    r = (warp / WARPS_N) * WARP_M + mi * MMA_M + lane / 4 + (e / 2) * 8;
    c = (warp % WARPS_N) * WARP_N + ni * MMA_N + (lane % 4) * 2 + e % 2;
  }

  struct Frag {
    double a[T::FRAG_M][T::MMA_A];
    double b[T::FRAG_N][T::MMA_B];
  };

  struct Lanes {
    unsigned a, b;
  };

  // this thread's A element (row g, k t) and B element (k t, column g) of the warp's first mma
  static __device__ __forceinline__ Lanes lanes(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    const int wm = (warp / WARPS_N) * WARP_M, wn = (warp % WARPS_N) * WARP_N;
    const int g = lane / 4, t = lane % 4;
    return {static_cast<unsigned>(((wm + g) * A_LD + t) * ELEM_BYTES),
            static_cast<unsigned>((t * B_LD + wn + g) * ELEM_BYTES)};
  }

  // m16n8k8 fragments (PTX ISA "Matrix fragments for mma.m16n8k8", .f64): a0 (g, t), a1 (g + 8, t),
  // a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g), b1 (k t + 4, n g); m16n8k16 continues both
  // along k: a_v (g + 8 (v % 2), t + 4 (v / 2)), b_v (k t + 4v, n g) (the same layouts in github
  // NVIDIA/cutlass include/cute/atom/mma_traits_sm90.hpp). m8n8k4: a (g, t), b (t, g).
  static __device__ __forceinline__ void load_frag(unsigned sa, unsigned sb, int kstep, Frag& f, const Lanes& l) {
    const int kk = kstep * MMA_K;
#pragma unroll
    for (int mi = 0; mi < FRAG_M; ++mi)
#pragma unroll
      for (int v = 0; v < MMA_A; ++v)
        f.a[mi][v] = lds_f64(sa + l.a + ((mi * MMA_M + (v % 2) * 8) * A_LD + kk + (v / 2) * 4) * ELEM_BYTES);
#pragma unroll
    for (int ni = 0; ni < FRAG_N; ++ni)
#pragma unroll
      for (int v = 0; v < MMA_B; ++v)
        f.b[ni][v] = lds_f64(sb + l.b + ((kk + v * 4) * B_LD + ni * MMA_N) * ELEM_BYTES);
  }

  static __device__ __forceinline__ void mma_frag(const Frag& f, double (&acc)[ACC]) {
#pragma unroll
    for (int mi = 0; mi < FRAG_M; ++mi) {
#pragma unroll
      for (int ni = 0; ni < FRAG_N; ++ni) {
        double* d = &acc[(mi * FRAG_N + ni) * MMA_ACC];
        if constexpr (WIDE && MMA_K == 16) {
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
              "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
              : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
              : "d"(f.a[mi][0]), "d"(f.a[mi][1]), "d"(f.a[mi][2]), "d"(f.a[mi][3]), "d"(f.a[mi][4]), "d"(f.a[mi][5]),
                "d"(f.a[mi][6]), "d"(f.a[mi][7]), "d"(f.b[ni][0]), "d"(f.b[ni][1]), "d"(f.b[ni][2]), "d"(f.b[ni][3]));
        } else if constexpr (WIDE && MMA_K == 4) {
          asm volatile(
              "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
              : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
              : "d"(f.a[mi][0]), "d"(f.a[mi][1]), "d"(f.b[ni][0]));
        } else if constexpr (WIDE) {
          asm volatile(
              "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
              "{%0,%1,%2,%3};\n"
              : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
              : "d"(f.a[mi][0]), "d"(f.a[mi][1]), "d"(f.a[mi][2]), "d"(f.a[mi][3]), "d"(f.b[ni][0]), "d"(f.b[ni][1]));
        } else {
          asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                       : "+d"(d[0]), "+d"(d[1])
                       : "d"(f.a[mi][0]), "d"(f.b[ni][0]));
        }
      }
    }
  }

  static __device__ __forceinline__ void mainloop(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                                  int k_begin, int k_end, unsigned char* smem, Acc (&acc)[ACC]) {
    static_assert(TileStage<Double>::BYTES <= SMEM_BYTES, "the epilogue stages a C tile in the pipeline's shared memory");
    pipelined_mainloop<Double>(p, mnk, m0, n0, k_begin, k_end, smem, acc);
  }
};

}  // namespace sm80
}  // namespace streamk
