// pack.cuh: copy an operand of any strides into a row-major, zero-padded buffer whose rows are
// 16-byte aligned, so the mainloops can use 16-byte cp.async on unaligned shapes and on
// column-major inputs. Each thread writes one 16-byte chunk of the destination (coalesced);
// reads follow the source's strides (a transpose when the source is column-major).
// One launch packs A and B (PackPair; an operand with rows = 0 is skipped); grid-stride over
// their rows x (ld / chunk). Arch: any. T: unsigned short (FP16/BF16 bits) or unsigned long long
// (FP64 bits); the registry (streamk/gpu/kernel_registry.py) names one entry per element size.
#pragma once

#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

__device__ __forceinline__ void store16(unsigned short* out, const unsigned short (&v)[8]) {
  uint4 w;
  w.x = v[0] | (unsigned(v[1]) << 16);
  w.y = v[2] | (unsigned(v[3]) << 16);
  w.z = v[4] | (unsigned(v[5]) << 16);
  w.w = v[6] | (unsigned(v[7]) << 16);
  *reinterpret_cast<uint4*>(out) = w;
}

__device__ __forceinline__ void store16(unsigned long long* out, const unsigned long long (&v)[2]) {
  ulonglong2 w;
  w.x = v[0];
  w.y = v[1];
  *reinterpret_cast<ulonglong2*>(out) = w;
}

template <class T>
__device__ __forceinline__ long long chunks(const PackParams& p) {
  return p.rows * (p.ld / (16 / static_cast<long long>(sizeof(T))));
}

template <class T>
__device__ __forceinline__ void pack_chunk(const PackParams& p, long long q) {
  constexpr int CHUNK = 16 / sizeof(T);
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  const long long chunks_per_row = p.ld / CHUNK;
  const long long r = q / chunks_per_row, c0 = (q % chunks_per_row) * CHUNK;
  T v[CHUNK];
#pragma unroll
  for (int j = 0; j < CHUNK; ++j) v[j] = c0 + j < p.cols ? src[r * p.rs + (c0 + j) * p.cs] : T(0);
  store16(dst + r * p.ld + c0, v);
}

// Both operands in one launch (one kernel fewer per GEMM): chunks of A first, then of B.
template <class T>
__device__ __forceinline__ void pack_pair(const PackPair& pp) {
  pdl_trigger();  // the main kernel may start launching: it waits for this pass to finish
  const long long na = chunks<T>(pp.a), total = na + chunks<T>(pp.b);
  for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < total;
       q += (long long)gridDim.x * blockDim.x) {
    if (q < na) {
      pack_chunk<T>(pp.a, q);
    } else {
      pack_chunk<T>(pp.b, q - na);
    }
  }
}

template <class T>
__device__ __forceinline__ void pack_kernel(const PackPair& pp) {
  pack_pair<T>(pp);
}

}  // namespace streamk
