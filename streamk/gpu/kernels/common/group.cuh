// group.cuh: the thread groups that the outer loop, the fixup primitives and the epilogue
// synchronize. A group is whole warps with a hardware barrier of its own (id, thread count) and a
// leader thread. The sm80 mainloops, where every thread does everything, run the whole block as
// one group (barrier 0: __syncthreads, leader thread 0). A warp-specialized kernel gives each role
// its own group on a named barrier, so a role's waits and syncs never stall the other role.
#pragma once

namespace streamk {

// A one-way handoff between two groups on a named barrier (THREADS: both groups' threads): the
// sender's threads arrive and go on, the receiver's wait; memory writes of the sender before
// `arrive` are visible to the receiver after `wait` (barriers order shared and global accesses
// at CTA scope). Each use of a barrier must complete before the next one starts. HandoffOn takes
// the barrier at run time (a body several groups share picks its own); Handoff, below, names it.
template <int THREADS>
struct HandoffOn {
  static_assert(THREADS % 32 == 0, "whole warps");
  static __device__ __forceinline__ void arrive(int barrier) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(barrier), "n"(THREADS) : "memory");
  }
  static __device__ __forceinline__ void wait(int barrier) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(barrier), "n"(THREADS) : "memory");
  }
};

// Threads FIRST .. FIRST + THREADS - 1 of the block on barrier BARRIER. BARRIER 0 is the whole
// block's (FIRST 0, THREADS the block size), synced by __syncthreads as every sm80 kernel did.
template <int BARRIER, int FIRST, int THREADS_>
struct ThreadGroup {
  static constexpr int THREADS = THREADS_;
  static_assert(BARRIER >= 0 && BARRIER < 16, "a CTA has 16 hardware barriers");
  static_assert(FIRST % 32 == 0 && THREADS % 32 == 0 && THREADS > 0, "whole warps");
  static_assert(BARRIER != 0 || FIRST == 0, "barrier 0 is the whole block's");

  static __device__ __forceinline__ void sync() {
    if constexpr (BARRIER == 0) {
      __syncthreads();
    } else {
      asm volatile("bar.sync %0, %1;\n" ::"n"(BARRIER), "n"(THREADS) : "memory");
    }
  }
  // this thread's index in the group (the accumulator fragments' thread index)
  static __device__ __forceinline__ int rank() { return static_cast<int>(threadIdx.x) - FIRST; }
  static __device__ __forceinline__ bool leader() { return threadIdx.x == FIRST; }
  static __device__ __forceinline__ bool contains() { return threadIdx.x - FIRST < THREADS; }
  // which of the block's groups of this type the thread is in (shared words kept per group)
  static __device__ __forceinline__ int slot() { return 0; }
};

// Whichever of the block's consecutive THREADS-thread groups from thread FIRST on holds this thread:
// group g is threads FIRST + g * THREADS .. on barrier BARRIER + g, so several groups run one body
// (one copy of the code), each syncing on its own barrier (the ping-pong consumers, sm90/tma_wgmma.cuh).
template <int BARRIER, int FIRST, int THREADS_>
struct GroupOfThread {
  static constexpr int THREADS = THREADS_;
  static_assert(BARRIER >= 1 && FIRST % 32 == 0 && THREADS % 32 == 0, "named barriers, whole warps");
  static __device__ __forceinline__ int slot() { return (static_cast<int>(threadIdx.x) - FIRST) / THREADS; }
  static __device__ __forceinline__ void sync() { HandoffOn<THREADS>::wait(BARRIER + slot()); }
  static __device__ __forceinline__ int rank() { return (static_cast<int>(threadIdx.x) - FIRST) % THREADS; }
  static __device__ __forceinline__ bool leader() { return rank() == 0; }
};

template <int THREADS>
using BlockGroup = ThreadGroup<0, 0, THREADS>;

// HandoffOn on named barrier BARRIER.
template <int BARRIER, int THREADS>
struct Handoff {
  static_assert(BARRIER >= 1 && BARRIER < 16, "a named barrier");
  static __device__ __forceinline__ void arrive() { HandoffOn<THREADS>::arrive(BARRIER); }
  static __device__ __forceinline__ void wait() { HandoffOn<THREADS>::wait(BARRIER); }
};

}  // namespace streamk
