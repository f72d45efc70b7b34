// trace.cuh: the probe's phase trace, a documented debug switch: built only when the host sets
// STREAMK_TRACE=1 (streamk.gpu.build adds -DSTREAMK_TRACE; benchmarks/gpu_probe.py --trace). Per
// CTA, the %globaltimer (ns) at entry, then for each of its first TRACE_UNITS units when the
// mainloop starts, when it ends and when the unit's epilogue (fixup included) ends; the host reads
// the streamk_trace global. Other builds compile it to nothing.
#pragma once

namespace streamk {

#ifdef STREAMK_TRACE
constexpr int TRACE_CTAS = 8192, TRACE_UNITS = 5, TRACE_WORDS = 1 + 3 * TRACE_UNITS;
extern "C" {
__device__ unsigned long long streamk_trace[TRACE_CTAS * TRACE_WORDS];
}
template <class G>
__device__ __forceinline__ void trace(int unit, int event) {
  if (G::leader() && blockIdx.x < TRACE_CTAS && unit < TRACE_UNITS) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    streamk_trace[blockIdx.x * TRACE_WORDS + (unit < 0 ? 0 : 1 + 3 * unit + event)] = t;
  }
}
#else
template <class G>
__device__ __forceinline__ void trace(int, int) {}
#endif

}  // namespace streamk
