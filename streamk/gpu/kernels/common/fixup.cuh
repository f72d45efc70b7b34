// fixup.cuh: the Stream-K outer loop and the fixup epilogues, shared by every mainloop.
//
// A CTA runs the unit rows cta_offsets[blockIdx.x] .. cta_offsets[blockIdx.x+1]-1 of the table
// in order: for each, the mainloop accumulates iterations [k_begin, k_end) of its tile, then the
// unit's Action (from streamk.fixup.plan_fixup, never re-derived here) decides what happens:
//   WRITE    C = alpha*acc + beta*C                     (beta == 0: C is never read)
//   PARTIAL  slot <- acc; raise flag                     (owner-waits peers, turnstile's first)
//   REDUCE   wait flags; acc += slots in k order; write  (owner-waits owner)
//   HANDOFF  wait predecessor; acc += its slot; slot <- acc; raise flag
//   FINISH   wait predecessor; acc += its slot; write
//   ARRIVE   slot <- acc; count the arrival; the last one sums all slots in k order and writes
//   ATOMIC   C += alpha*acc atomically (the host prescaled the split tiles' C by beta)
//   DEFER    slot <- acc (the reduce pass, streamk_reduce_*, sums and writes)
// Workspace slot s holds BM*BN accumulators in fragment order, each thread's in 16-byte vectors
// (SlotVec), so stores and loads are coalesced, 16 bytes wide, and need no shared memory.
// Invariants: a flag or an arrival counter is compared with this launch's epoch only, so nothing
// is reset between launches; partial sums are always added in k order (deterministic policies
// give bitwise-identical C); the host refuses schedules whose waits could deadlock.
#pragma once

#include "epilogue.cuh"
#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

template <class ML>
__device__ __forceinline__ typename ML::Acc* slot_ptr(const GemmParams& p, int slot) {
  return static_cast<typename ML::Acc*>(p.workspace) + static_cast<long long>(slot) * (ML::BM * ML::BN);
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

template <class ML>
__device__ __forceinline__ void store_slot(const GemmParams& p, int slot,
                                           const typename ML::Acc (&acc)[ML::ACC], int tid) {
  using SV = SlotVec<ML>;
  typename ML::Acc* s = slot_ptr<ML>(p, slot);
#pragma unroll
  for (int j = 0; j < ML::ACC / SV::V; ++j)
    st_cg16(s + SV::at(j, tid), *reinterpret_cast<const typename ML::Acc(*)[SV::V]>(&acc[j * SV::V]));
}

template <class ML>
__device__ __forceinline__ void add_slot(const GemmParams& p, int slot, typename ML::Acc (&acc)[ML::ACC],
                                         int tid) {
  using SV = SlotVec<ML>;
  const typename ML::Acc* s = slot_ptr<ML>(p, slot);
#pragma unroll
  for (int j = 0; j < ML::ACC / SV::V; ++j) {
    typename ML::Acc v[SV::V];
    ld_cg16(s + SV::at(j, tid), v);
#pragma unroll
    for (int e = 0; e < SV::V; ++e) acc[j * SV::V + e] += v[e];
  }
}

// Every thread's stores before this are visible GPU-wide before the flag carries `epoch`: the
// barrier orders them before thread 0's release store, and a release is cumulative (PTX memory
// model), so no thread needs a fence of its own (the pattern of CUTLASS's
// include/cutlass/barrier.h, arrive_inc: __syncthreads, then one red.release.gpu).
__device__ __forceinline__ void signal(const GemmParams& p, int unit, unsigned epoch) {
  __syncthreads();
  if (threadIdx.x == 0) flag_release(p.flags + unit, epoch);
}

__device__ __forceinline__ void wait_units(const GemmParams& p, int offset, int count, unsigned epoch) {
  if (threadIdx.x == 0) {
    for (int j = 0; j < count; ++j) {
      const unsigned* flag = p.flags + p.waits[offset + j];
      while (flag_acquire(flag) != epoch) {
      }
    }
  }
  __syncthreads();  // thread 0's acquire loads order every thread's slot reads after the signals
}

// Count this unit's arrival at its tile; true for the last of `count` contributors.
__device__ __forceinline__ bool arrive_last(const GemmParams& p, int tile, int count, unsigned epoch) {
  __shared__ int last;
  __syncthreads();
  if (threadIdx.x == 0) {
    fence_acq_rel_gpu();  // our slot stores (ordered before it by the barrier) before the count
    unsigned long long* ctr = p.counters + tile;
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
  __syncthreads();
  return last != 0;
}

// The last CTA to finish bumps the epoch for the next launch and re-arms the done counter (every
// CTA read the epoch at its start; the next launch sees both words after the kernel boundary).
__device__ __forceinline__ void finish_launch(const GemmParams& p) {
  if (threadIdx.x == 0) {
    const unsigned done = atomicAdd(p.state + STATE_DONE, 1u);
    if (done == gridDim.x - 1) {
      p.state[STATE_DONE] = 0u;
      atomicAdd(p.state + STATE_EPOCH, 1u);
    }
  }
}

#ifdef STREAMK_TRACE
// Probe builds only (STREAMK_DEFINES=STREAMK_TRACE=1, benchmarks/gpu_probe.py): per CTA, the
// %globaltimer (ns) at entry, then for each of its first TRACE_UNITS units when the mainloop
// starts, when it ends and when the unit's epilogue (fixup included) ends; the host reads it.
constexpr int TRACE_CTAS = 8192, TRACE_UNITS = 5, TRACE_WORDS = 1 + 3 * TRACE_UNITS;
extern "C" {
__device__ unsigned long long streamk_trace[TRACE_CTAS * TRACE_WORDS];
}
__device__ __forceinline__ void trace(int unit, int event) {
  if (threadIdx.x == 0 && blockIdx.x < TRACE_CTAS && unit < TRACE_UNITS) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    streamk_trace[blockIdx.x * TRACE_WORDS + (unit < 0 ? 0 : 1 + 3 * unit + event)] = t;
  }
}
#else
__device__ __forceinline__ void trace(int, int) {}
#endif

#ifndef STREAMK_PDL_WAIT_AT_START
#define STREAMK_PDL_WAIT_AT_START 0  // 1: wait before reading anything (the first PDL build; A/B)
#endif

// 1: kernels on tiles smaller than the paper's FP16/BF16 128x128 read row blockIdx.x of the unit
// table while cta_offsets is still in flight, and use it when it is the CTA's first unit (every
// DP-like CTA: 85 of the 131 64x64 launches on the 400 shapes): the first copies then wait for one
// global read, not two (H100 trace: a CTA's entry to its first mainloop ~0.6 us, LOG.md v14).
// The host gives the table a row per CTA at least. The 128x128 kernels keep their allocation.
#ifndef STREAMK_GUESS_FIRST_ROW
#define STREAMK_GUESS_FIRST_ROW 1
#endif

template <class ML>
__device__ __forceinline__ void run_schedule(const GemmParams& p, unsigned char* smem) {
  using Acc = typename ML::Acc;
  constexpr bool GUESS = STREAMK_GUESS_FIRST_ROW && sizeof(typename ML::Elem) == 2 && ML::BM * ML::BN < 128 * 128;
  int guess[U_READS_COUNT + 1] = {};  // fields 0 .. U_READS_COUNT of row blockIdx.x
  if constexpr (GUESS) {
    const int* row = p.units + blockIdx.x * UNIT_FIELDS;
#pragma unroll
    for (int f = 0; f <= U_READS_COUNT; ++f) guess[f] = row[f];
  }
  __shared__ unsigned launch_epoch;
  const int tid = threadIdx.x;
  trace(-1, 0);
  pdl_trigger();  // the separate-reduce pass may start launching (it waits for this kernel's end)
#if STREAMK_PDL_WAIT_AT_START
  pdl_wait();
#endif
  if (p.table_version != TABLE_VERSION) __trap();
  // state is null when no unit signals, waits or arrives (the host checks): such a launch needs
  // no epoch, so it skips the epoch read and the end-of-launch count (~1 us, LOG.md v10)
  const bool epochs = p.state != nullptr;
  if (epochs) {
    if (tid == 0) launch_epoch = ld_volatile(p.state + STATE_EPOCH);
    __syncthreads();
  }
  const unsigned epoch = epochs ? launch_epoch : 0u;
  const int first = p.cta_offsets[blockIdx.x], last = p.cta_offsets[blockIdx.x + 1];
  // A PARTIAL unit's signal waits until the end of this CTA's next mainloop: by then its slot
  // stores have landed, so the release costs nothing, where signalling at once stalled the CTA
  // until 64 KB of stores drained (LOG.md v10). Pending signals go out before any wait, and a
  // mainloop never waits, so no wait can depend on a deferred signal: no new deadlock.
  int pending = -1;
  for (int u = first; u < last; ++u) {
    const int* row = p.units + u * UNIT_FIELDS;
    const bool guessed = GUESS && u == first && first == static_cast<int>(blockIdx.x);
    const auto field = [&](int f) { return guessed ? guess[f] : row[f]; };
    const int m0 = field(U_TILE_M) * ML::BM, n0 = field(U_TILE_N) * ML::BN;
    const int action = field(U_ACTION), slot = field(U_SLOT);
    const int reads = field(U_READS_OFFSET), nreads = field(U_READS_COUNT);
    const int k_begin = field(U_K_BEGIN), k_end = field(U_K_END);
    Acc acc[ML::ACC];
#pragma unroll
    for (int i = 0; i < ML::ACC; ++i) acc[i] = Acc(0);
    trace(u - first, 0);
    // Launched behind the pack pass (programmatic dependent launch): its copies are complete and
    // visible from here. The table, the epoch and this first row were read while it finished
    // (nothing before this kernel writes them: the pack pass was launched normally, behind every
    // earlier kernel); A, B, C, the workspace and the flags are touched only after.
    if (u == first) pdl_wait();
    ML::mainloop(p, m0, n0, k_begin, k_end, smem, acc);
    trace(u - first, 1);
    if (pending >= 0) {
      signal(p, pending, epoch);
      pending = -1;
    }

    // Each epilogue piece appears once (the unrolled loops are large): sum peers' slots, store
    // our own, signal, write or add to C, as the unit's action asks.
    bool sums = action == ACT_REDUCE || action == ACT_HANDOFF || action == ACT_FINISH;
    bool writes = action == ACT_WRITE || action == ACT_REDUCE || action == ACT_FINISH;
    if (action == ACT_ARRIVE) {
      store_slot<ML>(p, slot, acc, tid);
      if (arrive_last(p, row[U_TILE], nreads, epoch)) {  // the last arrival sums every slot in k order
        sums = writes = true;
#pragma unroll
        for (int i = 0; i < ML::ACC; ++i) acc[i] = Acc(0);
      }
    }
    if (sums) {
      wait_units(p, row[U_WAITS_OFFSET], row[U_WAITS_COUNT], epoch);
      for (int j = 0; j < nreads; ++j) add_slot<ML>(p, p.reads[reads + j], acc, tid);
    }
    if (action == ACT_PARTIAL || action == ACT_HANDOFF || action == ACT_DEFER) store_slot<ML>(p, slot, acc, tid);
    if (action == ACT_PARTIAL && u + 1 < last) {
      pending = u;
    } else if (action == ACT_PARTIAL || action == ACT_HANDOFF) {
      signal(p, u, epoch);
    }
    if (writes) write_c<ML>(p, m0, n0, acc, tid, smem);
    if (action == ACT_ATOMIC) atomic_c<ML>(p, m0, n0, acc, tid, smem);
    trace(u - first, 2);
  }
  if (epochs) {
    __syncthreads();
    finish_launch(p);
  }
}

// Separate-reduce pass, grid (split tiles, slices): block (b, r) sums slice r of split tile b's
// slots in k order and writes that part of C. A slice is a run of every thread's accumulator
// vectors, so it is one contiguous range of each slot (SlotVec) and maps to whole mma fragments
// of C. Why slices: one CTA per tile read its s slots of 64 KB at ~1.3 us each (LOG.md v10), so
// the pass cost grew with s on one SM; spread over gridDim.y blocks it shrinks by that factor.
// The host picks gridDim.y, a divisor of the tile's vectors per thread, with at most
// REDUCE_MAX_VECS vectors per block; the sums are the same adds in the same order (bitwise equal
// to one block per tile).
constexpr int REDUCE_MAX_VECS = 4;

template <class ML>
__device__ __forceinline__ void reduce_slice(const GemmParams& p) {
  using Acc = typename ML::Acc;
  using SV = SlotVec<ML>;
  constexpr int V = SV::V, MAXV = REDUCE_MAX_VECS;
  const int* item = p.items + blockIdx.x * ITEM_FIELDS;
  const int offset = item[I_READS_OFFSET], count = item[I_READS_COUNT];
  const int m0 = item[I_TILE_M] * ML::BM, n0 = item[I_TILE_N] * ML::BN;
  pdl_wait();  // launched behind the main kernel: every slot stored and visible from here (the
               // item table is the host's, read while that kernel finished)
  const int per = (ML::ACC / V) / gridDim.y, j0 = blockIdx.y * per, tid = threadIdx.x;
  Acc sum[MAXV][V], next[2][MAXV][V];
  const int rows = min(ML::BM, p.m - m0), cols = min(ML::BN, p.n - n0);
  const auto load = [&](int q, Acc (&v)[MAXV][V]) {  // vectors wholly outside the matrix: not read
    const Acc* s = slot_ptr<ML>(p, p.reads[offset + q]);
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
  int q = 1;
  for (; q + 1 < count; q += 2) {  // two slots' loads in flight before their adds
    load(q, next[0]);
    load(q + 1, next[1]);
    add(next[0]);
    add(next[1]);
  }
  if (q < count) {
    load(q, next[0]);
    add(next[0]);
  }
  const Acc alpha = static_cast<Acc>(p.alpha), beta = static_cast<Acc>(p.beta);
  Acc* C = static_cast<Acc*>(p.c) + static_cast<long long>(m0) * p.c_rs + static_cast<long long>(n0) * p.c_cs;
#pragma unroll
  for (int i = 0; i < MAXV; ++i) {
    if (i >= per) break;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      int r, c;
      ML::coord((j0 + i) * V + e, tid, r, c);
      if (r < rows && c < cols) {
        Acc* d = C + static_cast<long long>(r) * p.c_rs + static_cast<long long>(c) * p.c_cs;
        const Acc v = alpha * sum[i][e];
        *d = beta != Acc(0) ? v + beta * *d : v;
      }
    }
  }
}

// Atomic prologue: block b sets split tile b's C to beta*C (0 when beta == 0: C is not read).
template <class ML>
__device__ __forceinline__ void prescale_items(const GemmParams& p) {
  using Acc = typename ML::Acc;
  const int* item = p.items + blockIdx.x * ITEM_FIELDS;
  const int m0 = item[I_TILE_M] * ML::BM, n0 = item[I_TILE_N] * ML::BN;
  Acc* C = static_cast<Acc*>(p.c);
  const Acc beta = static_cast<Acc>(p.beta);
  for (int e = threadIdx.x; e < ML::BM * ML::BN; e += ML::THREADS) {
    const int r = m0 + e / ML::BN, c = n0 + e % ML::BN;
    if (r < p.m && c < p.n) {
      Acc* dst = C + r * p.c_rs + c * p.c_cs;
      *dst = beta == Acc(0) ? Acc(0) : beta * *dst;
    }
  }
}

}  // namespace streamk
