// pipeline.cuh: the multi-stage cp.async software pipeline both sm80 mainloops share.
// ML provides Elem, LOAD_BYTES (copy width), Frag, STAGES, STAGE_ITERS (MAC iterations per stage),
// STAGE_K (k elements per stage), KSTEPS (mma k-steps per stage), A_STAGE, B_STAGE (elements per
// stage), load_frag (one k-step's fragments from shared memory) and mma_frag. Fragments are
// double-buffered: k-step kk+1's (or the next stage's first) are loaded before kk's mmas issue.
// Stage `it` refills the buffer stage it-1 used with stage it+STAGES-1; the wait + barrier before
// the last k-step of `it` makes stage it+1 visible and retires every read of stage it-1 (the
// CUTLASS sm80 multistage order). A unit's k range ends at min(k, k_end * BK): past it both
// operands are zero-filled, so a stage of two iterations may cover a unit's odd last iteration
// (whose zero half is skipped; the wait + barrier after the loop still retire every copy and read).
// Every thread of the block copies and computes: the barriers are the block's (__syncthreads), and
// a unit drains the pipeline before its epilogue.
#pragma once

#include "../common/ptx.cuh"
#include "../common/schedule_table.cuh"

namespace streamk {
namespace sm80 {

// Global -> shared copies of one stage's A (BM x STAGE_K) and B (STAGE_K x BN) tiles. Thread t copies
// the ML::LOAD_BYTES chunk at column (t % COLS) of rows t / COLS + pass * ROWS_PER_PASS, so one
// pointer per operand, advanced by a stage per call, addresses every pass; row/column predicates
// are fixed per unit, k predicates checked per stage (zero-fill past the unit's k limit).
// LOAD_BYTES is 16 for aligned operands; 8 or 4 reads operands whose rows are only 8- or 4-byte
// aligned in place (more copies per stage, no packing pass); the shared layout is the same.
//
// LOAD_BYTES 2 (FP16/BF16 rows only 2-byte aligned, as any odd k or n leaves them): each row
// segment is copied with 16-byte copies from the 16-byte block holding its first element, so it
// lands `s` elements late (0 <= s < 8, one more chunk past its end in the row's padding), and
// `shift` then moves every row back by its s in shared memory before any fragment is read. A
// row's s is fixed by its index in the tile ((element offset of the operand + r * ld) mod 8):
// a thread's copies are rows 16 apart, so one s each, and the shift pass takes rows 2 apart,
// four at a time, whose s differ in (s / 2) for odd ld, which keeps its 4-byte reads free of bank
// conflicts. The elements before a segment (s of them, in the same 16-byte block as its first
// one) are read but shifted out; those past k or n are zero-filled (src-size), never read.
template <class ML>
struct TileLoader {
  using Elem = typename ML::Elem;
  static constexpr bool SHIFTED = ML::LOAD_BYTES == 2;
  static constexpr int BYTES = SHIFTED ? 16 : ML::LOAD_BYTES;  // bytes per copy
  static constexpr int CHUNK = BYTES / sizeof(Elem);
  static_assert(CHUNK >= 1 && (BYTES == 16 || BYTES == 8 || BYTES == 4), "whole elements per 16/8/4-byte copy");
  static_assert(!SHIFTED || (sizeof(Elem) == 2 && ML::THREADS == 128 && ML::BM <= 128 && ML::STAGE_K <= 128 &&
                             ML::BM % 16 == 0 && ML::STAGE_K % 16 == 0 && ML::BN % 64 == 0 && ML::STAGE_K % 64 == 0),
                "shifted rows: 2-byte elements, 4 warps, a thread per A row and per B row for the extra chunk, "
                "rows in 16s, whole 8-chunk row segments");
  static constexpr int A_COLS = ML::STAGE_K / CHUNK;
  static constexpr int A_ROWS_PER_PASS = ML::THREADS / A_COLS;
  static constexpr int A_PASSES = ML::BM / A_ROWS_PER_PASS;
  static constexpr int B_COLS = ML::BN / CHUNK;
  static constexpr int B_ROWS_PER_PASS = ML::THREADS / B_COLS;
  static constexpr int B_PASSES = ML::STAGE_K / B_ROWS_PER_PASS;
  static_assert(ML::THREADS % A_COLS == 0 && ML::BM % A_ROWS_PER_PASS == 0, "A chunks tile the threads");
  static_assert(ML::THREADS % B_COLS == 0 && ML::STAGE_K % B_ROWS_PER_PASS == 0, "B chunks tile the threads");

  const Elem* a;       // this thread's A chunk of pass 0 at the next stage
  const Elem* b;       // this thread's B chunk of pass 0 at the next stage
  int a_kpos;          // k (elements) of this thread's A chunk at the next stage
  int b_kpos;          // k (row) of this thread's B chunk of pass 0 at the next stage
  int a_rows_left;     // rows of A from this thread's pass-0 row to m
  bool b_col_ok;       // this thread's B columns are inside n
  unsigned a_dst;      // byte offset of this thread's A chunk inside a stage (pass 0)
  unsigned b_dst;
  // SHIFTED only: each row's lateness s is (sh0 + r * step) mod 8 for row r of the tile; the extra
  // chunk past each row segment (A row tid, B row tid) with its limits
  int a_sh0, a_step, b_sh0, b_step;
  bool a_shifts, b_shifts;  // some row of the operand lands late (else its shift pass is skipped)
  int b_col_bytes;          // bytes of this thread's B chunk inside n (0..16)
  const Elem* ax;           // A row tid's extra chunk at the next stage
  const Elem* bx;           // B row tid's extra chunk at the next stage (tid < STAGE_K)
  int ax_row_ok, ax_kpos, bx_col_bytes, bx_kpos;

  __device__ __forceinline__ TileLoader(const OperandParams& p, const Problem& mnk, int m0, int n0, int k_begin,
                                        int tid) {
    const int ar = tid / A_COLS, ak = (tid % A_COLS) * CHUNK;
    const int br = tid / B_COLS, bn = (tid % B_COLS) * CHUNK;
    a_kpos = k_begin * ML::BK + ak;
    b_kpos = k_begin * ML::BK + br;
    a = static_cast<const Elem*>(p.a) + static_cast<long long>(m0 + ar) * p.lda + a_kpos;
    b = static_cast<const Elem*>(p.b) + static_cast<long long>(b_kpos) * p.ldb + n0 + bn;
    a_rows_left = mnk.m - m0 - ar;
    b_col_ok = n0 + bn < mnk.n;
    a_dst = (ar * ML::A_LD + ak) * sizeof(Elem);
    // ML::B_SWIZZLE (16-byte copies): chunk c of row r at chunk c ^ (r % 8); a thread's rows are
    // B_ROWS_PER_PASS (8) apart, so one offset serves every pass
    if constexpr (ML::B_SWIZZLE) {
      static_assert(BYTES == 16 && B_ROWS_PER_PASS % 8 == 0, "swizzled B: 16-byte chunks, rows 8 apart per thread");
      b_dst = (br * ML::B_LD + ((bn / CHUNK) ^ (br % 8)) * CHUNK) * sizeof(Elem);
    } else {
      b_dst = (br * ML::B_LD + bn) * sizeof(Elem);
    }
    if constexpr (SHIFTED) {
      // m0, n0 and every stage's k start are multiples of 8 elements, so only the row index
      // inside the tile moves a row's lateness
      a_sh0 = static_cast<int>(reinterpret_cast<unsigned long long>(p.a) >> 1) & 7;
      a_step = static_cast<int>(p.lda & 7);
      b_sh0 = static_cast<int>(reinterpret_cast<unsigned long long>(p.b) >> 1) & 7;
      b_step = static_cast<int>(p.ldb & 7);
      a_shifts = a_sh0 != 0 || a_step != 0;
      b_shifts = b_sh0 != 0 || b_step != 0;
      const int ash = (a_sh0 + ar * a_step) & 7, bsh = (b_sh0 + br * b_step) & 7;
      a -= ash;
      a_kpos -= ash;  // k of this thread's chunk's first element
      b -= bsh;
      b_col_bytes = min(max(mnk.n - (n0 + bn - bsh), 0), CHUNK) * 2;
      const int xs = (a_sh0 + tid * a_step) & 7;  // A row tid: chunk STAGE_K / 8 of its segment
      ax_kpos = k_begin * ML::BK + ML::STAGE_K - xs;
      ax = static_cast<const Elem*>(p.a) + static_cast<long long>(m0 + tid) * p.lda + ax_kpos;
      ax_row_ok = xs && tid < ML::BM && m0 + tid < mnk.m;  // rows on time need no extra chunk
      const int ys = (b_sh0 + tid * b_step) & 7;  // B row tid: chunk BN / 8 of its segment
      bx_kpos = k_begin * ML::BK + tid;
      bx = static_cast<const Elem*>(p.b) + static_cast<long long>(bx_kpos) * p.ldb + n0 + ML::BN - ys;
      bx_col_bytes = ys && tid < ML::STAGE_K ? min(max(mnk.n - (n0 + ML::BN - ys), 0), CHUNK) * 2 : 0;
    }
  }

  // Copy the next stage into the buffers at shared byte addresses (sa, sb), zero past k_lim; advance.
  __device__ __forceinline__ void load(const OperandParams& p, int k_lim, unsigned sa, unsigned sb) {
    if constexpr (BYTES == 16 && !SHIFTED) {
      // Rows counted, as in the narrow path: one compare per copy. A mask of A's rows inside m
      // (bit i: pass i) cost ~100 more instructions a 128x128 stage (ptxas rebuilt it every stage
      // and moved the memory descriptor into uniform registers before each copy): 403 -> 297
      // instructions a stage; H100, 400 shapes, one call: DP vs cuBLAS raw 1.041 -> 1.067,
      // compute-bound 1.764 -> 1.834 (LOG.md v15). A copy of src-size 0 reads nothing, so src needs
      // no select for rows past m or k past the unit (compute-bound shapes +4%, v12). A goes
      // through L1 (.ca): +4% on 8192^3 against .cg with swizzled B rows (v10b, v12).
      const int a_rows = a_kpos < k_lim ? a_rows_left : 0;  // rows of A inside m, or none past k
      const int b_rows = b_col_ok ? k_lim - b_kpos : 0;     // k rows of B left
#pragma unroll
      for (int i = 0; i < A_PASSES; ++i)
        cp_async16_ca(sa + a_dst + i * A_ROWS_PER_PASS * ML::A_LD * sizeof(Elem),
                      a + static_cast<long long>(i * A_ROWS_PER_PASS) * p.lda, i * A_ROWS_PER_PASS < a_rows ? 16 : 0);
#pragma unroll
      for (int i = 0; i < B_PASSES; ++i)
        cp_async16(sb + b_dst + i * B_ROWS_PER_PASS * ML::B_LD * sizeof(Elem),
                   b + static_cast<long long>(i * B_ROWS_PER_PASS) * p.ldb, i * B_ROWS_PER_PASS < b_rows ? 16 : 0);
    } else if constexpr (SHIFTED) {
      // a copy size of 16 or 0 is a predicate; any other costs a few more instructions, so only
      // the chunks at k's or n's end take that path
      const int kb = min(max(k_lim - a_kpos, 0), CHUNK) * 2;  // the A chunk's bytes inside k
      const int a_rows = kb ? a_rows_left : 0;
      if (kb == 16) {
        copy_rows<A_PASSES, A_ROWS_PER_PASS, ML::A_LD>(sa + a_dst, a, A_ROWS_PER_PASS * p.lda, a_rows, 16);
      } else {
        copy_rows<A_PASSES, A_ROWS_PER_PASS, ML::A_LD>(sa + a_dst, a, A_ROWS_PER_PASS * p.lda, a_rows, kb);
      }
      const int xb = ax_row_ok ? min(max(k_lim - ax_kpos, 0), CHUNK) * 2 : 0;
      if (threadIdx.x < ML::BM) cp_async<16>(sa + (threadIdx.x * ML::A_LD + ML::STAGE_K) * sizeof(Elem), ax, xb);
      const int b_rows = b_col_bytes ? k_lim - b_kpos : 0;  // k rows of B left
      if (b_col_bytes == 16) {  // all but the thread whose chunk holds n's end
        copy_rows<B_PASSES, B_ROWS_PER_PASS, ML::B_LD>(sb + b_dst, b, B_ROWS_PER_PASS * p.ldb, b_rows, 16);
      } else {
        copy_rows<B_PASSES, B_ROWS_PER_PASS, ML::B_LD>(sb + b_dst, b, B_ROWS_PER_PASS * p.ldb, b_rows, b_col_bytes);
      }
      if (threadIdx.x < ML::STAGE_K)
        cp_async<16>(sb + (threadIdx.x * ML::B_LD + ML::BN) * sizeof(Elem), bx, bx_kpos < k_lim ? bx_col_bytes : 0);
      ax += ML::STAGE_K;
      ax_kpos += ML::STAGE_K;
      bx += static_cast<long long>(ML::STAGE_K) * p.ldb;
      bx_kpos += ML::STAGE_K;
    } else {
      // 2-4x the copies per stage, so each costs little: pointers step by a row stride, rows are
      // counted (no mask to rebuild), and no pointer select (as in the 16-byte path: a copy of
      // src-size 0 reads nothing). Rows left, or none past the unit's k: one compare per copy.
      copy_rows<A_PASSES, A_ROWS_PER_PASS, ML::A_LD>(sa + a_dst, a, A_ROWS_PER_PASS * p.lda,
                                                     a_kpos < k_lim ? a_rows_left : 0, BYTES);
      copy_rows<B_PASSES, B_ROWS_PER_PASS, ML::B_LD>(sb + b_dst, b, B_ROWS_PER_PASS * p.ldb,
                                                     b_col_ok ? k_lim - b_kpos : 0, BYTES);  // k rows of B left
    }
    a += ML::STAGE_K;
    a_kpos += ML::STAGE_K;
    b += static_cast<long long>(ML::STAGE_K) * p.ldb;
    b_kpos += ML::STAGE_K;
  }

  // Narrow copies of PASSES rows ROWS_PER_PASS apart (src steps by `step` elements, dst by LD
  // elements a row): `bytes` each for the first `rows` rows, nothing (zero-fill) past them.
  template <int PASSES, int ROWS_PER_PASS, int LD>
  static __device__ __forceinline__ void copy_rows(unsigned dst, const Elem* src, long long step, int rows, int bytes) {
#pragma unroll
    for (int i = 0; i < PASSES; ++i, src += step)
      cp_async<BYTES>(dst + i * ROWS_PER_PASS * LD * sizeof(Elem), src, i * ROWS_PER_PASS < rows ? bytes : 0);
  }

  // SHIFTED: move every row back by its lateness s, in place (every copy of the stage has landed
  // and is visible; the caller's barrier follows).
  __device__ __forceinline__ void shift(unsigned sa, unsigned sb) const {
    if constexpr (SHIFTED) {
      if (a_shifts) shift_rows<ML::BM, ML::STAGE_K / 8, ML::A_LD>(sa, a_sh0, a_step);
      if (b_shifts) shift_rows<ML::STAGE_K, ML::BN / 8, ML::B_LD>(sb, b_sh0, b_step);
    }
  }

  // ROWS rows of CHUNKS output chunks each. Lane (j, c) of warp w (j = lane / 8, c = lane % 8) takes
  // chunk c + 8h of rows r = R_w + 2j + 16i (R_w = 0, 1, 8, 9): rows 16 apart share s, so a lane's
  // shift amount and read offset are fixed; the four rows 2 apart that one instruction reads have
  // distinct s / 2 when ld is odd, so their words fall in distinct banks. A chunk's four words come
  // from the five words at (s / 2) + 4c (funnel shifts by 16 bits when s is odd). All of a group's
  // reads precede its writes (a lane's last word is its neighbour's first).
  template <int ROWS, int CHUNKS, int LD>
  static __device__ __forceinline__ void shift_rows(unsigned base, int sh0, int step) {
    constexpr int PASSES = (ROWS / 16) * (CHUNKS / 8), GROUP = PASSES < 4 ? PASSES : 4;
    static_assert(PASSES % GROUP == 0, "whole groups of passes");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = (warp & 1) + 8 * (warp >> 1) + 2 * (lane / 8);
    const int s = (sh0 + r * step) & 7;
    const unsigned amount = (s & 1) * 16;
    const unsigned dst = base + (r * LD + (lane % 8) * 8) * sizeof(Elem);
    const unsigned src = dst + (s >> 1) * 4;
#pragma unroll
    for (int g = 0; g < PASSES; g += GROUP) {
      unsigned v[GROUP][5];
#pragma unroll
      for (int q = 0; q < GROUP; ++q) {
        const unsigned off = pass_offset<CHUNKS, LD>(g + q);
#pragma unroll
        for (int w = 0; w < 5; ++w) asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v[q][w]) : "r"(src + off + 4 * w));
      }
      __syncwarp();
#pragma unroll
      for (int q = 0; q < GROUP; ++q) {
        unsigned o[4];
#pragma unroll
        for (int w = 0; w < 4; ++w) o[w] = __funnelshift_r(v[q][w], v[q][w + 1], amount);
        asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(dst + pass_offset<CHUNKS, LD>(g + q)),
                     "r"(o[0]), "r"(o[1]), "r"(o[2]), "r"(o[3]) : "memory");
      }
      __syncwarp();
    }
  }

  // byte offset of pass t (row block i = t / (CHUNKS / 8), chunk half h = t % (CHUNKS / 8)) from pass 0
  template <int CHUNKS, int LD>
  static constexpr unsigned pass_offset(int t) {
    return ((t / (CHUNKS / 8)) * 16 * LD + (t % (CHUNKS / 8)) * 64) * sizeof(Elem);
  }
};

// The copies past a unit's last stage are skipped by a branch: issuing them zero-filled instead
// cut the 128x128 stage from ~420 to ~360 instructions but 8192^3 ran 402 -> 386 TFLOP/s (LOG.md v13).
template <class ML>
__device__ __forceinline__ void pipelined_mainloop(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                                   int k_begin, int k_end, unsigned char* smem,
                                                   typename ML::Acc (&acc)[ML::ACC]) {
  using Elem = typename ML::Elem;
  static_assert(ML::KSTEPS % 2 == 0, "fragment double buffer alternates within an iteration");
  constexpr unsigned A_BYTES = ML::A_STAGE * sizeof(Elem), B_BYTES = ML::B_STAGE * sizeof(Elem);
  const int tid = threadIdx.x;
  const unsigned sa = smem_u32(smem), sb = sa + ML::STAGES * A_BYTES;
  const int iters = (k_end - k_begin + ML::STAGE_ITERS - 1) / ML::STAGE_ITERS;  // stages
  const int k_lim = ML::STAGE_ITERS == 1 ? mnk.k : min(mnk.k, k_end * ML::BK);
  // a unit's last stage may hold fewer MAC iterations than STAGE_ITERS (zeros past them): only
  // their k-steps run
  const int rem = (k_end - k_begin) % ML::STAGE_ITERS;
  const int last_ksteps = rem ? rem * (ML::KSTEPS / ML::STAGE_ITERS) : ML::KSTEPS;
  TileLoader<ML> loader(p, mnk, m0, n0, k_begin, tid);
#pragma unroll
  for (int s = 0; s < ML::STAGES - 1; ++s) {
    if (s < iters) loader.load(p, k_lim, sa + s * A_BYTES, sb + s * B_BYTES);
    cp_async_commit();
  }
  cp_async_wait<ML::STAGES - 2>();
  __syncthreads();
  if constexpr (TileLoader<ML>::SHIFTED) {
    loader.shift(sa, sb);
    __syncthreads();
  }
  const typename ML::Lanes lanes = ML::lanes(tid);
  typename ML::Frag frag[2];
  ML::load_frag(sa, sb, 0, frag[0], lanes);
  unsigned rd = 0, wr = ML::STAGES - 1;  // buffer read by stage `it`; buffer its copies refill
  // One stage: `ksteps` of its k-steps (all but a unit's half-empty last stage); the steady-state
  // loop passes the constant KSTEPS, so its unrolled body has no branch between k-steps.
  auto stage = [&](int it, int ksteps) {
    const unsigned next = rd + 1 == ML::STAGES ? 0u : rd + 1;
#pragma unroll
    for (int kk = 0; kk < ML::KSTEPS; ++kk) {
      if (kk == ksteps) break;
      if (kk == ML::KSTEPS - 1) {
        // shifted rows: the last k-step's mmas issue first, so the tensor cores work through them
        // while the warps wait, shift and wait again
        if constexpr (TileLoader<ML>::SHIFTED) ML::mma_frag(frag[kk % 2], acc);
        // next stage landed for every thread; nobody reads stage `it - 1`'s buffer any more
        cp_async_wait<ML::STAGES - 2>();
        __syncthreads();
        if constexpr (TileLoader<ML>::SHIFTED) {
          loader.shift(sa + next * A_BYTES, sb + next * B_BYTES);
          __syncthreads();
        }
        ML::load_frag(sa + next * A_BYTES, sb + next * B_BYTES, 0, frag[(kk + 1) % 2], lanes);
      } else {
        ML::load_frag(sa + rd * A_BYTES, sb + rd * B_BYTES, kk + 1, frag[(kk + 1) % 2], lanes);
      }
      if (kk == 0) {
        if (it + ML::STAGES - 1 < iters) loader.load(p, k_lim, sa + wr * A_BYTES, sb + wr * B_BYTES);
        cp_async_commit();
      }
      if (!TileLoader<ML>::SHIFTED || kk != ML::KSTEPS - 1) ML::mma_frag(frag[kk % 2], acc);
    }
    wr = rd;
    rd = next;
  };
  for (int it = 0; it < iters - 1; ++it) stage(it, ML::KSTEPS);
  if (iters > 0) stage(iters - 1, last_ksteps);
  cp_async_wait<0>();
  __syncthreads();  // the next unit may refill every stage
}

}  // namespace sm80
}  // namespace streamk
