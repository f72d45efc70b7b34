// pack.cuh: copy an operand of any strides into a row-major, zero-padded buffer whose rows are
// 16-byte aligned, so the mainloops can use 16-byte cp.async (or TMA) on unaligned shapes and on
// column-major inputs. One launch packs A and B (PackPair; an operand with rows = 0 is skipped):
// its blocks walk one sequence of items over both, each item a whole block's work:
//   row-major source (unit column stride, rows of any alignment): PACK_THREADS destination chunks
//     of 16 bytes, a chunk per thread, read as aligned 16-byte blocks (pack_chunk_rows);
//   any other strides (a column-major W.t(), a strided view): a TILE_ROWS x TILE_COLS block of the
//     destination (one 128-byte line wide), read along the source's unit stride into shared memory
//     and written out as whole 16-byte chunks: coalesced both ways (a per-chunk gather read 8 rows
//     per chunk and ran at ~0.1 TB/s on a column-major source; LOG.md v32).
// Arch: any. T: unsigned short (FP16/BF16 bits) or unsigned long long (FP64 bits); the registry
// (streamk/gpu/catalogue/variants.py) names one entry per element size.
#pragma once

#include "ptx.cuh"
#include "schedule_table.cuh"

namespace streamk {

constexpr int PACK_THREADS = 256;  // threads per block: streamk/gpu/runtime/bind.py PACK_THREADS

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
__device__ __forceinline__ void load16(const T* in, T (&v)[16 / sizeof(T)]) {
  const uint4 w = *reinterpret_cast<const uint4*>(in);
  *reinterpret_cast<uint4*>(v) = w;
}

// One destination chunk from a row-major source (cs = 1) whose rows may be only element-aligned:
// the one or two aligned 16-byte blocks holding the chunk's valid elements, funnel-shifted into
// place, elements past the row zeroed: two vector loads per 16 bytes, not one per element. A block
// holding a valid element lies within that element's page, so the aligned loads never fault (the
// sm80 shifted loaders read rows the same way).
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

// One TILE_ROWS x TILE_COLS block of the destination from a source of any strides, through shared
// memory: read with consecutive threads on consecutive rows (the unit stride of a column-major
// source; 16-byte vectors where its columns are 16-byte aligned, else an element a load), written
// as whole 16-byte chunks of destination rows. TILE_COLS is a 128-byte line, which
// divides the destination's row length (decide/operands.py padded).
template <class T>
struct PackTile {
  static constexpr int CHUNK = 16 / sizeof(T), TILE_COLS = 128 / sizeof(T), TILE_ROWS = 64;
  static constexpr int LD = TILE_ROWS + (sizeof(T) == 2 ? 2 : 1);  // odd words apart: conflict-free columns
  static constexpr int READS = TILE_ROWS * TILE_COLS / PACK_THREADS, WRITES = TILE_ROWS * (TILE_COLS / CHUNK) / PACK_THREADS;
  static_assert(READS * PACK_THREADS == TILE_ROWS * TILE_COLS && WRITES * PACK_THREADS == TILE_ROWS * TILE_COLS / CHUNK,
                "whole tiles per block");

  static __device__ __forceinline__ long long count(const PackParams& p) {
    return (p.rows + TILE_ROWS - 1) / TILE_ROWS * (p.ld / TILE_COLS);
  }

  static __device__ __forceinline__ void pack(const PackParams& p, long long item, T (*tile)[LD]) {
    const long long per_row = p.ld / TILE_COLS;
    const long long r0 = item / per_row * TILE_ROWS, c0 = item % per_row * TILE_COLS;
    const T* src = static_cast<const T*>(p.src);
    const int tid = threadIdx.x;
    if (p.rs == 1 && p.cs % CHUNK == 0 && (reinterpret_cast<unsigned long long>(src) & 15) == 0) {
      // whole 16-byte vectors down each source column (CHUNK rows of the destination a load)
#pragma unroll
      for (int i = 0; i < TILE_ROWS * TILE_COLS / CHUNK / PACK_THREADS; ++i) {
        const int e = tid + i * PACK_THREADS, r = e % (TILE_ROWS / CHUNK) * CHUNK, c = e / (TILE_ROWS / CHUNK);
        T v[CHUNK];
        if (c0 + c >= p.cols || r0 + r >= p.rows) {
#pragma unroll
          for (int u = 0; u < CHUNK; ++u) v[u] = T(0);
        } else if (r0 + r + CHUNK <= p.rows) {
          load16(src + (r0 + r) + (c0 + c) * p.cs, v);
        } else {  // the operand's last rows
#pragma unroll
          for (int u = 0; u < CHUNK; ++u) v[u] = r0 + r + u < p.rows ? src[(r0 + r + u) + (c0 + c) * p.cs] : T(0);
        }
#pragma unroll
        for (int u = 0; u < CHUNK; ++u) tile[c][r + u] = v[u];
      }
    } else {
#pragma unroll 4
      for (int i = 0; i < READS; ++i) {  // 4 loads in flight a thread: registers for 8 blocks an SM
        const int e = tid + i * PACK_THREADS, r = e % TILE_ROWS, c = e / TILE_ROWS;
        tile[c][r] = r0 + r < p.rows && c0 + c < p.cols ? src[(r0 + r) * p.rs + (c0 + c) * p.cs] : T(0);
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < WRITES; ++i) {
      const int e = tid + i * PACK_THREADS, r = e / (TILE_COLS / CHUNK), j = e % (TILE_COLS / CHUNK) * CHUNK;
      if (r0 + r < p.rows) {
        T v[CHUNK];
#pragma unroll
        for (int u = 0; u < CHUNK; ++u) v[u] = tile[j + u][r];
        store16(static_cast<T*>(p.dst) + (r0 + r) * p.ld + c0 + j, v);
      }
    }
    __syncthreads();  // the next item refills the tile
  }
};

template <class T>
__device__ __forceinline__ long long pack_items(const PackParams& p) {
  if (p.cs != 1) return PackTile<T>::count(p);
  const long long chunks = p.rows * (p.ld / (16 / static_cast<long long>(sizeof(T))));
  return (chunks + PACK_THREADS - 1) / PACK_THREADS;
}

template <class T>
__device__ __forceinline__ void pack_item(const PackParams& p, long long item, T (*tile)[PackTile<T>::LD]) {
  if (p.cs != 1) {
    PackTile<T>::pack(p, item, tile);
    return;
  }
  constexpr int CHUNK = 16 / sizeof(T);
  const long long q = item * PACK_THREADS + threadIdx.x, per_row = p.ld / CHUNK;
  if (q >= p.rows * per_row) return;
  if (per_row < (1ll << 31) && q < (1ll << 32)) {  // 32-bit division wherever it fits
    const unsigned r = static_cast<unsigned>(q) / static_cast<unsigned>(per_row);
    pack_chunk_rows<T, unsigned>(p, r, (static_cast<unsigned>(q) - r * static_cast<unsigned>(per_row)) * CHUNK);
  } else {
    const long long r = q / per_row;
    pack_chunk_rows<T, long long>(p, r, (q - r * per_row) * CHUNK);
  }
}

// Both operands in one launch (one kernel fewer per GEMM): A's items, then B's, block-strided.
template <class T>
__device__ __forceinline__ void pack_kernel(const PackPair& pp) {
  __shared__ T tile[PackTile<T>::TILE_COLS][PackTile<T>::LD];
  pdl_trigger();  // the main kernel may start launching: it waits for this pass to finish
  const long long na = pack_items<T>(pp.a), total = na + pack_items<T>(pp.b);
  for (long long item = blockIdx.x; item < total; item += gridDim.x) {
    if (item < na) {
      pack_item<T>(pp.a, item, tile);
    } else {
      pack_item<T>(pp.b, item - na, tile);
    }
  }
}

}  // namespace streamk
