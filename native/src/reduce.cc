// Element-wise reduction and copying for the shared-memory collectives, in
// vector instructions: JavaScript has no SIMD, and V8 copies into a
// SharedArrayBuffer a word at a time (1 MiB: 92 us for a JS sum loop, 37 us for
// TypedArray.set, against about 34 and 20 here). Only (type, op) pairs whose
// results are bit-identical to the JavaScript kernels (src/native/kernels.ts)
// are here; the caller uses JavaScript for the others. One exception, measured
// on random bit patterns: NaN op NaN may carry the other operand's payload
// (V8's register allocator decides which one JavaScript keeps). Every rank
// runs the same kernel on the same operands, so ranks still agree.
#pragma GCC optimize("O3", "fp-contract=off", "vect-cost-model=dynamic")
#include "common.h"
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace railcomm {
namespace {

// Type and op codes: the order of TYPE_CODES and OP_CODES in src/native/addon.ts.
enum Type { I8, U8, I16, U16, I32, U32, F32, F64, I64, U64 };
enum Op { SUM, PROD, MIN, MAX, BAND, BOR, BXOR };

/** Whether n elements at p and at q share no byte. */
template <typename T>
bool Apart(const T* p, const T* q, size_t n) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p), y = reinterpret_cast<uintptr_t>(q), len = n * sizeof(T);
  return x + len <= y || y + len <= x;
}

// Promised not to overlap (restrict), so the compiler may use vector
// instructions: each element's result is still computed on its own, with the
// same operation, so the bits are those of the plain loop.
template <typename T, typename F>
void Separate(T* __restrict o, const T* __restrict a, const T* __restrict b, size_t n, F f) {
  for (size_t i = 0; i < n; i++) o[i] = f(a[i], b[i]);
}
template <typename T, typename F>
void InPlace(T* __restrict o, const T* __restrict b, size_t n, F f) {
  for (size_t i = 0; i < n; i++) o[i] = f(o[i], b[i]);
}

template <typename T, typename F>
void Loop(T* o, const T* a, const T* b, size_t n, F f) {
  if (Apart(o, b, n) && (o == a || Apart(o, a, n))) {
    if (o == a) InPlace(o, b, n, f);  // the collectives' accumulation
    else Separate(o, a, b, n, f);
    return;
  }
  // Overlapping views: element i is read before it is written.
  for (size_t i = 0; i < n; i++) o[i] = f(a[i], b[i]);
}

/** Integers: wrap-around arithmetic in the unsigned type, as JavaScript's store into the typed array. */
template <typename T>
bool Int(int op, bool exactProd, void* o, const void* a, const void* b, size_t n) {
  using U = typename std::make_unsigned<T>::type;
  T* x = static_cast<T*>(o);
  const T* p = static_cast<const T*>(a);
  const T* q = static_cast<const T*>(b);
  switch (op) {
    case SUM: Loop(x, p, q, n, [](T u, T v) { return static_cast<T>(static_cast<U>(u) + static_cast<U>(v)); }); return true;
    // JavaScript multiplies 32-bit integers in doubles, which round beyond 2^53: not the same bits.
    case PROD: if (!exactProd) return false; Loop(x, p, q, n, [](T u, T v) { return static_cast<T>(static_cast<U>(u) * static_cast<U>(v)); }); return true;
    case MIN: Loop(x, p, q, n, [](T u, T v) { return v < u ? v : u; }); return true;
    case MAX: Loop(x, p, q, n, [](T u, T v) { return v > u ? v : u; }); return true;
    case BAND: Loop(x, p, q, n, [](T u, T v) { return static_cast<T>(u & v); }); return true;
    case BOR: Loop(x, p, q, n, [](T u, T v) { return static_cast<T>(u | v); }); return true;
    case BXOR: Loop(x, p, q, n, [](T u, T v) { return static_cast<T>(u ^ v); }); return true;
  }
  return false;
}

/**
 * Floats: sum and product only (min and max would have to reproduce how
 * JavaScript passes NaN payloads through). A float32 sum or product computed
 * in double and rounded once, as JavaScript does, equals the float32 one.
 */
template <typename T>
bool Float(int op, void* o, const void* a, const void* b, size_t n) {
  T* x = static_cast<T*>(o);
  const T* p = static_cast<const T*>(a);
  const T* q = static_cast<const T*>(b);
  switch (op) {
    case SUM: Loop(x, p, q, n, [](T u, T v) { return u + v; }); return true;
    case PROD: Loop(x, p, q, n, [](T u, T v) { return u * v; }); return true;
  }
  return false;
}

bool Reduce(int type, int op, void* o, const void* a, const void* b, size_t n) {
  switch (type) {
    case I8: return Int<int8_t>(op, true, o, a, b, n);
    case U8: return Int<uint8_t>(op, true, o, a, b, n);
    case I16: return Int<int16_t>(op, true, o, a, b, n);
    case U16: return Int<uint16_t>(op, true, o, a, b, n);
    case I32: return Int<int32_t>(op, false, o, a, b, n);
    case U32: return Int<uint32_t>(op, false, o, a, b, n);
    case F32: return Float<float>(op, o, a, b, n);
    case F64: return Float<double>(op, o, a, b, n);
    case I64: return Int<int64_t>(op, true, o, a, b, n);
    case U64: return Int<uint64_t>(op, true, o, a, b, n);
  }
  return false;
}

const size_t SIZES[] = {1, 1, 2, 2, 4, 4, 4, 8, 8, 8};

/** Whether [off, off + n) elements of size el lie inside a view of len bytes. */
bool Inside(double off, double n, size_t el, size_t len) {
  auto whole = [](double x) { return x >= 0 && x == static_cast<double>(static_cast<size_t>(x)); };
  return whole(off) && whole(n) && (off + n) * static_cast<double>(el) <= static_cast<double>(len);
}

/** reduce(type, op, out, oo, a, ao, b, bo, n) -> false if this pair is not here (use JavaScript). Offsets in elements. */
napi_value ReduceFn(napi_env env, napi_callback_info info) {
  napi_value argv[9];
  Args(env, info, argv, 9);
  char *o = nullptr, *p = nullptr, *q = nullptr;
  size_t lo = 0, lp = 0, lq = 0;
  double type = 0, op = 0, oo = 0, ao = 0, bo = 0, n = 0;
  if (!Num(env, argv[0], &type) || !Num(env, argv[1], &op) || !BytesOf(env, argv[2], &o, &lo) || !Num(env, argv[3], &oo) || !BytesOf(env, argv[4], &p, &lp) ||
      !Num(env, argv[5], &ao) || !BytesOf(env, argv[6], &q, &lq) || !Num(env, argv[7], &bo) || !Num(env, argv[8], &n)) {
    ThrowType(env, "reduce(type, op, out, oo, a, ao, b, bo, n)");
    return nullptr;
  }
  if (!Whole(type, U64) || !Whole(op, 255)) { ThrowType(env, "reduce: bad type or op"); return nullptr; }
  const size_t el = SIZES[static_cast<int>(type)];
  if (!Inside(oo, n, el, lo) || !Inside(ao, n, el, lp) || !Inside(bo, n, el, lq)) { ThrowType(env, "reduce: a range runs past its view"); return nullptr; }
  return Bool(env, Reduce(static_cast<int>(type), static_cast<int>(op), o + static_cast<size_t>(oo) * el, p + static_cast<size_t>(ao) * el, q + static_cast<size_t>(bo) * el, static_cast<size_t>(n)));
}

/** copy(dst, dOff, src, sOff, bytes): memmove between two views, offsets in bytes. */
napi_value CopyFn(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  Args(env, info, argv, 5);
  char *d = nullptr, *s = nullptr;
  size_t ld = 0, ls = 0;
  double dOff = 0, sOff = 0, n = 0;
  if (!BytesOf(env, argv[0], &d, &ld) || !Num(env, argv[1], &dOff) || !BytesOf(env, argv[2], &s, &ls) || !Num(env, argv[3], &sOff) || !Num(env, argv[4], &n)) {
    ThrowType(env, "copy(dst, dOff, src, sOff, bytes)");
    return nullptr;
  }
  if (!Inside(dOff, n, 1, ld) || !Inside(sOff, n, 1, ls)) { ThrowType(env, "copy: a range runs past its view"); return nullptr; }
  std::memmove(d + static_cast<size_t>(dOff), s + static_cast<size_t>(sOff), static_cast<size_t>(n));
  return nullptr;
}

}  // namespace

void InitReduce(Napi::Env env, Napi::Object exports) {
  SetFn(env, exports, "reduce", ReduceFn);
  SetFn(env, exports, "copy", CopyFn);
}

}  // namespace railcomm
