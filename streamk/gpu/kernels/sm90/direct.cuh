// direct.cuh (sm90): the producer warp group's loads of an operand TMA cannot read, a row-major
// FP16/BF16 matrix whose base or row stride is only 2-byte aligned (odd k or n, views at odd
// element offsets), into the stage exactly as TMA's 128-byte swizzle would have laid it out, so
// the consumers' wgmma reads it unchanged (tma_wgmma.cuh, LOAD_BYTES = 2).
//
// A stage's operand is 128 "box rows" of 64 elements (128 bytes): A's box is 128 rows of m by 64
// k; B's two boxes are 64 rows of k by 64 n each, box 1 after box 0 (B_BOX_BYTES = 64 rows x 128
// B), so box row rho of either lies at rho x 128 bytes and its 16-byte chunk j at chunk j ^ (rho
// mod 8). Each of the 128 producer threads moves DIRECT_CHUNKS chunks: chunk j = tid mod 8 of box
// rows tid / 8 + 16 i. A chunk's 8 elements start `shift` bytes into an aligned 16-byte block of
// global memory; the thread reads that block and, where the elements run past it, the next one
// (ld.global.nc through L1: the next block is the neighbouring thread's first), funnel-shifts the
// 32 bytes into place, zeroes elements outside the matrix (TMA's out-of-bounds zeros: k's tail
// must be 0, not the next row's elements, which may be NaN), and stores the chunk.
// Writes through the generic proxy are made visible to wgmma (async proxy) by each writer's
// fence.proxy.async before its arrival on the stage's full barrier.
// The loads of the next operand box are issued before this one's stores (two register sets,
// Staged), so a global round trip overlaps the shifts, the stores and the wait for a free stage.
// Arch: sm_90a.
#pragma once

#include "config.cuh"

namespace streamk {
namespace sm90 {

constexpr int DIRECT_ROWS = 128;                                   // box rows of one operand's stage
constexpr int CHUNKS_PER_ROW = SWIZZLE_BYTES / 16;                 // 8 chunks of 16 bytes
constexpr int DIRECT_THREADS = WG_THREADS;                         // the producer warp group
constexpr int DIRECT_ROW_STEP = DIRECT_THREADS / CHUNKS_PER_ROW;   // 16 box rows between a thread's chunks
constexpr int DIRECT_CHUNKS = DIRECT_ROWS / DIRECT_ROW_STEP;       // 8 chunks per thread per box
static_assert(DIRECT_ROWS * SWIZZLE_BYTES == A_STAGE_BYTES, "A's stage is 128 box rows");
static_assert(BK * SWIZZLE_BYTES == B_BOX_BYTES, "a B box is 64 box rows");

// A row-major matrix as the producer reads it in place: base, row stride in bytes, extents.
struct DirectSource {
  const unsigned char* base;
  long long row_bytes;
  int rows, cols;
};

// One box's chunks in flight: the aligned block holding each chunk's first element, and the next.
struct Staged {
  uint4 lo[DIRECT_CHUNKS];
  uint4 hi[DIRECT_CHUNKS];
};

__device__ __forceinline__ uint4 u4(unsigned x, unsigned y, unsigned z, unsigned w) {
  uint4 v;
  v.x = x;
  v.y = y;
  v.z = z;
  v.w = w;
  return v;
}

__device__ __forceinline__ uint4 ldg16(const unsigned char* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void sts16(unsigned addr, const uint4& v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Make this thread's shared-memory writes visible to the async proxy (wgmma) before it signals.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ unsigned shift_right(unsigned lo, unsigned hi, unsigned bits) {
  unsigned d;
  asm("shf.r.wrap.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(lo), "r"(hi), "r"(bits));
  return d;
}

// Where chunk i of thread `tid` lies: its box row, and the matrix element of its first element.
// A's box (B = false): rows row0 + rho, columns col0 + 8j; B's two boxes: rows row0 + rho mod 64,
// columns col0 + 64 (rho / 64) + 8j.
template <bool B>
struct ChunkAt {
  int rho, row, col;
  __device__ __forceinline__ ChunkAt(int tid, int i, int row0, int col0) {
    const int j = tid % CHUNKS_PER_ROW;
    rho = tid / CHUNKS_PER_ROW + DIRECT_ROW_STEP * i;
    if constexpr (B) {
      row = row0 + rho % BK;
      col = col0 + (rho / BK) * BOX_INNER + 8 * j;
    } else {
      row = row0 + rho;
      col = col0 + 8 * j;
    }
  }
  // elements of the chunk inside the matrix (0..8)
  __device__ __forceinline__ int valid(const DirectSource& s) const {
    const int left = s.cols - col;
    return row < s.rows ? (left < 0 ? 0 : left > 8 ? 8 : left) : 0;
  }
  __device__ __forceinline__ unsigned long long address(const DirectSource& s) const {
    return reinterpret_cast<unsigned long long>(s.base) + row * s.row_bytes + 2ll * col;
  }
};

template <bool B>
__device__ __forceinline__ void direct_load(const DirectSource& s, int row0, int col0, int tid, Staged& st) {
  const uint4 zero = u4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < DIRECT_CHUNKS; ++i) {
    const ChunkAt<B> at(tid, i, row0, col0);
    const int nv = at.valid(s);
    const unsigned long long addr = at.address(s);
    const int shift = static_cast<int>(addr & 15);
    const unsigned char* block = reinterpret_cast<const unsigned char*>(addr & ~15ull);
    st.lo[i] = nv > 0 ? ldg16(block) : zero;
    st.hi[i] = shift != 0 && 2 * nv > 16 - shift ? ldg16(block + 16) : zero;  // elements past the block
  }
}

// The 16 bytes at byte `shift` (even, 0..14) of lo:hi, elements from `nv` on zeroed.
__device__ __forceinline__ uint4 shifted(const uint4& lo, const uint4& hi, int shift, int nv) {
  const unsigned v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int words = shift / 4;
  const unsigned bits = 8u * (shift % 4);
  unsigned u[6], w[5];
#pragma unroll
  for (int i = 0; i < 6; ++i) u[i] = words & 2 ? v[i + 2] : v[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) w[i] = words & 1 ? u[i + 1] : u[i];
  unsigned out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned keep = nv >= 2 * i + 2 ? 0xFFFFFFFFu : nv == 2 * i + 1 ? 0xFFFFu : 0u;
    out[i] = shift_right(w[i], w[i + 1], bits) & keep;
  }
  return u4(out[0], out[1], out[2], out[3]);
}

template <bool B>
__device__ __forceinline__ void direct_store(const DirectSource& s, int row0, int col0, int tid, unsigned box,
                                             const Staged& st) {
#pragma unroll
  for (int i = 0; i < DIRECT_CHUNKS; ++i) {
    const ChunkAt<B> at(tid, i, row0, col0);
    const int shift = static_cast<int>(at.address(s) & 15);
    const int chunk = (tid % CHUNKS_PER_ROW) ^ (at.rho % 8);  // the 128-byte swizzle
    sts16(box + at.rho * SWIZZLE_BYTES + chunk * 16, shifted(st.lo[i], st.hi[i], shift, at.valid(s)));
  }
}

}  // namespace sm90
}  // namespace streamk
