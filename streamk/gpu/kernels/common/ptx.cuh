// ptx.cuh: the few PTX instructions the mainloops and the fixup use, as inline asm, so the
// kernels need no CUDA header at all (NVRTC of any version compiles them with no include path).
#pragma once

namespace streamk {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return static_cast<unsigned>(a);
}

// 16-byte global->shared copy to a shared-space byte address; src_bytes = 0 zero-fills
// (out-of-range rows, columns or k).
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

// The same through L1 (cp.async.ca), for operands whose lines a later stage reads again.
__device__ __forceinline__ void cp_async16_ca(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

// 8- or 4-byte global->shared copy (cp.async.ca: .cg takes 16 bytes only) for operands whose rows
// are not 16-byte aligned; src_bytes = 0 zero-fills.
template <int BYTES>
__device__ __forceinline__ void cp_async_narrow(unsigned dst, const void* src, int src_bytes) {
  static_assert(BYTES == 8 || BYTES == 4, "cp.async copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(BYTES), "r"(src_bytes));
}

// A copy of BYTES (16, 8 or 4): the 16-byte one stays the L2-only .cg copy.
template <int BYTES>
__device__ __forceinline__ void cp_async(unsigned dst, const void* src, int src_bytes) {
  if constexpr (BYTES == 16) {
    cp_async16(dst, src, src_bytes);
  } else {
    cp_async_narrow<BYTES>(dst, src, src_bytes);
  }
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Shared-memory reads take shared-space byte addresses (u32), so the per-k-step offsets fold
// into the instructions' immediates.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b on the tensor cores, m16n8k16, FP16 or BF16 inputs (raw bits), FP32 accumulators:
// the fragment layouts of the PTX ISA's mma.m16n8k16 (row-major A, column-major B).
template <bool BF16>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if (BF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ double lds_f64(unsigned addr) {
  double v;
  asm volatile("ld.shared.f64 %0, [%1];\n" : "=d"(v) : "r"(addr));
  return v;
}

// Flags: a signal stores the launch epoch with release semantics at GPU scope; a wait spins
// until the flag equals the epoch, with acquire. Stale flags hold older epochs.
__device__ __forceinline__ void flag_release(unsigned* flag, unsigned epoch) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(epoch) : "memory");
}

// GPU-scope acquire-release fence (lighter than __threadfence's fence.sc: no L1 invalidation).
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }

__device__ __forceinline__ unsigned flag_acquire(const unsigned* flag) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// L2-only loads of workspace slots written by other CTAs in this launch (never a stale L1 line).
__device__ __forceinline__ float ld_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ double ld_cg(const double* p) {
  double v;
  asm volatile("ld.global.cg.f64 %0, [%1];\n" : "=d"(v) : "l"(p));
  return v;
}

// 16-byte L2-only workspace loads (one per 4 floats / 2 doubles of a thread's accumulators).
__device__ __forceinline__ void ld_cg16(const float* p, float (&v)[4]) {
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
               : "l"(p));
}

__device__ __forceinline__ void ld_cg16(const double* p, double (&v)[2]) {
  asm volatile("ld.global.cg.v2.f64 {%0,%1}, [%2];\n" : "=d"(v[0]), "=d"(v[1]) : "l"(p));
}

__device__ __forceinline__ void st_cg16(float* p, const float (&v)[4]) {
  asm volatile("st.global.cg.v4.f32 [%0], {%1,%2,%3,%4};\n" ::"l"(p), "f"(v[0]), "f"(v[1]), "f"(v[2]),
               "f"(v[3])
               : "memory");
}

__device__ __forceinline__ void st_cg16(double* p, const double (&v)[2]) {
  asm volatile("st.global.cg.v2.f64 [%0], {%1,%2};\n" ::"l"(p), "d"(v[0]), "d"(v[1]) : "memory");
}

// Programmatic dependent launch (sm_90): a kernel the host launched with programmatic stream
// serialization may start while the kernel before it in the stream still runs; `pdl_wait` blocks
// until that one has finished and its memory is visible (a no-op when launched normally or before
// sm_90), `pdl_trigger` lets the next such kernel start launching. The host uses it between the
// kernels of one GEMM and for a GEMM's first main kernel behind any kernel before it
// (streamk.gpu.decide.launches.use_pdl), so a main kernel reads nothing another kernel may write
// before its wait (common/outer_loop.cuh).
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ unsigned ld_volatile(const unsigned* p) {
  unsigned v;
  asm volatile("ld.volatile.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}

}  // namespace streamk
