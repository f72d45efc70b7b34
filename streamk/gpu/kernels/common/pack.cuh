// pack.cuh: copy an operand of any strides into a row-major, zero-padded buffer whose rows are
// 16-byte aligned, so the mainloops can use 16-byte cp.async on unaligned shapes and on
// column-major inputs. Each thread writes one 16-byte chunk of the destination (coalesced); it
// reads a row-major source by aligned 16-byte blocks, any other by elements (a transpose).
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

// One destination chunk from a source of any strides: an element at a time (column-major sources,
// whose chunk gathers from CHUNK rows).
template <class T, class Index>
__device__ __forceinline__ void pack_chunk_gather(const PackParams& p, Index r, Index c0) {
  constexpr int CHUNK = 16 / sizeof(T);
  const T* src = static_cast<const T*>(p.src);
  T v[CHUNK];
#pragma unroll
  for (int j = 0; j < CHUNK; ++j) v[j] = c0 + j < p.cols ? src[r * p.rs + (c0 + j) * p.cs] : T(0);
  store16(static_cast<T*>(p.dst) + r * p.ld + c0, v);
}

// One destination chunk from a row-major source (cs = 1) whose rows may be only element-aligned:
// the one or two aligned 16-byte blocks holding the chunk's valid elements, funnel-shifted into
// place, elements past the row zeroed. Two vector loads per 16 bytes where the gather issues one
// load per element. A block holding a valid element lies within that element's page, so the
// aligned loads never fault (the sm80 shifted loaders read rows the same way).
template <class T, class Index>
__device__ __forceinline__ void pack_chunk_rows(const PackParams& p, Index r, Index c0) {
  constexpr int CHUNK = 16 / sizeof(T);
  uint4* out = reinterpret_cast<uint4*>(static_cast<T*>(p.dst) + r * p.ld + c0);
  const long long left = p.cols - static_cast<long long>(c0);
  if (left <= 0) {  // the row's padding to whole lines: nothing to read
    *out = make_uint4(0, 0, 0, 0);
    return;
  }
  const unsigned valid = static_cast<unsigned>(left < CHUNK ? left : CHUNK) * sizeof(T);  // bytes
  const char* first = reinterpret_cast<const char*>(static_cast<const T*>(p.src) + r * p.rs + c0);
  const unsigned shift = static_cast<unsigned>(reinterpret_cast<unsigned long long>(first) & 15);
  const uint4* block = reinterpret_cast<const uint4*>(first - shift);
  const uint4 lo = block[0];
  const uint4 hi = shift + valid > 16 ? block[1] : make_uint4(0, 0, 0, 0);
  unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  // shift right by `shift` bytes (a multiple of sizeof(T)): 8, then 4, then 2 bytes, constant indices only
  if (shift & 8) {
#pragma unroll
    for (int i = 0; i < 6; ++i) w[i] = w[i + 2];
  }
  if (shift & 4) {
#pragma unroll
    for (int i = 0; i < 5; ++i) w[i] = w[i + 1];
  }
  if (shift & 2) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = __funnelshift_r(w[i], w[i + 1], 16);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // zero the bytes past the row's last element
    const unsigned at = 4 * i;
    w[i] = at >= valid ? 0u : at + 2 == valid ? (w[i] & 0xffffu) : w[i];
  }
  *out = make_uint4(w[0], w[1], w[2], w[3]);
}

template <class T>
__device__ __forceinline__ long long chunks(const PackParams& p) {
  return p.rows * (p.ld / (16 / static_cast<long long>(sizeof(T))));
}

// Grid-stride over one operand's chunks; Index is 32-bit wherever the chunk count fits (a 64-bit
// division per chunk costs more than the copy's loads).
template <class T, class Index>
__device__ __forceinline__ void pack_operand(const PackParams& p, long long first, long long stride, long long count) {
  constexpr int CHUNK = 16 / sizeof(T);
  const Index per_row = static_cast<Index>(p.ld / CHUNK);
  const bool rows = p.cs == 1;
  for (Index q = static_cast<Index>(first); q < static_cast<Index>(count); q += static_cast<Index>(stride)) {
    const Index r = q / per_row, c0 = (q - r * per_row) * CHUNK;
    if (rows) {
      pack_chunk_rows<T, Index>(p, r, c0);
    } else {
      pack_chunk_gather<T, Index>(p, r, c0);
    }
  }
}

template <class T>
__device__ __forceinline__ void pack_one(const PackParams& p, long long first, long long stride) {
  const long long count = chunks<T>(p);
  if (count + stride < (1ll << 31)) {
    pack_operand<T, unsigned>(p, first, stride, count);
  } else {
    pack_operand<T, long long>(p, first, stride, count);
  }
}

// Both operands in one launch (one kernel fewer per GEMM): chunks of A first, then of B.
template <class T>
__device__ __forceinline__ void pack_pair(const PackPair& pp) {
  pdl_trigger();  // the main kernel may start launching: it waits for this pass to finish
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long na = chunks<T>(pp.a);
  pack_one<T>(pp.a, thread, stride);
  long long q = thread;  // B's chunks continue the grid-stride walk where A's ended: one index space
  if (q < na) q += (na - q + stride - 1) / stride * stride;
  pack_one<T>(pp.b, q - na, stride);
}

template <class T>
__device__ __forceinline__ void pack_kernel(const PackPair& pp) {
  pack_pair<T>(pp);
}

}  // namespace streamk
