// epilogue.cuh: C = alpha*acc + beta*C and the atomic policy's C += alpha*acc, through shared
// memory. Why not straight from the mma fragments: that was 64 unrolled, predicated element pairs
// per thread (~3,300 SASS instructions, executed once each, so nearly every one an instruction-
// cache miss) and took ~4.6 us per tile even for a lone CTA on an H100 (benchmarks/LOG.md v10).
// Here the fragments go to shared memory as element pairs (the pipeline's buffers are free once
// the mainloop has retired every copy), then a short loop stores whole rows: 16-, 8- or 4-byte
// coalesced accesses where C's rows allow, one element at a time for any other strides. G: the
// thread group (group.cuh) holding the accumulators, ML::THREADS threads that sync on their own
// barrier; `smem` is that group's staging area.
// A mainloop whose whole FP32 tile does not fit in shared memory beside its pipeline declares
// EPILOGUE_PARTS (sm90 64x256: 2; 128x128, 128x192 and 128x256, whose C boxes take the staging: 32
// columns a slice): the tile is then staged and written one column slice at a time (ColumnSlice),
// which needs fragment elements [p*ACC/PARTS, (p+1)*ACC/PARTS) of every
// thread to lie in columns [p*BN/PARTS, (p+1)*BN/PARTS) (the wgmma D layout: column 8*(i/4) + ...).
// The staging then holds one slice (EPILOGUE_STAGING_BYTES<ML>, after ColumnStage).
// C is FP32 / FP64 or the inputs' FP16 / BF16 (c_elem.cuh, p.c_type): the staging holds the
// accumulator's type either way, and the stores convert (C16: a 16-bit C, c_elem.cuh CElem).
#pragma once

#include "c_elem.cuh"
#include "group.cuh"
#include "schedule_table.cuh"

namespace streamk {

template <auto V>
struct Constant {
  static constexpr decltype(V) value = V;
};

// MemberOr<Read, ML, DEFAULT>::value: ML::MEMBER where mainloop ML declares it (Read<ML> being
// Constant<ML::MEMBER>), else DEFAULT. One detector for the mainloops' optional members; SFINAE,
// not `requires`, as NVRTC compiles these kernels as C++17 (build.py).
template <template <class> class Read, class ML, auto DEFAULT, class = void>
struct MemberOr {
  static constexpr decltype(DEFAULT) value = DEFAULT;
};
template <template <class> class Read, class ML, auto DEFAULT>
struct MemberOr<Read, ML, DEFAULT, decltype(void(Read<ML>::value))> {
  static constexpr decltype(DEFAULT) value = Read<ML>::value;
};

// Whether ML's fragment elements 2j and 2j+1 of a thread are column neighbours (r, c), (r, c+1)
// (ML::PAIR_COLUMNS where it declares it, else true; the transposed dot tile's are row neighbours).
template <class ML>
using PairColumnsOf = Constant<ML::PAIR_COLUMNS>;
template <class ML>
using PairColumns = MemberOr<PairColumnsOf, ML, true>;

template <class ML>
struct TileStage {
  using Acc = typename ML::Acc;
  // Row stride (elements): 8 elements of padding make a half-warp's 8-byte pair stores (4 rows x
  // 32 B for FP32) and a quarter-warp's 16-byte ones (2 rows x 64 B for FP64) bank-conflict-free.
  static constexpr int LD = ML::BN + 8;
  static constexpr int BYTES = ML::BM * LD * static_cast<int>(sizeof(Acc));
  struct alignas(2 * sizeof(Acc)) Pair {
    Acc x, y;
  };

  // Fragment elements 2j and 2j+1 of a thread that are column neighbours: one pair store.
  template <class G>
  static __device__ __forceinline__ void store(unsigned char* smem, const Acc (&acc)[ML::ACC], int tid) {
    Acc* s = reinterpret_cast<Acc*>(smem);
#pragma unroll
    for (int i = 0; i < ML::ACC; i += 2) {
      int r, c;
      ML::coord(i, tid, r, c);
      if constexpr (PairColumns<ML>::value) {
        *reinterpret_cast<Pair*>(s + r * LD + c) = Pair{acc[i], acc[i + 1]};
      } else {
        int r1, c1;
        ML::coord(i + 1, tid, r1, c1);
        s[r * LD + c] = acc[i];
        s[r1 * LD + c1] = acc[i + 1];
      }
    }
    G::sync();
  }
};

// How many column slices ML's epilogue stages (ML::EPILOGUE_PARTS where it declares it, else 1).
template <class ML>
using EpiloguePartsOf = Constant<ML::EPILOGUE_PARTS>;
template <class ML>
using EpilogueParts = MemberOr<EpiloguePartsOf, ML, 1>;

// Column slice PART of ML's tile as a mainloop of its own for the epilogue: BN / PARTS columns,
// ACC / PARTS accumulators per thread (elements PART * ACC .. of the whole fragment).
template <class ML, int PART>
struct ColumnSlice {
  using Acc = typename ML::Acc;
  static constexpr int PARTS = EpilogueParts<ML>::value;
  static constexpr int BM = ML::BM, BN = ML::BN / PARTS, THREADS = ML::THREADS, ACC = ML::ACC / PARTS;
  static_assert(ML::BN % PARTS == 0 && ML::ACC % PARTS == 0 && PART < PARTS, "whole column slices");
  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    ML::coord(PART * ACC + i, tid, r, c);
    c -= PART * BN;
  }
  // the slice's accumulators inside the whole tile's
  static __device__ __forceinline__ const Acc (&of(const Acc (&acc)[ML::ACC]))[ACC] {
    return *reinterpret_cast<const Acc(*)[ACC]>(&acc[PART * ACC]);
  }
};


// V elements of type T, aligned as one access of up to 16 bytes (8 FP32 staged values: two)
template <class T, int V>
struct alignas(V * sizeof(T) < 16 ? V * sizeof(T) : 16) Vec {
  T v[V];
};

// C's V elements at d (C16: 16-bit, BF16 where `bf16`) = alpha * in + beta * d (beta == 0: not read):
// one V-element access where all V lie inside n (whole == V), else the first `whole` one at a time.
template <class Acc, bool C16, int V>
__device__ __forceinline__ void update_vec(typename CElem<Acc, C16>::T* d, const Vec<Acc, V>& in, Acc alpha,
                                           Acc beta, int whole, bool bf16) {
  using E = CElem<Acc, C16>;
  using T = typename E::T;
  if (whole == V) {
    Vec<T, V> out;
    if (beta != Acc(0)) {
      const Vec<T, V> old = *reinterpret_cast<const Vec<T, V>*>(d);
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[j] = E::of(alpha * in.v[j] + beta * E::to_acc(old.v[j], bf16), bf16);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[j] = E::of(alpha * in.v[j], bf16);
    }
    *reinterpret_cast<Vec<T, V>*>(d) = out;
  } else {
    for (int j = 0; j < whole; ++j) c_update<Acc, C16>(d + j, alpha * in.v[j], beta, bf16);
  }
}

// One V-element access of a unit-column-stride C at tile row r, column c (of `whole` elements inside
// n), for store_rows' flattened loop.
template <class ML, int V, bool C16>
__device__ __forceinline__ void store_access(const OperandParams& p, const unsigned char* smem, int m0, int n0, int r,
                                             int c, int whole) {
  using Acc = typename ML::Acc;
  using T = typename CElem<Acc, C16>::T;
  const Vec<Acc, V> in = *reinterpret_cast<const Vec<Acc, V>*>(reinterpret_cast<const Acc*>(smem) + r * TileStage<ML>::LD + c);
  T* d = static_cast<T*>(p.c) + static_cast<long long>(m0 + r) * p.c_rs + n0 + c;
  update_vec<Acc, C16, V>(d, in, static_cast<Acc>(p.alpha), static_cast<Acc>(p.beta), whole, p.c_type == C_BF16);
}

// Rows of a unit-column-stride C, V elements per access (base and row stride V-aligned).
template <class ML, int V, bool C16>
__device__ __forceinline__ void store_rows(const OperandParams& p, const Problem& mnk, const unsigned char* smem, int m0,
                                           int n0, int tid) {
  using Acc = typename ML::Acc;
  using T = typename CElem<Acc, C16>::T;
  using S = TileStage<ML>;
  constexpr int PER_ROW = ML::BN / V;  // accesses per tile row
  const int rows = min(ML::BM, mnk.m - m0), cols = min(ML::BN, mnk.n - n0);
  if constexpr (ML::THREADS % PER_ROW != 0) {  // rows of 192 columns: the tile's accesses in order
    for (int e = tid; e < rows * PER_ROW; e += ML::THREADS) {
      const int r = e / PER_ROW, c = (e % PER_ROW) * V;
      if (c < cols) store_access<ML, V, C16>(p, smem, m0, n0, r, c, cols - c >= V ? V : cols - c);
    }
    return;
  }
  constexpr int ROWS_PER_PASS = ML::THREADS / PER_ROW;  // each thread keeps one column
  const int c = (tid % PER_ROW) * V;
  if (c >= cols) return;
  const Acc alpha = static_cast<Acc>(p.alpha), beta = static_cast<Acc>(p.beta);
  const Acc* s = reinterpret_cast<const Acc*>(smem) + c;
  const bool bf16 = p.c_type == C_BF16;
  T* dst = static_cast<T*>(p.c) + static_cast<long long>(m0) * p.c_rs + n0 + c;
  const int whole = cols - c >= V ? V : cols - c;  // elements of this thread's access inside n
  for (int r = tid / PER_ROW; r < rows; r += ROWS_PER_PASS) {
    const Vec<Acc, V> in = *reinterpret_cast<const Vec<Acc, V>*>(s + r * S::LD);
    update_vec<Acc, C16, V>(dst + static_cast<long long>(r) * p.c_rs, in, alpha, beta, whole, bf16);
  }
}

// Any strides (column-major C walks down columns so warps stay coalesced); ATOMIC adds alpha*acc (to
// a C of the accumulator's type: the host refuses the atomic policy on a 16-bit C).
template <class ML, bool ATOMIC, bool C16>
__device__ __forceinline__ void store_any(const OperandParams& p, const Problem& mnk, const unsigned char* smem, int m0,
                                          int n0, int tid) {
  using Acc = typename ML::Acc;
  using T = typename CElem<Acc, C16>::T;
  using S = TileStage<ML>;
  static_assert(!ATOMIC || !C16, "atomic adds to a C of the accumulator's type");
  const bool bf16 = p.c_type == C_BF16;
  const int rows = min(ML::BM, mnk.m - m0), cols = min(ML::BN, mnk.n - n0);
  const bool down = p.c_rs == 1 && p.c_cs != 1;
  const Acc alpha = static_cast<Acc>(p.alpha), beta = static_cast<Acc>(p.beta);
  const Acc* s = reinterpret_cast<const Acc*>(smem);
  T* C = static_cast<T*>(p.c) + static_cast<long long>(m0) * p.c_rs + static_cast<long long>(n0) * p.c_cs;
  for (int e = tid; e < ML::BM * ML::BN; e += ML::THREADS) {
    const int r = down ? e % ML::BM : e / ML::BN, c = down ? e / ML::BM : e % ML::BN;
    if (r >= rows || c >= cols) continue;
    T* d = C + static_cast<long long>(r) * p.c_rs + static_cast<long long>(c) * p.c_cs;
    const Acc v = alpha * s[r * S::LD + c];
    if constexpr (ATOMIC) {
      atomicAdd(d, v);
    } else {
      c_update<Acc, C16>(d, v, beta, bf16);
    }
  }
}

// A column-major C (a caller's, or C^T where auto runs the transposed problem) leaves column by
// column on the mainloops that declare STAGE_COLUMNS (the sm90 tiles staged whole): the tile is
// staged transposed (row stride BM + 4, so a warp's element stores fall in 32 banks) and each
// column goes out in 16-byte accesses, as rows do in store_rows. store_any's element walk took
// 1.1-1.45x longer on those tiles (LOG.md v79). Elsewhere store_any stays: with the column path
// compiled in, a row-major C ran 2-4% slower on 64x256x64's column halves (x @ W.t(), 1-64 rows).
template <class ML>
using StageColumnsOf = Constant<ML::STAGE_COLUMNS>;
template <class ML>
using StageColumns = MemberOr<StageColumnsOf, ML, false>;

template <class ML>
struct ColumnStage {
  using Acc = typename ML::Acc;
  static constexpr int LD = ML::BM + 4;
  static constexpr int BYTES = ML::BN * LD * static_cast<int>(sizeof(Acc));

  template <class G>
  static __device__ __forceinline__ void store(unsigned char* smem, const Acc (&acc)[ML::ACC], int tid) {
    Acc* s = reinterpret_cast<Acc*>(smem);
#pragma unroll
    for (int i = 0; i < ML::ACC; ++i) {
      int r, c;
      ML::coord(i, tid, r, c);
      s[c * LD + r] = acc[i];
    }
    G::sync();
  }
};

// Shared memory the epilogue of ML stages in: one column slice (the whole tile when PARTS is 1), or
// the transposed tile where that is larger (ColumnStage's BM + 4 row stride on a 64 x 192 tile).
template <class ML>
constexpr int EPILOGUE_STAGING_BYTES =
    StageColumns<ML>::value && ColumnStage<ML>::BYTES > TileStage<ColumnSlice<ML, 0>>::BYTES
        ? ColumnStage<ML>::BYTES
        : TileStage<ColumnSlice<ML, 0>>::BYTES;

// Columns of a unit-row-stride C, V elements per access (base and column stride V-aligned).
template <class ML, int V, bool C16>
__device__ __forceinline__ void store_cols(const OperandParams& p, const Problem& mnk, const unsigned char* smem, int m0,
                                           int n0, int tid) {
  using Acc = typename ML::Acc;
  using T = typename CElem<Acc, C16>::T;
  constexpr int PER_COL = ML::BM / V;  // accesses per tile column
  const int rows = min(ML::BM, mnk.m - m0), cols = min(ML::BN, mnk.n - n0);
  const Acc alpha = static_cast<Acc>(p.alpha), beta = static_cast<Acc>(p.beta);
  for (int e = tid; e < cols * PER_COL; e += ML::THREADS) {
    const int c = e / PER_COL, r = (e % PER_COL) * V;
    if (r >= rows) continue;
    const Vec<Acc, V> in =
        *reinterpret_cast<const Vec<Acc, V>*>(reinterpret_cast<const Acc*>(smem) + c * ColumnStage<ML>::LD + r);
    T* d = static_cast<T*>(p.c) + static_cast<long long>(n0 + c) * p.c_cs + m0 + r;
    update_vec<Acc, C16, V>(d, in, alpha, beta, rows - r >= V ? V : rows - r, p.c_type == C_BF16);
  }
}

// The stores of a staged tile to C (C16: a 16-bit C; by columns where `columns`: ColumnStage): 16-byte
// accesses where C's base and stride allow, else FP32 pairs, else elements.
template <class ML, bool C16>
__device__ __forceinline__ void store_staged(const OperandParams& p, const Problem& mnk, const unsigned char* smem,
                                             int m0, int n0, int tid, bool columns) {
  using T = typename CElem<typename ML::Acc, C16>::T;
  constexpr int WIDE = 16 / sizeof(T);  // elements of a 16-byte access
  constexpr bool PAIRS = sizeof(T) == 4;  // FP32 pairs (8-byte accesses); 16-bit C: 16 bytes or elements
  const unsigned long long base = reinterpret_cast<unsigned long long>(p.c);
  if constexpr (StageColumns<ML>::value) {
    if (columns) {
      const auto aligned = [&](unsigned bytes) {
        return base % bytes == 0 && (static_cast<unsigned long long>(p.c_cs) * sizeof(T)) % bytes == 0;
      };
      if (aligned(16)) {
        store_cols<ML, WIDE, C16>(p, mnk, smem, m0, n0, tid);
      } else if (PAIRS && aligned(2 * sizeof(T))) {
        store_cols<ML, 2, C16>(p, mnk, smem, m0, n0, tid);
      } else {
        store_cols<ML, 1, C16>(p, mnk, smem, m0, n0, tid);
      }
      return;
    }
  }
  const auto aligned = [&](unsigned bytes) {
    return base % bytes == 0 && (static_cast<unsigned long long>(p.c_rs) * sizeof(T)) % bytes == 0;
  };
  if (p.c_cs == 1 && aligned(16)) {
    store_rows<ML, WIDE, C16>(p, mnk, smem, m0, n0, tid);
  } else if (PAIRS && p.c_cs == 1 && aligned(2 * sizeof(T))) {
    store_rows<ML, 2, C16>(p, mnk, smem, m0, n0, tid);
  } else if (p.c_cs == 1) {
    store_rows<ML, 1, C16>(p, mnk, smem, m0, n0, tid);
  } else {
    store_any<ML, false, C16>(p, mnk, smem, m0, n0, tid);
  }
}

// A 16-bit C's stores, out of line: inlined beside the accumulator type's, the three C types doubled
// every kernel's code and cost the shortest GEMMs ~0.15 us with an FP32 C (LOG.md v152). Its
// arguments are scalars: a reference into the kernel's parameters would make every kernel copy them
// all to the stack.
template <class ML>
__device__ __noinline__ void store_staged_16(void* c, long long c_rs, long long c_cs, double alpha, double beta,
                                             int c_type, const int m, const int n, const unsigned char* smem, int m0,
                                             int n0, int tid, bool columns) {
  OperandParams p{};
  p.c = c, p.c_rs = c_rs, p.c_cs = c_cs, p.alpha = alpha, p.beta = beta, p.c_type = c_type;
  const int k = 0;  // (not read by the stores)
  store_staged<ML, true>(p, Problem{m, n, k}, smem, m0, n0, tid, columns);
}

// C tile (m0, n0) = alpha*acc + beta*C (beta == 0: C is never read), staged whole (transposed for a
// column-major C on the mainloops that declare STAGE_COLUMNS), in C's type (p.c_type; FP64
// accumulators write FP64 C only). `smem` holds at least EPILOGUE_STAGING_BYTES<ML> and no copy or
// read of it may be in flight; it is free again on return.
template <class ML, class G>
__device__ __forceinline__ void write_tile(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                           const typename ML::Acc (&acc)[ML::ACC], unsigned char* smem) {
  const int tid = G::rank();
  bool columns = false;
  if constexpr (StageColumns<ML>::value) columns = p.c_rs == 1 && p.c_cs != 1;
  if constexpr (StageColumns<ML>::value) {
    if (columns) {
      ColumnStage<ML>::template store<G>(smem, acc, tid);
    } else {
      TileStage<ML>::template store<G>(smem, acc, tid);
    }
  } else {
    TileStage<ML>::template store<G>(smem, acc, tid);
  }
  if constexpr (sizeof(typename ML::Acc) == 4) {
    if (p.c_type != C_ACC) {
      store_staged_16<ML>(p.c, p.c_rs, p.c_cs, p.alpha, p.beta, p.c_type, mnk.m, mnk.n, smem, m0, n0, tid, columns);
      G::sync();
      return;
    }
  }
  store_staged<ML, false>(p, mnk, smem, m0, n0, tid, columns);
  G::sync();
}

// C tile (m0, n0) += alpha*acc atomically (the atomic policy; the host prescaled C by beta).
template <class ML, class G>
__device__ __forceinline__ void atomic_tile(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                            const typename ML::Acc (&acc)[ML::ACC], unsigned char* smem) {
  const int tid = G::rank();
  TileStage<ML>::template store<G>(smem, acc, tid);
  store_any<ML, true, false>(p, mnk, smem, m0, n0, tid);
  G::sync();
}

// C tile (m0, n0) = alpha*acc + beta*C, or += alpha*acc atomically (ATOMIC): staged whole, or in
// ML's column slices PART.. one after the other through the same staging (file comment). A slice
// wholly past n is skipped (the test is uniform over G, so every thread takes the same syncs).
template <class ML, class G, bool ATOMIC, int PART = 0>
__device__ __forceinline__ void store_c(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                        const typename ML::Acc (&acc)[ML::ACC], unsigned char* smem) {
  if constexpr (EpilogueParts<ML>::value == 1) {
    if constexpr (ATOMIC) {
      atomic_tile<ML, G>(p, mnk, m0, n0, acc, smem);
    } else {
      write_tile<ML, G>(p, mnk, m0, n0, acc, smem);
    }
  } else {
    using S = ColumnSlice<ML, PART>;  // staged whole: a slice declares no EPILOGUE_PARTS
    if (n0 + PART * S::BN < mnk.n) store_c<S, G, ATOMIC>(p, mnk, m0, n0 + PART * S::BN, S::of(acc), smem);
    if constexpr (PART + 1 < S::PARTS) store_c<ML, G, ATOMIC, PART + 1>(p, mnk, m0, n0, acc, smem);
  }
}

template <class ML, class G>
__device__ __forceinline__ void write_c(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                        const typename ML::Acc (&acc)[ML::ACC], unsigned char* smem) {
  store_c<ML, G, false>(p, mnk, m0, n0, acc, smem);
}

template <class ML, class G>
__device__ __forceinline__ void atomic_c(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                         const typename ML::Acc (&acc)[ML::ACC], unsigned char* smem) {
  store_c<ML, G, true>(p, mnk, m0, n0, acc, smem);
}

}  // namespace streamk
