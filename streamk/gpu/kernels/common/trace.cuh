// trace.cuh: the probe's phase trace, a documented debug switch: built only when the host sets
// STREAMK_TRACE=1 (streamk.gpu.build adds -DSTREAMK_TRACE; benchmarks/gpu_probe.py --trace). Per
// CTA, the %globaltimer (ns) at entry, its SM (%smid), when its first unit's pdl_wait returned, then
// for each of its first TRACE_UNITS units when the mainloop starts, when it ends and when the unit's
// epilogue (fixup included) ends; the host reads the streamk_trace global. Other builds compile it
// to nothing.
#pragma once

namespace streamk {

#ifdef STREAMK_TRACE
constexpr int TRACE_CTAS = 8192, TRACE_UNITS = 5, TRACE_HEAD = 3, TRACE_WORDS = TRACE_HEAD + 3 * TRACE_UNITS;
extern "C" {
__device__ unsigned long long streamk_trace[TRACE_CTAS * TRACE_WORDS];
}
// unit -1: event 0 the entry (the SM's id goes beside it), event 2 the return of the first pdl_wait
template <class G>
__device__ __forceinline__ void trace(int unit, int event) {
  if (G::leader() && blockIdx.x < TRACE_CTAS && unit < TRACE_UNITS) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    unsigned long long* row = streamk_trace + blockIdx.x * TRACE_WORDS;
    row[unit < 0 ? event : TRACE_HEAD + 3 * unit + event] = t;
    if (unit < 0 && event == 0) {
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      row[1] = sm;
    }
  }
}
#else
template <class G>
__device__ __forceinline__ void trace(int, int) {}
#endif

}  // namespace streamk
