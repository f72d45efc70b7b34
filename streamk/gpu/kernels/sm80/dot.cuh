// dot.cuh: the mainloop for GEMMs of at most 8 columns (GEMV-like decode shapes), C = alpha*A@B +
// beta*C with A and B FP16 or BF16, FP32 accumulate and FP32 C, run by the outer loop
// (common/outer_loop.cuh) over any Schedule table under any fixup policy (common/fixup.cuh).
//
// Why not the other tiles: with n <= 8 a GEMM streams A once at ~2 flops per byte, so what counts
// is bytes in flight per SM. The 32-128-row tiles spend copies, shared memory and pipeline on a B
// tile 32-128 columns wide of which a few columns are real, and A's rows, unless 16-byte aligned,
// cost a pack pass (a DRAM round trip and a launch) or the shifted 2-byte copies (benchmarks/LOG.md
// v29: 0.45-0.8x cuBLAS raw there). Here A is read in place at any alignment.
//
// Dot<BF16>: a 64 x 8 tile, 128 k per MAC iteration, 4 warps of 16 rows, mma.sync m16n8k16 (one n8
// column block: the tile's 8 columns). A comes through a 3-stage cp.async pipeline as each row's
// aligned 16-byte chunks (17 a row per iteration: a row that does not start on 16 bytes needs one
// more), so rows of any alignment are copied 16 bytes at a time. A warp whose 16 rows all start on
// 16 bytes reads its fragments with ldmatrix; otherwise each fragment register is two 4-byte shared
// loads funnel-shifted by the row's offset (mma, not CUDA-core FMAs: those left a lone CTA
// instruction-bound; LOG.md v30). B's 128 x 8 slice of each iteration is staged in shared memory
// as [column][k] halves (the mma's column-major B, read with ldmatrix), zero past k, past n and
// past the unit, read two iterations ahead into registers. Elements of A at k >= the unit's end
// are zeroed in the fragments.
// Arch: sm_80 and later. Operands: A m x k with unit column stride, any row stride and any 2-byte
// aligned base; B k x n with unit column stride and any row stride (read one element at a time).
// The host packs anything else. C stores are predicated per element with any strides.
#pragma once

#include "../common/epilogue.cuh"
#include "../common/ptx.cuh"
#include "../common/schedule_table.cuh"

namespace streamk {
namespace sm80 {

template <bool BF16>
struct Dot {
  using Acc = float;
  using Elem = unsigned short;  // raw FP16 / BF16 bits
  static constexpr int LOAD_BYTES = 16;
  static constexpr int BM = 64, BN = 8, BK = 128;
  static constexpr int THREADS = 128, ACC = 4;  // 4 warps x 16 rows; one m16n8 fragment per warp
  static constexpr int STAGES = 3;               // A's cp.async pipeline depth
  static constexpr int ROW_CHUNKS = BK / 8 + 1;  // a stage's 16-byte chunks per row of A
  static constexpr int ROW_BYTES = ROW_CHUNKS * 16;  // 272: 8 rows of ldmatrix land in 8 bank groups
  static constexpr int A_STAGE_BYTES = BM * ROW_BYTES;
  static constexpr int B_LD = BK + 8;            // B's shared row (one column of B), halves: 272 bytes
  static constexpr int B_STAGE_BYTES = BN * B_LD * 2;
  static constexpr int SMEM_BYTES = STAGES * A_STAGE_BYTES + 2 * B_STAGE_BYTES;
  static constexpr int SMEM_ALIGN = 16;
  static constexpr int B_PER_THREAD = BK * BN / THREADS;
  static_assert(ACC * THREADS == BM * BN && THREADS == 32 * BM / 16, "a warp per 16 rows, one m16n8 fragment each");

  // fragment element i of thread tid -> (row, col) inside the tile (the m16n8 D layout)
  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    const int warp = tid / 32, lane = tid % 32;
    r = warp * 16 + lane / 4 + 8 * (i / 2);
    c = (lane % 4) * 2 + i % 2;
  }

  static __device__ __forceinline__ unsigned lds32(unsigned addr) {
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
  }

  // B's rows k0 .. k0 + BK - 1, columns n0 .. n0 + 7, zero at k >= k_lim or n >= n: this thread's
  // elements, read into registers (load_b) and stored as [column][k] later (store_b), so their
  // latency hides behind an iteration's math
  struct BSlice {
    unsigned short v[B_PER_THREAD];
  };
  static __device__ __forceinline__ void load_b(const OperandParams& p, int n_left, int n0, int k0, int k_lim, int tid,
                                                BSlice& s) {
    const Elem* B = static_cast<const Elem*>(p.b);
    const int c = tid % BN;
#pragma unroll
    for (int t = 0; t < B_PER_THREAD; ++t) {
      const int k = k0 + tid / BN + t * (THREADS / BN);
      s.v[t] = (c < n_left && k < k_lim) ? B[static_cast<long long>(k) * p.ldb + n0 + c] : Elem(0);
    }
  }
  static __device__ __forceinline__ void store_b(unsigned char* buf, int tid, const BSlice& s) {
    Elem* b = reinterpret_cast<Elem*>(buf) + (tid % BN) * B_LD;
#pragma unroll
    for (int t = 0; t < B_PER_THREAD; ++t) b[tid / BN + t * (THREADS / BN)] = s.v[t];
  }

  // A's rows m0 .. m0 + 63 for MAC iteration `it` into stage `stage`: each row's aligned 16-byte
  // chunks q0 .. q0 + 16 (the 17th holds a shifted row's last elements), zero-filled past m and
  // past the last chunk holding an element below k_lim. Warp w copies its own 16 rows, two per
  // instruction (lane l: chunk l % 16 of row 2i + l / 16), then lanes 0-15 the 17th chunk of row l:
  // each instruction writes two whole 256-byte row segments; addresses step by two rows (no
  // per-copy division or multiply).
  static __device__ __forceinline__ void copy_a(const OperandParams& p, const Problem& mnk, int m0, int it, int k_lim,
                                                unsigned stage, int warp, int lane) {
    const int q0 = it * BK / 8, first = warp * 16;
    const unsigned long long a = reinterpret_cast<unsigned long long>(p.a), pitch = 2ull * p.lda;
    const int half = lane / 16, chunk = lane % 16;
    unsigned long long at = a + static_cast<unsigned long long>(m0 + first + half) * pitch;
#pragma unroll
    for (int i = 0; i < 8; ++i, at += 2 * pitch) {
      const int r = first + 2 * i + half, shift = static_cast<int>((at >> 1) & 7), q = q0 + chunk;
      const bool inside = m0 + r < mnk.m && 8 * q < shift + k_lim;
      const unsigned long long src = inside ? (at & ~15ull) + 16ull * q : a;
      cp_async16(stage + r * ROW_BYTES + chunk * 16, reinterpret_cast<const void*>(src), inside ? 16 : 0);
    }
    if (lane < 16) {
      const int r = first + lane, q = q0 + 16;
      const unsigned long long row = a + static_cast<unsigned long long>(m0 + r) * pitch;
      const bool inside = m0 + r < mnk.m && 8 * q < static_cast<int>((row >> 1) & 7) + k_lim;
      const unsigned long long src = inside ? (row & ~15ull) + 16ull * q : a;
      cp_async16(stage + r * ROW_BYTES + 16 * 16, reinterpret_cast<const void*>(src), inside ? 16 : 0);
    }
  }

  static __device__ __forceinline__ void mainloop(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                                  int k_begin, int k_end, unsigned char* smem, Acc (&acc)[ACC]) {
    static_assert(TileStage<Dot>::BYTES <= SMEM_BYTES, "the epilogue stages a C tile in the mainloop's shared memory");
    const int tid = threadIdx.x % THREADS, warp = tid / 32, lane = tid % 32;
    const int k_lim = min(mnk.k, k_end * BK), n_left = mnk.n - n0;
    const unsigned a_stages = smem_u32(smem), b_bufs = a_stages + STAGES * A_STAGE_BYTES;
    // this lane's fragment rows (lane / 4 and lane / 4 + 8 of the warp's) and where their element
    // k0 + 2 (lane % 4) sits in a stage: the 4-byte word holding it, and 16 if it is the word's upper half
    const Elem* A = static_cast<const Elem*>(p.a);
    unsigned a_word[2];
    int a_bits[2], any = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp * 16 + lane / 4 + 8 * h;
      const int s = static_cast<int>(
          (reinterpret_cast<unsigned long long>(A + static_cast<long long>(min(m0 + r, mnk.m - 1)) * p.lda) >> 1) & 7);
      any |= s;
      a_word[h] = r * ROW_BYTES + (s + 2 * (lane % 4)) / 2 * 4;
      a_bits[h] = (s % 2) * 16;
    }
    const bool aligned = !__any_sync(0xffffffffu, any);  // the warp's rows: ldmatrix reads them
    // ldmatrix x4 row addresses: A's rows lane % 16 at k + 8 (lane / 16); B's column lane % 8 at k + 8 (lane / 8)
    const unsigned a_ldm = (warp * 16 + lane % 16) * ROW_BYTES + (lane / 16) * 16;
    const unsigned b_ldm = (lane % 8) * B_LD * 2 + (lane / 8) * 16;
    float acc2[ACC] = {0.f, 0.f, 0.f, 0.f};  // odd k-steps: two independent mma chains

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (k_begin + s < k_end) copy_a(p, mnk, m0, k_begin + s, k_lim, a_stages + s * A_STAGE_BYTES, warp, lane);
      cp_async_commit();
    }
    // B's slices two iterations ahead in two register sets that take turns (a loop unrolled by two,
    // so neither is ever copied): a slice read at iteration j's start is stored at iteration j + 1's
    // end, so its L2 latency hides behind two iterations' math
    BSlice b_even, b_odd;
    load_b(p, n_left, n0, k_begin * BK, k_lim, tid, b_even);
    store_b(smem + STAGES * A_STAGE_BYTES, tid, b_even);
    if (k_begin + 1 < k_end) load_b(p, n_left, n0, (k_begin + 1) * BK, k_lim, tid, b_odd);
    const auto step = [&](int it, BSlice& fill, const BSlice& ready) {
      const int local = it - k_begin;
      cp_async_wait<STAGES - 2>();
      __syncthreads();  // iteration it's A and B are in place; iteration it - 1's stages are free
      if (it + STAGES - 1 < k_end)
        copy_a(p, mnk, m0, it + STAGES - 1, k_lim, a_stages + (local + STAGES - 1) % STAGES * A_STAGE_BYTES, warp,
               lane);
      cp_async_commit();
      if (it + 2 < k_end) load_b(p, n_left, n0, (it + 2) * BK, k_lim, tid, fill);
      const unsigned stage = a_stages + local % STAGES * A_STAGE_BYTES, bbuf = b_bufs + local % 2 * B_STAGE_BYTES;
      const int k0 = it * BK;
      const bool tail = k0 + BK > k_lim;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ks += 2) {  // two k-steps of 16 per B ldmatrix
        unsigned b[4];
        ldmatrix_x4(b, bbuf + b_ldm + ks * 32);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int kk = (ks + half) * 16;
          unsigned a[4];
          if (aligned) {
            ldmatrix_x4(a, stage + a_ldm + kk * 2);
          } else {  // register j: row half j % 2, k + 8 (j / 2), each two words shifted into place
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const unsigned at = stage + a_word[j % 2] + (kk + 8 * (j / 2)) * 2;
              a[j] = __funnelshift_r(lds32(at), lds32(at + 4), a_bits[j % 2]);
            }
          }
          if (tail) {  // elements at k >= k_lim (the next row's, or past the matrix): zero, never trusted finite
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const int valid = k_lim - (k0 + kk + 8 * (j / 2) + 2 * (lane % 4));
              a[j] &= valid >= 2 ? 0xffffffffu : valid == 1 ? 0x0000ffffu : 0u;
            }
          }
          mma_m16n8k16<BF16>(half ? acc2 : acc, a, b[2 * half], b[2 * half + 1]);
        }
      }
      if (it + 1 < k_end) store_b(smem + STAGES * A_STAGE_BYTES + (local + 1) % 2 * B_STAGE_BYTES, tid, ready);
    };
    for (int it = k_begin; it < k_end; it += 2) {
      step(it, b_even, b_odd);
      if (it + 1 < k_end) step(it + 1, b_odd, b_even);
    }
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] += acc2[i];
    cp_async_wait<0>();
    __syncthreads();  // every read of the stages done: the epilogue stages C in them
  }
};

}  // namespace sm80
}  // namespace streamk
