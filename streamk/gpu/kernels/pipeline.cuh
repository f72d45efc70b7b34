// pipeline.cuh: the multi-stage cp.async software pipeline both sm80 mainloops share.
// ML provides Elem, STAGES, A_STAGE, B_STAGE (elements per stage), load_stage and compute_stage.
// Iteration `it` waits for stage it % STAGES, then refills the stage computed in it - 1 (every
// thread has passed the barrier after finishing it) with iteration it + STAGES - 1.
#pragma once

#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

template <class ML>
__device__ __forceinline__ void pipelined_mainloop(const GemmParams& p, int m0, int n0, int k_begin, int k_end,
                                                   unsigned char* smem, typename ML::Acc (&acc)[ML::ACC]) {
  using Elem = typename ML::Elem;
  const int tid = threadIdx.x;
  Elem* sA = reinterpret_cast<Elem*>(smem);
  Elem* sB = sA + ML::STAGES * ML::A_STAGE;
  const int iters = k_end - k_begin;
#pragma unroll
  for (int s = 0; s < ML::STAGES - 1; ++s) {
    if (s < iters) ML::load_stage(p, m0, n0, k_begin + s, sA + s * ML::A_STAGE, sB + s * ML::B_STAGE, tid);
    cp_async_commit();
  }
  for (int it = 0; it < iters; ++it) {
    cp_async_wait<ML::STAGES - 2>();
    __syncthreads();
    const int next = it + ML::STAGES - 1;
    if (next < iters) {
      const int s = next % ML::STAGES;
      ML::load_stage(p, m0, n0, k_begin + next, sA + s * ML::A_STAGE, sB + s * ML::B_STAGE, tid);
    }
    cp_async_commit();
    const int s = it % ML::STAGES;
    ML::compute_stage(sA + s * ML::A_STAGE, sB + s * ML::B_STAGE, acc, tid);
  }
  cp_async_wait<0>();
  __syncthreads();  // the next unit may refill every stage
}

}  // namespace streamk
