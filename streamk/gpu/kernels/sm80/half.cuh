// half.cuh: the Ampere-style FP16/BF16 -> FP32 mainloop, C = alpha*A@B + beta*C with A and B
// FP16 or BF16, FP32 accumulate and FP32 C, run by the outer loop (common/outer_loop.cuh) over any
// Schedule table (common/schedule_table.cuh) under any fixup policy (common/fixup.cuh).
//
// Half<BF16, LOAD_BYTES, Tile<BM, BN, STAGES>> (half_config.cuh): a BM x BN x 32 tile per MAC
// iteration; 4 warps as 2 x 2 (8 as 2 x 4 on the 256-wide tile), 64x64 per warp on the 128-row
// tiles (32x32 on 64x64, 16x32 / 16x16 on the 32-row tiles), mma.sync.m16n8k16, ldmatrix (.trans
// for B); a STAGES-deep cp.async pipeline (sm80/pipeline.cuh) of two MAC iterations (k 64) per
// stage. Shared memory: STAGES x (BM x 72 + 64 x BN) x 2 B (A rows padded by 16 B; B rows
// XOR-swizzled in 16-byte chunks with 16-byte copies, so ldmatrix reads and cp.async writes are
// conflict-free, else padded by 16 B): 104,448 B on 128x128 (2 CTAs per SM), 153,600 B on 128x256
// (one), 52,224 B on 64x64 (three). The whole block is one thread group: every thread copies,
// computes and runs the fixup; each unit drains the pipeline before its epilogue.
// Arch: sm_80 and later (runs on sm_90a).
// Operands: A m x k row-major (lda), B k x n row-major (ldb), rows aligned to LOAD_BYTES (16; 8 or
// 4 read rows that are only 8- or 4-byte aligned in place; the host packs the others into
// zero-padded copies, common/pack.cuh); elements past k in A's rows and past n in B's rows up to
// the next copy must be zero. Out-of-range rows and k are zero-filled by cp.async (src-size 0);
// C stores are predicated per element with any strides.
#pragma once

#include "../common/epilogue.cuh"
#include "../common/ptx.cuh"
#include "../common/schedule_table.cuh"
#include "half_config.cuh"
#include "pipeline.cuh"

namespace streamk {
namespace sm80 {

template <bool BF16, int LOAD_BYTES_, class T>
struct Half {
  using Config = T;
  using Acc = float;
  static constexpr int LOAD_BYTES = LOAD_BYTES_;
  using Elem = unsigned short;  // raw FP16 / BF16 bits
  static constexpr int BM = T::BM, BN = T::BN, THREADS = T::THREADS, ACC = T::ACC;
  // B's shared rows: 16-byte copies use whole 256-byte rows with each 16-byte chunk c of row r
  // stored at chunk c ^ (r % 8) (ldmatrix.trans reads 8 rows of one chunk: 8 bank groups). The
  // padded rows (272 B) made every B copy take 2.6x the ideal shared wavefronts and 1.5x the L2
  // sectors, a third of the bytes L2 sent the SMs on 4096^3 (ncu source counters, LOG.md v12).
  // Narrow copies (their row steps assume them) and 32-wide B keep the padded rows.
  static constexpr bool B_SWIZZLE = LOAD_BYTES_ == 16 && T::BN >= 64;
  static constexpr int B_LD = B_SWIZZLE ? T::BN : T::B_LD;
  static constexpr int STAGES = T::STAGES, A_STAGE = T::A_STAGE, B_STAGE = T::STAGE_K * B_LD;
  static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * T::ELEM_BYTES;
  static constexpr int SMEM_ALIGN = 128;  // swizzled B rows: stage bases on 128-byte lines
  static constexpr int KSTEPS = T::STAGE_K / T::MMA_K;  // mma k-steps per stage
  static constexpr int BK = T::BK, A_LD = T::A_LD;
  static constexpr int STAGE_ITERS = T::STAGE_ITERS, STAGE_K = T::STAGE_K;

  // fragment element i of thread tid -> (row, col) inside the tile
  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    const int warp = tid / 32, lane = tid % 32;
    const int mi = i / (T::FRAG_N * 4), ni = (i / 4) % T::FRAG_N, e = i % 4;
    r = (warp / T::WARPS_N) * T::WARP_M + mi * T::MMA_M + lane / 4 + (e / 2) * 8;
    c = (warp % T::WARPS_N) * T::WARP_N + ni * T::MMA_N + (lane % 4) * 2 + (e % 2);
  }

  struct Frag {
    unsigned a[T::FRAG_M][4];
    unsigned b[T::FRAG_N / 2][4];
  };

  // per-thread ldmatrix byte offsets inside a stage (k-step and fragment offsets are immediates)
  struct Lanes {
    unsigned a, b;
  };

  static __device__ __forceinline__ Lanes lanes(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    const int wm = (warp / T::WARPS_N) * T::WARP_M, wn = (warp % T::WARPS_N) * T::WARP_N;
    const int b_chunk = wn / 8 + lane / 16;  // of this lane's row kk + lane % 16, whose row % 8 is lane % 8
    return {static_cast<unsigned>(((wm + lane % 16) * A_LD + (lane / 16) * 8) * T::ELEM_BYTES),
            static_cast<unsigned>(((lane % 16) * B_LD + (B_SWIZZLE ? b_chunk ^ (lane % 8) : b_chunk) * 8) * T::ELEM_BYTES)};
  }

  static __device__ __forceinline__ void load_frag(unsigned sa, unsigned sb, int kstep, Frag& f, const Lanes& l) {
    const int kk = kstep * T::MMA_K;
#pragma unroll
    for (int mi = 0; mi < T::FRAG_M; ++mi) ldmatrix_x4(f.a[mi], sa + l.a + (mi * T::MMA_M * A_LD + kk) * T::ELEM_BYTES);
#pragma unroll
    for (int nj = 0; nj < T::FRAG_N / 2; ++nj)
      // swizzled: chunk (c + 2 nj) ^ s = (c ^ s) ^ 2 nj (c's bits 1-2 are 0), so the address of
      // pair nj is pair 0's with bits 5-6 flipped (stage bases are 128-byte aligned)
      ldmatrix_x4_trans(f.b[nj], B_SWIZZLE ? (sb + l.b + kk * B_LD * T::ELEM_BYTES) ^ (nj * 32)
                                           : sb + l.b + (kk * B_LD + nj * 16) * T::ELEM_BYTES);
  }

  static __device__ __forceinline__ void mma_frag(const Frag& f, float (&acc)[ACC]) {
#pragma unroll
    for (int mi = 0; mi < T::FRAG_M; ++mi) {
#pragma unroll
      for (int ni = 0; ni < T::FRAG_N; ++ni) {
        float(&d)[4] = *reinterpret_cast<float(*)[4]>(&acc[(mi * T::FRAG_N + ni) * 4]);
        mma_m16n8k16<BF16>(d, f.a[mi], f.b[ni / 2][(ni % 2) * 2], f.b[ni / 2][(ni % 2) * 2 + 1]);
      }
    }
  }

  static __device__ __forceinline__ void mainloop(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                                  int k_begin, int k_end, unsigned char* smem, Acc (&acc)[ACC]) {
    static_assert(TileStage<Half>::BYTES <= SMEM_BYTES, "the epilogue stages a C tile in the pipeline's shared memory");
    static_assert(STAGES * A_STAGE * T::ELEM_BYTES % 128 == 0 &&
                      (BN * T::ELEM_BYTES == 512 || BN * T::ELEM_BYTES == 256 || BN * T::ELEM_BYTES == 128 || !B_SWIZZLE),
                  "swizzled B: stage bases 128-byte aligned, 32, 16 or 8 chunks a row (chunk c ^ (r % 8))");
    pipelined_mainloop<Half>(p, mnk, m0, n0, k_begin, k_end, smem, acc);
  }
};

}  // namespace sm80
}  // namespace streamk
