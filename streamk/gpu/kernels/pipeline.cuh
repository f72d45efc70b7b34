// pipeline.cuh: the multi-stage cp.async software pipeline both sm80 mainloops share.
// ML provides Elem, LOAD_BYTES (copy width), Frag, STAGES, STAGE_ITERS (MAC iterations per stage),
// STAGE_K (k elements per stage), KSTEPS (mma k-steps per stage), A_STAGE, B_STAGE (elements per
// stage), load_frag (one k-step's fragments from shared memory) and mma_frag. Fragments are
// double-buffered: k-step kk+1's (or the next stage's first) are loaded before kk's mmas issue.
// Stage `it` refills the buffer stage it-1 used with stage it+STAGES-1; the wait + barrier before the last k-step of `it`
// makes stage it+1 visible and retires every read of stage it-1 (the CUTLASS sm80 multistage
// order). A unit's k range ends at min(k, k_end * BK): past it both operands are zero-filled, so
// a stage of two iterations may cover a unit's odd last iteration (whose zero half is skipped;
// the wait + barrier after the loop still retire every copy and read).
#pragma once

#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

// Global -> shared copies of one stage's A (BM x STAGE_K) and B (STAGE_K x BN) tiles. Thread t copies
// the ML::LOAD_BYTES chunk at column (t % COLS) of rows t / COLS + pass * ROWS_PER_PASS, so one
// pointer per operand, advanced by a stage per call, addresses every pass; row/column predicates
// are fixed per unit, k predicates checked per stage (zero-fill past the unit's k limit).
// LOAD_BYTES is 16 for aligned operands; 8 or 4 reads operands whose rows are only 8- or 4-byte
// aligned in place (more copies per stage, no packing pass); the shared layout is the same.
template <class ML>
struct TileLoader {
  using Elem = typename ML::Elem;
  static constexpr int BYTES = ML::LOAD_BYTES;
  static constexpr int CHUNK = BYTES / sizeof(Elem);
  static_assert(CHUNK >= 1 && (BYTES == 16 || BYTES == 8 || BYTES == 4), "whole elements per 16/8/4-byte copy");
  static constexpr int A_COLS = ML::STAGE_K / CHUNK;
  static constexpr int A_ROWS_PER_PASS = ML::THREADS / A_COLS;
  static constexpr int A_PASSES = ML::BM / A_ROWS_PER_PASS;
  static constexpr int B_COLS = ML::BN / CHUNK;
  static constexpr int B_ROWS_PER_PASS = ML::THREADS / B_COLS;
  static constexpr int B_PASSES = ML::STAGE_K / B_ROWS_PER_PASS;
  static_assert(ML::THREADS % A_COLS == 0 && ML::BM % A_ROWS_PER_PASS == 0, "A chunks tile the threads");
  static_assert(ML::THREADS % B_COLS == 0 && ML::STAGE_K % B_ROWS_PER_PASS == 0, "B chunks tile the threads");
  static_assert(A_PASSES <= 32, "row mask fits 32 bits");  // 16-byte copies: 8 passes

  const Elem* a;       // this thread's A chunk of pass 0 at the next stage
  const Elem* b;       // this thread's B chunk of pass 0 at the next stage
  int a_kpos;          // k (elements) of this thread's A chunk at the next stage
  int b_kpos;          // k (row) of this thread's B chunk of pass 0 at the next stage
  unsigned a_rows_ok;  // bit i: pass i's A row is inside m (16-byte copies)
  int a_rows_left;     // rows of A from this thread's pass-0 row to m (narrow copies: up to 32 passes)
  bool b_col_ok;       // this thread's B columns are inside n
  unsigned a_dst;      // byte offset of this thread's A chunk inside a stage (pass 0)
  unsigned b_dst;

  __device__ __forceinline__ TileLoader(const GemmParams& p, int m0, int n0, int k_begin, int tid) {
    const int ar = tid / A_COLS, ak = (tid % A_COLS) * CHUNK;
    const int br = tid / B_COLS, bn = (tid % B_COLS) * CHUNK;
    a_kpos = k_begin * ML::BK + ak;
    b_kpos = k_begin * ML::BK + br;
    a = static_cast<const Elem*>(p.a) + static_cast<long long>(m0 + ar) * p.lda + a_kpos;
    b = static_cast<const Elem*>(p.b) + static_cast<long long>(b_kpos) * p.ldb + n0 + bn;
    a_rows_ok = 0;
#pragma unroll
    for (int i = 0; i < A_PASSES; ++i) a_rows_ok |= (m0 + ar + i * A_ROWS_PER_PASS < p.m ? 1u : 0u) << i;
    a_rows_left = p.m - m0 - ar;
    b_col_ok = n0 + bn < p.n;
    a_dst = (ar * ML::A_LD + ak) * sizeof(Elem);
    b_dst = (br * ML::B_LD + bn) * sizeof(Elem);
  }

  // Copy the next stage into the buffers at shared byte addresses (sa, sb), zero past k_lim; advance.
  __device__ __forceinline__ void load(const GemmParams& p, int k_lim, unsigned sa, unsigned sb) {
    if constexpr (BYTES == 16) {
      const bool a_k_ok = a_kpos < k_lim;
#pragma unroll
      for (int i = 0; i < A_PASSES; ++i) {
        const bool ok = a_k_ok && (a_rows_ok >> i & 1u);
        const Elem* src = a + static_cast<long long>(i * A_ROWS_PER_PASS) * p.lda;
        // through L1 (.ca): a stage reads 128 bytes of each A row, the L2 delivers more, and the
        // rest of the line serves the next stage from L1 (3.22 -> 2.69 GB moved L2 -> SM on
        // 4096^3, +5-8% on large problems; LOG.md v10)
        cp_async16_ca(sa + a_dst + i * A_ROWS_PER_PASS * ML::A_LD * sizeof(Elem), ok ? src : a, ok ? 16 : 0);
      }
#pragma unroll
      for (int i = 0; i < B_PASSES; ++i) {
        const bool ok = b_col_ok && b_kpos + i * B_ROWS_PER_PASS < k_lim;
        const Elem* src = b + static_cast<long long>(i * B_ROWS_PER_PASS) * p.ldb;
        cp_async16(sb + b_dst + i * B_ROWS_PER_PASS * ML::B_LD * sizeof(Elem), ok ? src : b, ok ? 16 : 0);
      }
    } else {
      // 2-4x the copies per stage, so each costs little: pointers step by a row stride, rows are
      // counted (no mask to rebuild), and no pointer select: a copy of src-size 0 reads nothing
      // (the 16-byte path's pass-0 pointer of a row past m lies outside A as well).
      {
        // rows left, or none past the unit's k: one compare per copy
        const int rows = a_kpos < k_lim ? a_rows_left : 0;
        const Elem* src = a;
        const long long a_step = A_ROWS_PER_PASS * p.lda;
#pragma unroll
        for (int i = 0; i < A_PASSES; ++i, src += a_step) {
          const bool ok = i * A_ROWS_PER_PASS < rows;
          cp_async<BYTES>(sa + a_dst + i * A_ROWS_PER_PASS * ML::A_LD * sizeof(Elem), src, ok ? BYTES : 0);
        }
      }
      {
        const int rows = b_col_ok ? k_lim - b_kpos : 0;  // k rows of B left
        const Elem* src = b;
        const long long b_step = B_ROWS_PER_PASS * p.ldb;
#pragma unroll
        for (int i = 0; i < B_PASSES; ++i, src += b_step) {
          const bool ok = i * B_ROWS_PER_PASS < rows;
          cp_async<BYTES>(sb + b_dst + i * B_ROWS_PER_PASS * ML::B_LD * sizeof(Elem), src, ok ? BYTES : 0);
        }
      }
    }
    a += ML::STAGE_K;
    a_kpos += ML::STAGE_K;
    b += static_cast<long long>(ML::STAGE_K) * p.ldb;
    b_kpos += ML::STAGE_K;
  }
};

template <class ML>
__device__ __forceinline__ void pipelined_mainloop(const GemmParams& p, int m0, int n0, int k_begin, int k_end,
                                                   unsigned char* smem, typename ML::Acc (&acc)[ML::ACC]) {
  using Elem = typename ML::Elem;
  static_assert(ML::KSTEPS % 2 == 0, "fragment double buffer alternates within an iteration");
  constexpr unsigned A_BYTES = ML::A_STAGE * sizeof(Elem), B_BYTES = ML::B_STAGE * sizeof(Elem);
  const int tid = threadIdx.x;
  const unsigned sa = smem_u32(smem), sb = sa + ML::STAGES * A_BYTES;
  const int iters = (k_end - k_begin + ML::STAGE_ITERS - 1) / ML::STAGE_ITERS;  // stages
  const int k_lim = ML::STAGE_ITERS == 1 ? p.k : min(p.k, k_end * ML::BK);
  // a unit's last stage may hold fewer MAC iterations than STAGE_ITERS (zeros past them): only
  // their k-steps run
  const int rem = (k_end - k_begin) % ML::STAGE_ITERS;
  const int last_ksteps = rem ? rem * (ML::KSTEPS / ML::STAGE_ITERS) : ML::KSTEPS;
  TileLoader<ML> loader(p, m0, n0, k_begin, tid);
#pragma unroll
  for (int s = 0; s < ML::STAGES - 1; ++s) {
    if (s < iters) loader.load(p, k_lim, sa + s * A_BYTES, sb + s * B_BYTES);
    cp_async_commit();
  }
  cp_async_wait<ML::STAGES - 2>();
  __syncthreads();
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
        // next stage landed for every thread; nobody reads stage `it - 1`'s buffer any more
        cp_async_wait<ML::STAGES - 2>();
        __syncthreads();
        ML::load_frag(sa + next * A_BYTES, sb + next * B_BYTES, 0, frag[(kk + 1) % 2], lanes);
      } else {
        ML::load_frag(sa + rd * A_BYTES, sb + rd * B_BYTES, kk + 1, frag[(kk + 1) % 2], lanes);
      }
      if (kk == 0) {
        if (it + ML::STAGES - 1 < iters) loader.load(p, k_lim, sa + wr * A_BYTES, sb + wr * B_BYTES);
        cp_async_commit();
      }
      ML::mma_frag(frag[kk % 2], acc);
    }
    wr = rd;
    rd = next;
  };
  for (int it = 0; it < iters - 1; ++it) stage(it, ML::KSTEPS);
  if (iters > 0) stage(iters - 1, last_ksteps);
  cp_async_wait<0>();
  __syncthreads();  // the next unit may refill every stage
}

}  // namespace streamk
