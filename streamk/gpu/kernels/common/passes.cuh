// passes.cuh: the kernels a GEMM may launch around its main kernel, for any mainloop ML (its
// BM, BN, THREADS, ACC, Acc and coord: the workspace slot layout of fixup.cuh):
//   reduce_kernel    the separate-reduce policy's pass: sums the DEFER units' slots of each split
//                    tile in k order and writes C; grid (split tiles, slices), no shared memory
//   prescale_kernel  the atomic policy's prologue: C = beta*C on the split tiles (a C of the
//                    accumulator's type: the host refuses the atomic policy on a 16-bit C)
// Both read the table's items (split tiles); launched with programmatic dependent launch behind or
// ahead of the main kernel (ptx.cuh pdl_wait, pdl_trigger).
#pragma once

#include "c_elem.cuh"
#include "fixup.cuh"
#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

// Separate-reduce pass, grid (split tiles, slices): block (b, r) sums slice r of split tile b's
// slots in k order and writes that part of C. A slice is a run of every thread's accumulator
// vectors, so it is one contiguous range of each slot (SlotVec) and maps to whole mma fragments
// of C. Why slices: one CTA per tile read its s slots of 64 KB at ~1.3 us each (LOG.md v10), so
// the pass cost grew with s on one SM; spread over gridDim.y blocks it shrinks by that factor.
// The host picks gridDim.y, a divisor of the tile's vectors per thread, with at most
// REDUCE_MAX_VECS vectors per block; the sums are the same adds in the same order (bitwise equal
// to one block per tile). A block keeps REDUCE_FLIGHT_VECS vectors of loads in flight (whole slots'
// shares, added in k order once they land): a small tile's slot is one vector a thread, and two at
// a time left a tile split 32 ways latency-bound (LOG.md v31).
constexpr int REDUCE_MAX_VECS = 4;
constexpr int REDUCE_FLIGHT_VECS = 8;

template <class ML>
__device__ __forceinline__ void reduce_slice(const GemmParams& p) {
  using Acc = typename ML::Acc;
  using SV = SlotVec<ML>;
  constexpr int V = SV::V, MAXV = ML::ACC / V < REDUCE_MAX_VECS ? ML::ACC / V : REDUCE_MAX_VECS;
  constexpr int FLIGHT = REDUCE_FLIGHT_VECS / MAXV > 2 ? REDUCE_FLIGHT_VECS / MAXV : 2;  // slots a round
  const TableParams& t = p.table;
  const int* item = t.items + blockIdx.x * ITEM_FIELDS;
  const int offset = item[I_READS_OFFSET], count = item[I_READS_COUNT];
  const int m0 = item[I_TILE_M] * ML::BM, n0 = item[I_TILE_N] * ML::BN;
  pdl_wait();  // launched behind the main kernel: every slot stored and visible from here (the
               // item table is the host's, read while that kernel finished)
  const int per = (ML::ACC / V) / gridDim.y, j0 = blockIdx.y * per, tid = threadIdx.x;
  Acc sum[MAXV][V], next[FLIGHT][MAXV][V];
  const int rows = min(ML::BM, t.m - m0), cols = min(ML::BN, t.n - n0);
  const auto load = [&](int q, Acc (&v)[MAXV][V]) {  // vectors wholly outside the matrix: not read
    const Acc* s = slot_ptr<ML>(t, t.reads[offset + q]);
#pragma unroll
    for (int i = 0; i < MAXV; ++i)
      if (i < per && SV::inside(j0 + i, tid, rows, cols)) ld_cg16(s + SV::at(j0 + i, tid), v[i]);
  };
  const auto add = [&](const Acc (&v)[MAXV][V]) {
#pragma unroll
    for (int i = 0; i < MAXV; ++i)
#pragma unroll
      for (int e = 0; e < V; ++e) sum[i][e] += v[i][e];
  };
  load(0, sum);
  for (int q = 1; q < count; q += FLIGHT) {  // a round: FLIGHT slots' loads, then their adds in order
#pragma unroll
    for (int f = 0; f < FLIGHT; ++f)
      if (q + f < count) load(q + f, next[f]);
#pragma unroll
    for (int f = 0; f < FLIGHT; ++f)
      if (q + f < count) add(next[f]);
  }
  const OperandParams& o = p.ops;
  const Acc alpha = static_cast<Acc>(o.alpha), beta = static_cast<Acc>(o.beta);
  const long long corner = static_cast<long long>(m0) * o.c_rs + static_cast<long long>(n0) * o.c_cs;
#pragma unroll
  for (int i = 0; i < MAXV; ++i) {
    if (i >= per) break;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      int r, c;
      ML::coord((j0 + i) * V + e, tid, r, c);
      if (r < rows && c < cols)
        c_update_any<Acc>(o.c, corner + static_cast<long long>(r) * o.c_rs + static_cast<long long>(c) * o.c_cs,
                          o.c_type, alpha * sum[i][e], beta);
    }
  }
}

// Atomic prologue: block b sets split tile b's C to beta*C (0 when beta == 0: C is not read).
template <class ML>
__device__ __forceinline__ void prescale_items(const GemmParams& p) {
  using Acc = typename ML::Acc;
  pdl_trigger();  // the main kernel may start launching: it waits for this pass before touching C
  const int* item = p.table.items + blockIdx.x * ITEM_FIELDS;
  const int m0 = item[I_TILE_M] * ML::BM, n0 = item[I_TILE_N] * ML::BN;
  Acc* C = static_cast<Acc*>(p.ops.c);
  const Acc beta = static_cast<Acc>(p.ops.beta);
  for (int e = threadIdx.x; e < ML::BM * ML::BN; e += ML::THREADS) {
    const int r = m0 + e / ML::BN, c = n0 + e % ML::BN;
    if (r < p.table.m && c < p.table.n) {
      Acc* dst = C + r * p.ops.c_rs + c * p.ops.c_cs;
      *dst = beta == Acc(0) ? Acc(0) : beta * *dst;
    }
  }
}

template <class ML>
__device__ __forceinline__ void reduce_kernel(const GemmParams& p) {
  reduce_slice<ML>(p);
}

template <class ML>
__device__ __forceinline__ void prescale_kernel(const GemmParams& p) {
  prescale_items<ML>(p);
}

}  // namespace streamk
