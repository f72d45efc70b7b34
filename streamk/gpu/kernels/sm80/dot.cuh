// dot.cuh: the mainloops for GEMMs of at most 8 columns or at most 8 rows (GEMV-like decode
// shapes), C = alpha*A@B + beta*C with A and B FP16 or BF16, FP32 accumulate and FP32 C, run by the
// outer loop (common/outer_loop.cuh) over any Schedule table under any fixup policy (common/fixup.cuh).
//
// Why not the other tiles: with n <= 8 (or m <= 8) a GEMM streams one operand once at ~2 flops per
// byte, so what counts is bytes in flight per SM. The 32-128-row tiles spend copies, shared memory
// and pipeline on a tile of the small operand 32-128 wide of which a few vectors are real, and the
// streamed operand's rows, unless 16-byte aligned, cost a pack pass (a DRAM round trip and a launch)
// or the shifted 2-byte copies (benchmarks/LOG.md v29: 0.45-0.8x cuBLAS raw there). Here the
// streamed operand S is read in place at any alignment, and the small one V an element at a time.
//
// Dot<BF16, false> (n <= 8): a 64 x 8 tile, 128 k per MAC iteration. S is A: a stage holds its 64
// rows of 128 k; V is B's 8 columns. 4 warps of 16 rows, mma.sync m16n8k16 on the 8 columns.
// Dot<BF16, true> (m <= 8): an 8 x 128 tile, 64 k per MAC iteration, the same mma on the transposed
// problem C^T = B^T A^T: S is B, a stage holds its 64 k-rows of 128 columns; V is A's 8 rows. 4
// warps of 32 columns (two m16 blocks of B^T each), the mma's 8 columns are A's rows.
// Both: S comes through a 3-stage cp.async pipeline as each row's aligned 16-byte chunks (17 a row:
// a row that does not start on 16 bytes needs one more), so rows of any alignment are copied 16
// bytes at a time, zero-filled past the matrix. Fragments: where every row a warp reads starts on
// 16 bytes, ldmatrix (.trans for B^T); otherwise A's fragment registers are two 4-byte shared loads
// funnel-shifted by the row's offset, B^T's two 2-byte loads from consecutive k-rows, each at its
// row's offset (mma, not CUDA-core FMAs: those left a lone CTA instruction-bound; LOG.md v30). V's
// slice of each iteration is staged in shared memory as [vector][k] halves (the mma's column-major
// B, read with ldmatrix), zero past k, past the matrix and past the unit, read two iterations ahead
// into registers. Elements of A at k >= the unit's end are zeroed in the fragments (its chunks
// hold the next unit's); B's k-rows past the unit are zero-filled whole.
// Arch: sm_80 and later. Operands: S with unit column stride, any row stride and any 2-byte aligned
// base (the host packs anything else); V with any strides (x^T of torch's x @ W.t() in place). C
// stores are predicated per element with any strides.
#pragma once

#include "../common/epilogue.cuh"
#include "../common/ptx.cuh"
#include "../common/schedule_table.cuh"

namespace streamk {
namespace sm80 {

template <bool BF16, bool TRANS>
struct Dot {
  using Acc = float;
  using Elem = unsigned short;  // raw FP16 / BF16 bits
  static constexpr int LOAD_BYTES = 16;
  static constexpr int BM = TRANS ? 8 : 64, BN = TRANS ? 128 : 8, BK = TRANS ? 64 : 128;
  static constexpr int THREADS = 128, ACC = TRANS ? 8 : 4;  // one m16n8 fragment per 16 rows of S (of B^T)
  static constexpr bool PAIR_COLUMNS = !TRANS;  // a thread's elements 2j, 2j+1 are column neighbours (epilogue.cuh)
  static constexpr int STAGES = 3;               // S's cp.async pipeline depth
  static constexpr int S_ROWS = 64, S_COLS = 128;  // a stage: A's m rows x k, or B's k rows x n
  static constexpr int ROW_CHUNKS = S_COLS / 8 + 1;  // a stage's 16-byte chunks per row of S
  static constexpr int ROW_BYTES = ROW_CHUNKS * 16;  // 272: 8 rows of ldmatrix land in 8 bank groups
  static constexpr int S_STAGE_BYTES = S_ROWS * ROW_BYTES;
  static constexpr int V_LD = BK + 8;            // V's shared row (one of its 8 vectors along k), halves
  static constexpr int V_STAGE_BYTES = 8 * V_LD * 2;
  static constexpr int SMEM_BYTES = STAGES * S_STAGE_BYTES + 2 * V_STAGE_BYTES;
  static constexpr int SMEM_ALIGN = 16;
  static constexpr int V_PER_THREAD = BK * 8 / THREADS;
  static_assert(ACC * THREADS == BM * BN && THREADS == 32 * S_ROWS / 16, "a warp per 16 rows of S");
  static_assert(V_LD * 2 % 16 == 0 && (TRANS || BK == THREADS), "V's rows are whole 16-byte chunks (zero_v); along k a thread reads one element of each vector");

  // fragment element i of thread tid -> (row, col) inside the tile: the m16n8 D layout (of the
  // warp's fragment i / 4), transposed when TRANS
  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    const int warp = tid / 32, lane = tid % 32, e = i % 4;
    const int row = lane / 4 + 8 * (e / 2), col = (lane % 4) * 2 + e % 2;
    if constexpr (TRANS) {
      r = col;
      c = warp * 32 + (i / 4) * 16 + row;
    } else {
      r = warp * 16 + row;
      c = col;
    }
  }

  static __device__ __forceinline__ unsigned lds32(unsigned addr) {
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
  }
  static __device__ __forceinline__ unsigned lds16(unsigned addr) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
    return v;
  }

  // V's 8 vectors at k0 .. k0 + BK - 1 (B's columns n0.., or A's rows m0..), zero at k >= k_lim or
  // past the matrix: this thread's elements, read into registers (load_v) and stored as [vector][k]
  // later (store_v), so their latency hides behind an iteration's math
  struct VSlice {
    unsigned short v[V_PER_THREAD];
  };
  // Which of V's elements thread `tid` reads t-th: consecutive threads walk k where V's k-stride is
  // 1 (`along_k`), else its 8 vectors (a row-major B: one 16-byte run of 8 columns per k).
  static __device__ __forceinline__ void v_at(int t, int tid, bool along_k, int& vec, int& kk) {
    const int e = tid + t * THREADS;
    vec = along_k ? e / BK : e % 8;
    kk = along_k ? e % BK : e / 8;
  }
  // V's element strides (elements): along k and from one vector to the next. V is B (k x n) on the
  // dot tile, A (m x k) on the transposed one; any strides (OperandParams a_cs, b_cs).
  static __device__ __forceinline__ void v_strides(const OperandParams& p, long long& sk, long long& sv) {
    sk = TRANS ? p.a_cs : p.ldb;
    sv = TRANS ? p.lda : p.b_cs;
  }
  // Only the tile's `nvec` vectors inside the matrix are read and stored; the other vectors' rows of
  // both buffers are zeroed once a unit (zero_v), so a GEMV reads and stores one vector, not eight.
  // Along k on the tile of at most 8 columns a thread's element t is vector t's (BK == THREADS), so
  // whole vectors are skipped by branches uniform over the CTA, no per-element address or test.
  static __device__ __forceinline__ void load_v(const OperandParams& p, int v0, int v_lim, int nvec, int k0, int k_lim,
                                                int tid, bool along_k, VSlice& s) {
    const Elem* V = static_cast<const Elem*>(TRANS ? p.a : p.b);
    long long sk, sv;
    v_strides(p, sk, sv);
    if (!TRANS && along_k) {
      const int k = k0 + tid;
#pragma unroll
      for (int t = 0; t < V_PER_THREAD; ++t)
        if (t < nvec) s.v[t] = k < k_lim ? V[k * sk + (v0 + t) * sv] : Elem(0);
      return;
    }
#pragma unroll
    for (int t = 0; t < V_PER_THREAD; ++t) {
      int vec, kk;
      v_at(t, tid, along_k, vec, kk);
      const int k = k0 + kk;
      s.v[t] = v0 + vec < v_lim && k < k_lim ? V[k * sk + (v0 + vec) * sv] : Elem(0);
    }
  }
  static __device__ __forceinline__ void store_v(unsigned char* buf, int nvec, int tid, bool along_k, const VSlice& s) {
    if (!TRANS && along_k) {
#pragma unroll
      for (int t = 0; t < V_PER_THREAD; ++t)
        if (t < nvec) reinterpret_cast<Elem*>(buf)[t * V_LD + tid] = s.v[t];
      return;
    }
#pragma unroll
    for (int t = 0; t < V_PER_THREAD; ++t) {
      int vec, kk;
      v_at(t, tid, along_k, vec, kk);
      if (vec < nvec) reinterpret_cast<Elem*>(buf)[vec * V_LD + kk] = s.v[t];
    }
  }
  static __device__ __forceinline__ void zero_v(unsigned char* bufs, int nvec, int tid) {
    constexpr int ROW_CHUNKS_V = V_LD * 2 / 16;  // a vector's row, 16-byte chunks
    for (int e = tid; e < 2 * 8 * ROW_CHUNKS_V; e += THREADS) {
      if (e / ROW_CHUNKS_V % 8 >= nvec) reinterpret_cast<uint4*>(bufs)[e] = make_uint4(0u, 0u, 0u, 0u);
    }
  }

  // S's rows row0 .. row0 + 63 of the matrix at `base` (row stride `ld` elements) into `stage`, each
  // from the aligned 16-byte chunk holding its element col0 on (col0 a multiple of 8): chunks
  // q0 .. q0 + 16 (the 17th holds a shifted row's last elements), zero-filled from row row_lim on
  // and past the last chunk holding an element below col_lim. Warp w copies its own 16 rows, two per
  // instruction (lane l: chunk l % 16 of row 2i + l / 16), then lanes 0-15 the 17th chunk of row l:
  // each instruction writes two whole 256-byte row segments; addresses step by two rows (no per-copy
  // division or multiply).
  static __device__ __forceinline__ void copy_s(const void* base, long long ld, int row0, int row_lim, int col0,
                                                int col_lim, unsigned stage, int warp, int lane) {
    const int q0 = col0 / 8, first = warp * 16;
    const unsigned long long a = reinterpret_cast<unsigned long long>(base), pitch = 2ull * ld;
    const int half = lane / 16, chunk = lane % 16;
    unsigned long long at = a + static_cast<unsigned long long>(row0 + first + half) * pitch;
#pragma unroll
    for (int i = 0; i < 8; ++i, at += 2 * pitch) {
      const int r = first + 2 * i + half, shift = static_cast<int>((at >> 1) & 7), q = q0 + chunk;
      const bool inside = row0 + r < row_lim && 8 * q < shift + col_lim;
      const unsigned long long src = inside ? (at & ~15ull) + 16ull * q : a;
      cp_async16(stage + r * ROW_BYTES + chunk * 16, reinterpret_cast<const void*>(src), inside ? 16 : 0);
    }
    if (lane < 16) {  // only a row that does not start on 16 bytes reads its 17th chunk (a shift of 0
                      // discards it: __funnelshift_r's upper word), so no other row copies or zeroes it
      const int r = first + lane, q = q0 + 16;
      const unsigned long long row = a + static_cast<unsigned long long>(row0 + r) * pitch;
      const int shift = static_cast<int>((row >> 1) & 7);
      if (shift != 0) {
        const bool inside = row0 + r < row_lim && 8 * q < shift + col_lim;
        const unsigned long long src = inside ? (row & ~15ull) + 16ull * q : a;
        cp_async16(stage + r * ROW_BYTES + 16 * 16, reinterpret_cast<const void*>(src), inside ? 16 : 0);
      }
    }
  }

  static __device__ __forceinline__ void mainloop(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                                  int k_begin, int k_end, unsigned char* smem, Acc (&acc)[ACC]) {
    static_assert(TileStage<Dot>::BYTES <= SMEM_BYTES, "the epilogue stages a C tile in the mainloop's shared memory");
    const int tid = threadIdx.x % THREADS, warp = tid / 32, lane = tid % 32;
    const int k_lim = min(mnk.k, k_end * BK);
    const unsigned s_stages = smem_u32(smem), v_bufs = s_stages + STAGES * S_STAGE_BYTES;
    unsigned char* const v_smem = smem + STAGES * S_STAGE_BYTES;
    // Fragment addressing, fixed for the whole unit. A (not TRANS): this lane's fragment rows
    // (lane / 4 and lane / 4 + 8 of the warp's) and where their element k0 + 2 (lane % 4) sits in a
    // stage: the 4-byte word holding it, and 16 if it is the word's upper half. B^T (TRANS): every
    // k-row's offset is (B + k ldb) mod 8 elements (n0 is a multiple of 8), the same for k and k + 8,
    // so two shifts serve a lane's rows 2 (lane % 4) + 8j and 2 (lane % 4) + 1 + 8j at every step.
    unsigned frag_lo = 0, frag_hi = 0, a_word[2] = {0u, 0u};
    int a_bits[2] = {0, 0}, any = 0;
    if constexpr (TRANS) {
      const long long b0 = static_cast<long long>(reinterpret_cast<unsigned long long>(p.b) >> 1);
      const int t2 = 2 * (lane % 4), col = warp * 32 + lane / 4;
      const int s_lo = static_cast<int>((b0 + t2 * p.ldb) & 7), s_hi = static_cast<int>((b0 + (t2 + 1) * p.ldb) & 7);
      any = static_cast<int>((b0 | p.ldb) & 7);
      frag_lo = t2 * ROW_BYTES + (s_lo + col) * 2;
      frag_hi = (t2 + 1) * ROW_BYTES + (s_hi + col) * 2;
    } else {
      const Elem* A = static_cast<const Elem*>(p.a);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp * 16 + lane / 4 + 8 * h;
        const int s = static_cast<int>(
            (reinterpret_cast<unsigned long long>(A + static_cast<long long>(min(m0 + r, mnk.m - 1)) * p.lda) >> 1) & 7);
        any |= s;
        a_word[h] = r * ROW_BYTES + (s + 2 * (lane % 4)) / 2 * 4;
        a_bits[h] = (s % 2) * 16;
      }
    }
    const bool aligned = !__any_sync(0xffffffffu, any);  // the warp's rows: ldmatrix reads them
    // ldmatrix x4 row addresses. A: its rows lane % 16 at k + 8 (lane / 16). B^T (.trans): matrix
    // j = lane / 8 is k-rows 8 (j / 2) + lane % 8 at columns 8 (j % 2) of the warp's. V: its vector
    // lane % 8 at k + 8 (lane / 8).
    const unsigned s_ldm = TRANS ? (8 * (lane / 16) + lane % 8) * ROW_BYTES + (warp * 32 + 8 * (lane / 8 % 2)) * 2
                                 : (warp * 16 + lane % 16) * ROW_BYTES + (lane / 16) * 16;
    const unsigned v_ldm = (lane % 8) * V_LD * 2 + (lane / 8) * 16;
    float acc2[ACC] = {};  // A: odd k-steps, two independent mma chains (B^T's two blocks are two already)

    const auto copy = [&](int it, unsigned stage) {
      if constexpr (TRANS) {
        copy_s(p.b, p.ldb, it * BK, k_lim, n0, mnk.n, stage, warp, lane);
      } else {
        copy_s(p.a, p.lda, m0, mnk.m, it * BK, k_lim, stage, warp, lane);
      }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (k_begin + s < k_end) copy(k_begin + s, s_stages + s * S_STAGE_BYTES);
      cp_async_commit();
    }
    // V's slices in one register set: iteration j first stores slice j + 1 (read during iteration
    // j - 1) into the V buffer no warp reads any more, then reads slice j + 2 into the set, so each
    // read's latency hides behind an iteration (two sets taking turns exposed it: LOG.md v34).
    VSlice v;
    long long v_sk, v_sv;
    v_strides(p, v_sk, v_sv);
    const bool along_k = TRANS ? v_sk == 1 : v_sv != 1;
    // V's vectors inside the matrix; the transposed tile reads all 8 (its registers are at the limit)
    const int v0 = TRANS ? m0 : n0, v_lim = TRANS ? mnk.m : mnk.n, nvec = TRANS ? 8 : min(8, v_lim - v0);
    if constexpr (!TRANS) zero_v(v_smem, nvec, tid);
    load_v(p, v0, v_lim, nvec, k_begin * BK, k_lim, tid, along_k, v);
    store_v(v_smem, nvec, tid, along_k, v);
    if (k_begin + 1 < k_end) load_v(p, v0, v_lim, nvec, (k_begin + 1) * BK, k_lim, tid, along_k, v);
    for (int it = k_begin; it < k_end; ++it) {
      const int local = it - k_begin;
      cp_async_wait<STAGES - 2>();
      __syncthreads();  // iteration it's S and V are in place; iteration it - 1's stages and V are free
      if (it + STAGES - 1 < k_end) copy(it + STAGES - 1, s_stages + (local + STAGES - 1) % STAGES * S_STAGE_BYTES);
      cp_async_commit();
      if (it + 1 < k_end) {
        store_v(v_smem + (local + 1) % 2 * V_STAGE_BYTES, nvec, tid, along_k, v);
        if (it + 2 < k_end) load_v(p, v0, v_lim, nvec, (it + 2) * BK, k_lim, tid, along_k, v);
      }
      const unsigned stage = s_stages + local % STAGES * S_STAGE_BYTES, vbuf = v_bufs + local % 2 * V_STAGE_BYTES;
      const int k0 = it * BK;
      const bool tail = k0 + BK > k_lim;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ks += 2) {  // two k-steps of 16 per V ldmatrix
        unsigned b[4];
        ldmatrix_x4(b, vbuf + v_ldm + ks * 32);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int kk = (ks + half) * 16;
          if constexpr (TRANS) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // the warp's columns 16 h .. 16 h + 15 (B^T's rows)
              unsigned a[4];
              if (aligned) {
                ldmatrix_x4_trans(a, stage + s_ldm + kk * ROW_BYTES + h * 32);
              } else {  // register j: column + 8 (j % 2), k-rows + 8 (j / 2) and the next
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                  const unsigned at = stage + (kk + 8 * (j / 2)) * ROW_BYTES + h * 32 + (j % 2) * 16;
                  a[j] = lds16(at + frag_lo) | (lds16(at + frag_hi) << 16);
                }
              }
              mma_m16n8k16<BF16>(*reinterpret_cast<float(*)[4]>(&acc[4 * h]), a, b[2 * half], b[2 * half + 1]);
            }
          } else {
            unsigned a[4];
            if (aligned) {
              ldmatrix_x4(a, stage + s_ldm + kk * 2);
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
      }
    }
    if constexpr (!TRANS) {
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] += acc2[i];
    }
    cp_async_wait<0>();
    __syncthreads();  // every read of the stages done: the epilogue stages C in them
  }
};

}  // namespace sm80
}  // namespace streamk
