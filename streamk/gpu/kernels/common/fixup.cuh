// fixup.cuh: the fixup primitives every outer loop uses to consolidate a split tile's partial
// sums: workspace slots (store, add), flags (signal, wait), arrival counters (arrive), the launch
// epoch, each parameterized by the thread group G (group.cuh) that runs it: its barrier orders the
// group's accesses around the leader's flag and counter operations, so a warp-specialized kernel
// can signal and wait from one role while another computes.
//
// The unit actions they serve (streamk.fixup.plan_fixup; the table's U_ACTION):
//   WRITE    C = alpha*acc + beta*C                     (beta == 0: C is never read)
//   PARTIAL  slot <- acc; raise flag                     (owner-waits peers, turnstile's first)
//   REDUCE   wait flags; acc += slots in k order; write  (owner-waits owner)
//   HANDOFF  wait predecessor; acc += its slot; slot <- acc; raise flag
//   FINISH   wait predecessor; acc += its slot; write
//   ARRIVE   slot <- acc; count the arrival; the last one sums all slots in k order and writes
//   ATOMIC   C += alpha*acc atomically (the host prescaled the split tiles' C by beta)
//   DEFER    slot <- acc (the reduce pass, passes.cuh, sums and writes)
// Workspace slot s holds BM*BN accumulators in fragment order, each thread's in 16-byte vectors
// (SlotVec), so stores and loads are coalesced, 16 bytes wide, and need no shared memory.
// Invariants: a flag or an arrival counter is compared with this launch's epoch only, so nothing
// is reset between launches; partial sums are always added in k order (deterministic policies
// give bitwise-identical C); the host refuses schedules whose waits could deadlock.
#pragma once

#include "group.cuh"
#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

template <class ML>
__device__ __forceinline__ typename ML::Acc* slot_ptr(const TableParams& t, int slot) {
  return static_cast<typename ML::Acc*>(t.workspace) + static_cast<long long>(slot) * (ML::BM * ML::BN);
}

// A slot holds each thread's accumulators in 16-byte vectors: vector j of thread t (elements
// j*V .. j*V+V-1) at (j*THREADS + t)*V, so every warp access is 512 contiguous bytes. A vector's
// first element is its least row and column (one mma fragment's pairs), so the reduce pass skips
// the vectors wholly outside the matrix (an edge tile's rows past m or columns past n): their sums
// are never written to C. The main kernel stores and reads whole slots: the same test there took
// ptxas from 72 to 272 bytes of spills and our DP kernel 6% slower (LOG.md v11).
template <class ML>
struct SlotVec {
  static constexpr int V = 16 / sizeof(typename ML::Acc);
  static_assert(ML::ACC % V == 0, "accumulators come in whole 16-byte vectors");
  static __device__ __forceinline__ long long at(int j, int tid) { return (static_cast<long long>(j) * ML::THREADS + tid) * V; }
  static __device__ __forceinline__ bool inside(int j, int tid, int rows, int cols) {
    int r, c;
    ML::coord(j * V, tid, r, c);
    return r < rows && c < cols;
  }
};

// Whether every accumulator of thread `tid` lies at or below tile row `rows` (the tile's rows inside
// m), so its share of a slot is never summed into C: on a mainloop that names each thread's least
// row (ML::first_row; the sm90 wgmma layout: two rows a thread), such a thread neither stores nor
// reads its share. A 16-row Linear decode on a 64-row tile then moves a quarter of each partial
// (LOG.md v63). Mainloops without first_row store and read whole slots (the per-vector test spilled
// on sm80, LOG.md v11). The separate reduce pass already skips vectors wholly past m.
template <class ML, class = void>
struct SlotRows {
  static __device__ __forceinline__ bool outside(int, int) { return false; }
};
template <class ML>
struct SlotRows<ML, decltype(void(ML::first_row(0)))> {
  static __device__ __forceinline__ bool outside(int tid, int rows) { return ML::first_row(tid) >= rows; }
};

// tid: the thread's rank in the group holding the accumulators (ML::THREADS of them); m0: the
// tile's first row (SlotRows: its rows inside m are t.m - m0, read here rather than kept in a
// register across the mainloop, which spilled on sm90 128x256 with a column-major A)
template <class ML>
__device__ __forceinline__ void store_slot(const TableParams& t, int slot, const typename ML::Acc (&acc)[ML::ACC],
                                           int tid, int m0) {
  using SV = SlotVec<ML>;
  if (SlotRows<ML>::outside(tid, t.m - m0)) return;
  typename ML::Acc* s = slot_ptr<ML>(t, slot);
#pragma unroll
  for (int j = 0; j < ML::ACC / SV::V; ++j)
    st_cg16(s + SV::at(j, tid), *reinterpret_cast<const typename ML::Acc(*)[SV::V]>(&acc[j * SV::V]));
}

template <class ML>
__device__ __forceinline__ void add_slot(const TableParams& t, int slot, typename ML::Acc (&acc)[ML::ACC], int tid,
                                         int m0) {
  using SV = SlotVec<ML>;
  if (SlotRows<ML>::outside(tid, t.m - m0)) return;
  const typename ML::Acc* s = slot_ptr<ML>(t, slot);
#pragma unroll
  for (int j = 0; j < ML::ACC / SV::V; ++j) {
    typename ML::Acc v[SV::V];
    ld_cg16(s + SV::at(j, tid), v);
#pragma unroll
    for (int e = 0; e < SV::V; ++e) acc[j * SV::V + e] += v[e];
  }
}

// This launch's epoch, read by each thread that uses it: the word changes only once every CTA of
// this launch is past its reads (finish_launch), or before the launch (the last one on this lane,
// complete at the reader's pdl_wait), so all of them read the same value.
__device__ __forceinline__ unsigned read_epoch(const TableParams& t) { return ld_volatile(t.state + STATE_EPOCH); }

// This launch's epoch, read by G's leader into the group's shared word `epoch` (then synced).
template <class G>
__device__ __forceinline__ void share_epoch(const TableParams& t, unsigned& epoch) {
  if (G::leader()) epoch = ld_volatile(t.state + STATE_EPOCH);
  G::sync();
}

// Every store of G's threads before this is visible GPU-wide before the flag carries `epoch`: the
// barrier orders them before the leader's release store, and a release is cumulative (PTX memory
// model), so no thread needs a fence of its own (the pattern of CUTLASS's
// include/cutlass/barrier.h, arrive_inc: a barrier, then one red.release.gpu). A group that signals
// for stores of another group first receives them through a barrier (group.cuh Handoff).
template <class G>
__device__ __forceinline__ void signal(const TableParams& t, int unit, unsigned epoch) {
  G::sync();
  if (G::leader()) flag_release(t.flags + unit, epoch);
}

// G's leader spins on the flags; the barrier after its acquire loads orders every thread's slot
// reads after the signals.
template <class G>
__device__ __forceinline__ void wait_units(const TableParams& t, int offset, int count, unsigned epoch) {
  if (G::leader()) {
    for (int j = 0; j < count; ++j) {
      const unsigned* flag = t.flags + t.waits[offset + j];
      while (flag_acquire(flag) != epoch) {
      }
    }
  }
  G::sync();
}

// Count this unit's arrival at its tile; true for the last of `count` contributors.
template <class G>
__device__ __forceinline__ bool arrive_last(const TableParams& t, int tile, int count, unsigned epoch) {
  __shared__ int last_of[2];  // one word per group that may count at once (group.cuh slot)
  int& last = last_of[G::slot()];
  G::sync();
  if (G::leader()) {
    fence_acq_rel_gpu();  // our slot stores (ordered before it by the barrier) before the count
    unsigned long long* ctr = t.counters + tile;
    unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(ctr), seen, next;
    do {
      seen = old;
      const unsigned long long arrived = (seen >> 32) == epoch ? (seen & 0xffffffffull) : 0ull;
      next = (static_cast<unsigned long long>(epoch) << 32) | (arrived + 1);
      old = atomicCAS(ctr, seen, next);
    } while (old != seen);
    last = static_cast<int>(next & 0xffffffffull) == count;
    fence_acq_rel_gpu();  // the other arrivals' slot stores before our reads of them
  }
  G::sync();
  return last != 0;
}

// The last CTA to finish bumps the epoch for the next launch and re-arms the done counter (every
// CTA read the epoch before; the next launch reads both words only after its pdl_wait, outer_loop.cuh).
// One group per CTA calls it, after its last access to flags, counters and slots.
template <class G>
__device__ __forceinline__ void finish_launch(const TableParams& t) {
  if (G::leader()) {
    const unsigned done = atomicAdd(t.state + STATE_DONE, 1u);
    if (done == gridDim.x - 1) {
      t.state[STATE_DONE] = 0u;
      atomicAdd(t.state + STATE_EPOCH, 1u);
    }
  }
}

}  // namespace streamk
