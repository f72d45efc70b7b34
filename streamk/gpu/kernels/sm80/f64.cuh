// f64.cuh: the FP64 (DMMA) mainloop, C = alpha*A@B + beta*C in FP64, run by the outer loop
// (common/outer_loop.cuh) over any Schedule table under any fixup policy (common/fixup.cuh).
//
// Double<LOAD_BYTES, STAGES>: tile 64x64x16 (one MAC iteration), 128 threads = 4 warps as 2 x 2,
// 32x32 per warp, mma.sync m8n8k4 f64 on sm_80 (4x4 per warp per k4), m16n8k8 on sm_90 (2x4 per
// warp per k8: twice the rate, f64_config.cuh), a STAGES-deep cp.async pipeline (4: 4 x (64x20 +
// 16x68) x 8 B = 75,776 B of shared memory, 2 CTAs per SM), fragments read from shared memory
// with 8-byte loads (ldmatrix is 16-bit only). The whole block is one thread group.
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

template <int LOAD_BYTES_, int STAGES_>
struct Double {
  using Acc = double;
  static constexpr int LOAD_BYTES = LOAD_BYTES_;  // 8: one double per copy, rows of any length
  static constexpr int BM = sm80_f64::BM, BN = sm80_f64::BN, THREADS = sm80_f64::THREADS,
                       ACC = sm80_f64::ACC;
  using Elem = double;
  static constexpr int STAGES = STAGES_, A_STAGE = sm80_f64::A_STAGE, B_STAGE = sm80_f64::B_STAGE;
  static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * sm80_f64::ELEM_BYTES;
  static constexpr int SMEM_ALIGN = 16;  // 16-byte cp.async destinations
  static constexpr int KSTEPS = sm80_f64::BK / sm80_f64::MMA_K;
  static constexpr int BK = sm80_f64::BK, A_LD = sm80_f64::A_LD, B_LD = sm80_f64::B_LD;
  static constexpr bool B_SWIZZLE = false;  // padded rows (pipeline.cuh)
  static constexpr int STAGE_ITERS = 1, STAGE_K = BK;  // one MAC iteration per stage

  // fragment element i of thread tid -> (row, col) inside the tile. m8n8k4: 2 accumulators per
  // mma, row g, columns 2t, 2t+1; m16n8k8: 4, rows g and g + 8 (g = lane / 4, t = lane % 4)
  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    using namespace sm80_f64;
    const int warp = tid / 32, lane = tid % 32;
    const int mi = i / (FRAG_N * MMA_ACC), ni = (i / MMA_ACC) % FRAG_N, e = i % MMA_ACC;
    r = (warp / WARPS_N) * WARP_M + mi * MMA_M + lane / 4 + (e / 2) * 8;
    c = (warp % WARPS_N) * WARP_N + ni * MMA_N + (lane % 4) * 2 + e % 2;
  }

  struct Frag {
    double a[sm80_f64::FRAG_M][sm80_f64::MMA_A];
    double b[sm80_f64::FRAG_N][sm80_f64::MMA_B];
  };

  struct Lanes {
    unsigned a, b;
  };

  // this thread's A element (row g, k t) and B element (k t, column g) of the warp's first mma
  static __device__ __forceinline__ Lanes lanes(int tid) {
    using namespace sm80_f64;
    const int warp = tid / 32, lane = tid % 32;
    const int wm = (warp / WARPS_N) * WARP_M, wn = (warp % WARPS_N) * WARP_N;
    const int g = lane / 4, t = lane % 4;
    return {static_cast<unsigned>(((wm + g) * A_LD + t) * ELEM_BYTES),
            static_cast<unsigned>((t * B_LD + wn + g) * ELEM_BYTES)};
  }

  // m16n8k8 fragments (PTX ISA "Matrix fragments for mma.m16n8k8", .f64): a0 (g, t), a1 (g + 8, t),
  // a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g), b1 (k t + 4, n g). m8n8k4: a (g, t), b (t, g).
  static __device__ __forceinline__ void load_frag(unsigned sa, unsigned sb, int kstep, Frag& f, const Lanes& l) {
    using namespace sm80_f64;
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
    using namespace sm80_f64;
#pragma unroll
    for (int mi = 0; mi < FRAG_M; ++mi) {
#pragma unroll
      for (int ni = 0; ni < FRAG_N; ++ni) {
        double* d = &acc[(mi * FRAG_N + ni) * MMA_ACC];
        if constexpr (WIDE) {
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
    static_assert(STAGES >= 2, "a stage in flight while one is read");
    pipelined_mainloop<Double>(p, mnk, m0, n0, k_begin, k_end, smem, acc);
  }
};

}  // namespace sm80
}  // namespace streamk
