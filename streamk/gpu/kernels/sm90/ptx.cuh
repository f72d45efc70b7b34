// ptx.cuh (sm90): the Hopper instructions of the TMA + wgmma mainloop as inline asm (no CUDA
// header, like common/ptx.cuh): mbarriers, TMA bulk tensor loads (multicast too), cluster barriers, wgmma
// and register reallocation.
// Arch: sm_90a (wgmma and setmaxnreg do not exist on plain sm_90).
#pragma once

namespace streamk {
namespace sm90 {

// ---- mbarriers (shared-space byte addresses) ----
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// Make the initialized barriers visible to the async proxy (TMA) before any copy uses them.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The producer's arrival: this phase also waits for `bytes` of TMA transactions.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Spin until the phase of parity `parity` has completed (a fresh barrier counts the phase before
// its first, parity 1, as complete: the producer's first wait on an empty slot returns at once).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- TMA ----
__device__ __forceinline__ void tma_prefetch(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// Box at (c0 inner, c1 outer) of the 2-D tensor `map` into shared `dst`, completing on `bar`;
// elements outside the tensor arrive as zeros and count towards the transaction bytes.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* map, unsigned bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// The same box delivered to the same shared offset of every CTA of the cluster in `mask` (bit r:
// cluster rank r), completing on each one's barrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const void* map, unsigned bar, int c0, int c1,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}

// The box at (c0 inner, c1 outer) of the 2-D tensor `map` written from shared `src` (the async
// proxy reads it: the writers' fence.proxy.async comes first), in this thread's current bulk group.
// Elements past the tensor's edge are not written.
__device__ __forceinline__ void tma_store_2d(const void* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until this thread's bulk groups have read their shared sources (the staging may be rewritten, or freed).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// Until all but this thread's newest bulk group have read their shared sources (double-buffered stores).
__device__ __forceinline__ void bulk_wait_read_all_but_one() {
  asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
}
// Shared-memory writes of this thread (generic proxy) visible to the async proxy's later reads.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- clusters ----
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster (all must call it), after mbar_init_fence: the barriers
// each initialized are visible to the other's copies and arrivals. The arrival is relaxed (the init
// fence orders the barriers; a release here is a GPU-wide MEMBAR).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}

// Arrive on the barrier at shared offset `bar` of cluster CTA `rank` (another CTA's, or this one's)
// with the default .release.cta semantics, as NVIDIA CUTLASS's ClusterBarrier::arrive(cta_id)
// (include/cutlass/arch/barrier.h): the stage's reads are the wgmma's, complete at wait_group, and
// .release.cluster would put a GPU-wide MEMBAR before every stage's arrival.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar), "r"(rank)
      : "memory");
}

// ---- wgmma ----
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// A shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address, leading
// and stride byte offsets (each >> 4 in 14 bits), swizzle mode in bits 62-63 (1: 128-byte).
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(lbo >> 4) << 16) | (static_cast<unsigned long long>(sbo >> 4) << 32) |
         (1ull << 62);
}

// D(64x128, FP32) += A(64x16) * B(16x128); A K-major (imm-trans-a 0) or M-major (1), B K-major
// (imm-trans-b 0) or N-major (1): TA and TB, each "0" or "1"; scale_d 0: D = A*B.
// Accumulator d[i] of thread t of the warp group: row (t/32)*16 + (t%32)/4 + 8*((i/2)%2), column
// 8*(i/4) + 2*(t%4) + i%2 (PTX ISA, wgmma .m64nNk16 D fragment).
// One asm statement per input type (the type is part of the instruction's name, and asm takes
// a string literal): WGMMA_M64N128K16(f16) and (bf16), used by wgmma_k16 below and undefined after it.
#define WGMMA_M64N128K16(TYPE, TA, TB)                                                                 \
  asm volatile(                                                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                              \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TYPE "." #TYPE " "                          \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, " TA ", " TB ";\n}\n"                                               \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                                                                                   \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// D(64x256, FP32) += A(64x16) * B(16x256), layouts as above: the same instruction on twice the
// columns (the fragment formula above with i up to 127: columns 0-127 are d[0..63], 128-255
// d[64..127]). Its 128 outputs are spelled through WGMMA_D8 / WGMMA_D32 below.
#define WGMMA_D8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WGMMA_D32(i) WGMMA_D8(i), WGMMA_D8(i + 8), WGMMA_D8(i + 16), WGMMA_D8(i + 24)
#define WGMMA_M64N256K16(TYPE, TA, TB)                                                                 \
  asm volatile(                                                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                             \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." #TYPE "." #TYPE " {"                        \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
      "}, %128, %129, p, 1, 1, " TA ", " TB ";\n}\n"                                                     \
      : WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64), WGMMA_D32(96)                               \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// The same instruction on 64 and 192 columns (the fragment formula above with i up to 31 / 95).
#define WGMMA_M64N64K16(TYPE, TA, TB)                                                                 \
  asm volatile(                                                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                             \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." #TYPE "." #TYPE " {"                        \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
      "}, %32, %33, p, 1, 1, " TA ", " TB ";\n}\n"                                                     \
      : WGMMA_D32(0)                               \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))
#define WGMMA_M64N192K16(TYPE, TA, TB)                                                                 \
  asm volatile(                                                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"                                             \
      "wgmma.mma_async.sync.aligned.m64n192k16.f32." #TYPE "." #TYPE " {"                        \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95" \
      "}, %96, %97, p, 1, 1, " TA ", " TB ";\n}\n"                                                     \
      : WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64)                               \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// The instruction of one shape and type for each operand layout: A M-major (imm-trans-a 1) or
// K-major, B K-major (imm-trans-b 0) or N-major.
#define WGMMA_LAYOUTS(SHAPE, TYPE)         \
  if constexpr (A_MN && B_K) {             \
    SHAPE(TYPE, "1", "0");                 \
  } else if constexpr (A_MN) {             \
    SHAPE(TYPE, "1", "1");                 \
  } else if constexpr (B_K) {              \
    SHAPE(TYPE, "0", "0");                 \
  } else {                                 \
    SHAPE(TYPE, "0", "1");                 \
  }

// One k16 step of a consumer warp group's 64 x BN accumulators (BN 64, 128, 192 or 256), D += A * B, with A
// M-major where A_MN and B K-major where B_K (the layouts TMA wrote them in shared memory).
template <int BN, bool BF16, bool A_MN, bool B_K>
__device__ __forceinline__ void wgmma_k16(float (&d)[BN / 2], unsigned long long desc_a, unsigned long long desc_b) {
  const int scale_d = 1;
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma n64, n128, n192 or n256");
  if constexpr (BN == 64 && BF16) {
    WGMMA_LAYOUTS(WGMMA_M64N64K16, bf16)
  } else if constexpr (BN == 64) {
    WGMMA_LAYOUTS(WGMMA_M64N64K16, f16)
  } else if constexpr (BN == 192 && BF16) {
    WGMMA_LAYOUTS(WGMMA_M64N192K16, bf16)
  } else if constexpr (BN == 192) {
    WGMMA_LAYOUTS(WGMMA_M64N192K16, f16)
  } else if constexpr (BN == 128 && BF16) {
    WGMMA_LAYOUTS(WGMMA_M64N128K16, bf16)
  } else if constexpr (BN == 128) {
    WGMMA_LAYOUTS(WGMMA_M64N128K16, f16)
  } else if constexpr (BF16) {
    WGMMA_LAYOUTS(WGMMA_M64N256K16, bf16)
  } else {
    WGMMA_LAYOUTS(WGMMA_M64N256K16, f16)
  }
}
// The m64n128k16 instruction on half H (rows 64 H ..) of a ping-pong warp group's 128 x 128 tile, whose
// 128 accumulators interleave the halves by 8 columns: d[8 q + 4 H + j] is element 4 q + j of half H's
// fragment (the formula above), so each 32-column slice of the tile is 32 consecutive accumulators
// (tma_wgmma.cuh TmaWgmma::coord, common/epilogue.cuh ColumnSlice).
#define WGMMA_H4(q) "+f"(d[8 * (q) + 4 * H]), "+f"(d[8 * (q) + 4 * H + 1]), "+f"(d[8 * (q) + 4 * H + 2]), "+f"(d[8 * (q) + 4 * H + 3])
#define WGMMA_H16(q) WGMMA_H4(q), WGMMA_H4(q + 1), WGMMA_H4(q + 2), WGMMA_H4(q + 3)
#define WGMMA_M64N128K16_HALF(TYPE, TA, TB)                                                            \
  asm volatile(                                                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                              \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TYPE "." #TYPE " "                          \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, " TA ", " TB ";\n}\n" \
      : WGMMA_H16(0), WGMMA_H16(4), WGMMA_H16(8), WGMMA_H16(12)                                   \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

template <int H, bool BF16, bool A_MN, bool B_K>
__device__ __forceinline__ void wgmma_k16_half(float (&d)[128], unsigned long long desc_a, unsigned long long desc_b) {
  const int scale_d = 1;
  static_assert(H == 0 || H == 1, "two m64 halves");
  if constexpr (BF16) {
    WGMMA_LAYOUTS(WGMMA_M64N128K16_HALF, bf16)
  } else {
    WGMMA_LAYOUTS(WGMMA_M64N128K16_HALF, f16)
  }
}
#undef WGMMA_M64N128K16_HALF
#undef WGMMA_H16
#undef WGMMA_H4

#undef WGMMA_LAYOUTS
#undef WGMMA_M64N128K16
#undef WGMMA_M64N256K16
#undef WGMMA_M64N64K16
#undef WGMMA_M64N192K16
#undef WGMMA_D32
#undef WGMMA_D8

// ---- register reallocation between warp groups (needs __launch_bounds__(threads, 1)) ----
template <int REGS>
__device__ __forceinline__ void regs_down() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void regs_up() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

}  // namespace sm90
}  // namespace streamk
