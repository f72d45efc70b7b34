// sm80_half.cuh: the FP16/BF16 -> FP32 mainloop (Sm80Half) that sm80_f16.cu and its narrow-copy
// variants (sm80_f16_w8.cu, sm80_f16_w4.cu) instantiate; see sm80_f16.cu for the tile, warps,
// stages and shared memory. LOAD_BYTES: width of the global->shared copies (16; 8 or 4 read
// operands whose rows are only 8- or 4-byte aligned in place, pipeline.cuh).
#pragma once

#include "fixup.cuh"
#include "pipeline.cuh"
#include "sm80_config.cuh"

namespace streamk {

template <bool BF16, int LOAD_BYTES_ = 16, class T = sm80::Tile128>
struct Sm80Half {
  using Config = T;
  using Acc = float;
  static constexpr int LOAD_BYTES = LOAD_BYTES_;
  using Elem = unsigned short;  // raw FP16 / BF16 bits
  static constexpr int BM = T::BM, BN = T::BN, THREADS = T::THREADS, ACC = T::ACC;
  // B's shared rows: 16-byte copies use whole 256-byte rows with each 16-byte chunk c of row r
  // stored at chunk c ^ (r % 8) (ldmatrix.trans reads 8 rows of one chunk: 8 bank groups). The
  // padded rows (272 B) made every B copy take 2.6x the ideal shared wavefronts and 1.5x the L2
  // sectors, a third of the bytes L2 sent the SMs on 4096^3 (ncu source counters, LOG.md v12).
  // Narrow copies keep the padded rows (their shift pass and row steps assume them).
#ifndef STREAMK_B_SWIZZLE
#define STREAMK_B_SWIZZLE 1
#endif
  static constexpr bool B_SWIZZLE = STREAMK_B_SWIZZLE && LOAD_BYTES_ == 16 && T::BN >= 64;  // 32-wide: padded rows
  static constexpr int B_LD = B_SWIZZLE ? T::BN : T::B_LD;
  static constexpr int STAGES = T::STAGES, A_STAGE = T::A_STAGE, B_STAGE = T::STAGE_K * B_LD;
  static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * T::ELEM_BYTES;
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

  static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if (BF16) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
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
        mma(d, f.a[mi], f.b[ni / 2][(ni % 2) * 2], f.b[ni / 2][(ni % 2) * 2 + 1]);
      }
    }
  }

  static __device__ __forceinline__ void mainloop(const GemmParams& p, int m0, int n0, int k_begin, int k_end,
                                                  unsigned char* smem, Acc (&acc)[ACC]) {
    pipelined_mainloop<Sm80Half>(p, m0, n0, k_begin, k_end, smem, acc);
  }
};

template <class T>
constexpr bool sm80_half_fits() {
  static_assert(TileStage<Sm80Half<false, 16, T>>::BYTES <= Sm80Half<false, 16, T>::SMEM_BYTES,
                "the epilogue stages a C tile in the pipeline's shared memory");
  static_assert(T::STAGES * T::A_STAGE * T::ELEM_BYTES % 128 == 0 &&
                    (T::BN * T::ELEM_BYTES == 512 || T::BN * T::ELEM_BYTES == 256 || T::BN * T::ELEM_BYTES == 128 ||
                     !Sm80Half<false, 16, T>::B_SWIZZLE),
                "swizzled B: stage bases 128-byte aligned, 32, 16 or 8 chunks a row (chunk c ^ (r % 8))");
  return true;
}
static_assert(sm80_half_fits<sm80::Tile128>() && sm80_half_fits<sm80::Tile64>() && sm80_half_fits<sm80::Tile<128, 64>>() &&
                  sm80_half_fits<sm80::Tile<64, 128>>() && sm80_half_fits<sm80::Tile<32, 64>>() &&
                  sm80_half_fits<sm80::Tile<32, 32>>() && sm80_half_fits<sm80::Tile<128, 256>>(),
              "tile configurations");

}  // namespace streamk

// The main entry points of one tile and copy width: streamk_sm80_f16<SUFFIX> and
// streamk_sm80_bf16<SUFFIX> with their <entry>_smem constants (dynamic shared memory, read by the
// host). TILE: streamk::sm80::Tile128 or Tile64; the rest: __launch_bounds__' arguments.
#define STREAMK_SM80_HALF_ENTRIES(SUFFIX, LOAD_BYTES, TILE, ...)                                    \
  extern "C" __constant__ int streamk_sm80_f16##SUFFIX##_smem = streamk::Sm80Half<false, LOAD_BYTES, TILE>::SMEM_BYTES; \
  extern "C" __constant__ int streamk_sm80_bf16##SUFFIX##_smem = streamk::Sm80Half<true, LOAD_BYTES, TILE>::SMEM_BYTES;  \
  extern "C" __global__ void __launch_bounds__(__VA_ARGS__)                                 \
      streamk_sm80_f16##SUFFIX(const streamk::GemmParams p) {                                             \
    extern __shared__ __align__(128) unsigned char smem[];                                                 \
    streamk::run_schedule<streamk::Sm80Half<false, LOAD_BYTES, TILE>>(p, smem);                           \
  }                                                                                                       \
  extern "C" __global__ void __launch_bounds__(__VA_ARGS__)                                 \
      streamk_sm80_bf16##SUFFIX(const streamk::GemmParams p) {                                            \
    extern __shared__ __align__(128) unsigned char smem[];                                                 \
    streamk::run_schedule<streamk::Sm80Half<true, LOAD_BYTES, TILE>>(p, smem);                            \
  }

// One smaller tile's kernels: 16-, 8- and 4-byte copies at MIN_BLOCKS CTAs per SM, with its
// reduce and prescale passes (rows only 2-byte aligned are packed). TILE: an alias without commas.
#define STREAMK_SM80_HALF_TILE(SUFFIX, TILE, MIN_BLOCKS)                        \
  STREAMK_SM80_HALF_ENTRIES(SUFFIX, 16, TILE, TILE::THREADS, MIN_BLOCKS)        \
  STREAMK_SM80_HALF_ENTRIES(SUFFIX##_w8, 8, TILE, TILE::THREADS, MIN_BLOCKS)    \
  STREAMK_SM80_HALF_ENTRIES(SUFFIX##_w4, 4, TILE, TILE::THREADS, MIN_BLOCKS)    \
  STREAMK_SM80_HALF_PASSES(SUFFIX, TILE)

// The separate-reduce and atomic-prescale passes of one tile: streamk_reduce_f32<SUFFIX> (no shared
// memory) and streamk_prescale_f32<SUFFIX>.
#define STREAMK_SM80_HALF_PASSES(SUFFIX, TILE)                                                            \
  extern "C" __constant__ int streamk_reduce_f32##SUFFIX##_smem = 0;                                      \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS) streamk_reduce_f32##SUFFIX(const streamk::GemmParams p) { \
    streamk::reduce_slice<streamk::Sm80Half<false, 16, TILE>>(p);                                         \
  }                                                                                                       \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS) streamk_prescale_f32##SUFFIX(const streamk::GemmParams p) { \
    streamk::prescale_items<streamk::Sm80Half<false, 16, TILE>>(p);                                       \
  }
