// c_elem.cuh: C's element type. C holds the accumulator's type (FP32 or FP64), or, for FP16 / BF16
// inputs, the inputs' 16-bit type (OperandParams c_type): torch's matmul returns C so, and at short k
// C's bytes are most of a GEMM's traffic. Accumulators, partials and the epilogue's staging stay in
// the accumulator's type; only the values written to (and, for beta, read from) C are converted, with
// round-to-nearest-even (cvt.rn, as torch's FP32 -> FP16 / BF16 casts).
#pragma once

namespace streamk {

// OperandParams::c_type (mirror of streamk/gpu/runtime/launch.py C_ACC, C_F16, C_BF16)
enum CType : int { C_ACC = 0, C_F16 = 1, C_BF16 = 2 };

// CElem<Acc, C16>: C's stored element T (Acc, or with C16 the raw bits of FP16 / BF16: which one,
// `bf16`, the launch says), to_acc (T -> Acc) and of (Acc -> T). One 16-bit instantiation for both
// formats keeps the kernels' code (and NVRTC's time) from a third copy of every store.
template <class Acc, bool C16>
struct CElem {
  using T = Acc;
  static __device__ __forceinline__ Acc to_acc(T v, bool) { return v; }
  static __device__ __forceinline__ T of(Acc v, bool) { return v; }
};

template <>
struct CElem<float, true> {
  using T = unsigned short;
  static __device__ __forceinline__ float to_acc(T v, bool bf16) {
    float f;
    if (bf16) {  // BF16 is FP32's upper half
      asm("mov.b32 %0, %1;" : "=f"(f) : "r"(static_cast<unsigned>(v) << 16));
    } else {
      asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    }
    return f;
  }
  static __device__ __forceinline__ T of(float v, bool bf16) {
    T h;
    if (bf16) {
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    } else {
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    }
    return h;
  }
};

// C[i] = v + beta * C[i] (beta == 0: C is not read), v already alpha * acc.
template <class Acc, bool C16>
__device__ __forceinline__ void c_update(typename CElem<Acc, C16>::T* d, Acc v, Acc beta, bool bf16) {
  using E = CElem<Acc, C16>;
  *d = E::of(beta != Acc(0) ? v + beta * E::to_acc(*d, bf16) : v, bf16);
}

// The same for a C whose type the launch gives (c_type): one uniform branch, for the separate-reduce
// pass's element-wise writes (passes.cuh).
template <class Acc>
__device__ __forceinline__ void c_update_any(void* c, long long offset, int c_type, Acc v, Acc beta) {
  if constexpr (sizeof(Acc) == 4) {
    if (c_type != C_ACC)
      return c_update<Acc, true>(static_cast<unsigned short*>(c) + offset, v, beta, c_type == C_BF16);
  }
  c_update<Acc, false>(static_cast<Acc*>(c) + offset, v, beta, false);
}

}  // namespace streamk
