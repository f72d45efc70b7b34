// pipeline.cuh: the multi-stage cp.async software pipeline both sm80 mainloops share.
// ML provides Elem, Frag, STAGES, KSTEPS (mma k-steps per iteration), A_STAGE, B_STAGE (elements
// per stage), load_stage (cp.async one iteration), load_frag (one k-step's fragments from shared
// memory) and mma_frag. Fragments are double-buffered: k-step kk+1's (or the next stage's first)
// are loaded before kk's mmas issue. Iteration `it` refills the stage iteration it-1 used with
// iteration it+STAGES-1; the wait + barrier before the last k-step of `it` makes stage it+1
// visible and retires every read of stage it-1 (the CUTLASS sm80 multistage order).
#pragma once

#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

template <class ML>
__device__ __forceinline__ void pipelined_mainloop(const GemmParams& p, int m0, int n0, int k_begin, int k_end,
                                                   unsigned char* smem, typename ML::Acc (&acc)[ML::ACC]) {
  using Elem = typename ML::Elem;
  static_assert(ML::KSTEPS % 2 == 0, "fragment double buffer alternates within an iteration");
  const int tid = threadIdx.x;
  Elem* sA = reinterpret_cast<Elem*>(smem);
  Elem* sB = sA + ML::STAGES * ML::A_STAGE;
  const int iters = k_end - k_begin;
#pragma unroll
  for (int s = 0; s < ML::STAGES - 1; ++s) {
    if (s < iters) ML::load_stage(p, m0, n0, k_begin + s, sA + s * ML::A_STAGE, sB + s * ML::B_STAGE, tid);
    cp_async_commit();
  }
  cp_async_wait<ML::STAGES - 2>();
  __syncthreads();
  typename ML::Frag frag[2];
  ML::load_frag(sA, sB, 0, frag[0], tid);
  for (int it = 0; it < iters; ++it) {
    const int s = it % ML::STAGES;
#pragma unroll
    for (int kk = 0; kk < ML::KSTEPS; ++kk) {
      if (kk == ML::KSTEPS - 1) {
        // next stage landed for every thread; nobody reads stage `s - 1` any more
        cp_async_wait<ML::STAGES - 2>();
        __syncthreads();
        const int s1 = (it + 1) % ML::STAGES;
        ML::load_frag(sA + s1 * ML::A_STAGE, sB + s1 * ML::B_STAGE, 0, frag[(kk + 1) % 2], tid);
      } else {
        ML::load_frag(sA + s * ML::A_STAGE, sB + s * ML::B_STAGE, kk + 1, frag[(kk + 1) % 2], tid);
      }
      if (kk == 0) {
        const int next = it + ML::STAGES - 1;
        if (next < iters) {
          const int sn = next % ML::STAGES;
          ML::load_stage(p, m0, n0, k_begin + next, sA + sn * ML::A_STAGE, sB + sn * ML::B_STAGE, tid);
        }
        cp_async_commit();
      }
      ML::mma_frag(frag[kk % 2], acc);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the next unit may refill every stage
}

}  // namespace streamk
