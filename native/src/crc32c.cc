// CRC32C (Castagnoli), with the SSE4.2 crc32 instruction where the CPU has it
// and a table otherwise; for the udp rail's segment checksums. The instruction
// takes 3 cycles but issues every cycle, so long inputs run as three
// interleaved streams whose CRCs are then joined (a 64 KB datagram: ~3x faster
// than one stream).
#include "common.h"
#include <cstdint>
#include <cstring>
#include <mutex>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace railcomm {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial
uint32_t table[256];

void MakeTable() {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    table[i] = c;
  }
}

uint32_t Soft(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

// ---- joining streams: appending n zero bytes to a CRC register is linear over
// GF(2), a 32x32 bit matrix; tabulated by byte of the register it costs four loads.

/** Matrix (32 columns) times vector. */
uint32_t MatTimes(const uint32_t* m, uint32_t v) {
  uint32_t s = 0;
  for (int i = 0; v != 0; i++, v >>= 1) if (v & 1) s ^= m[i];
  return s;
}

/** out = m * m (the operator applied twice). */
void MatSquare(uint32_t* out, const uint32_t* m) {
  for (int i = 0; i < 32; i++) out[i] = MatTimes(m, m[i]);
}

/** Tables that advance a CRC register over `bytes` zero bytes (a power of two). */
void MakeShift(uint32_t shift[4][256], size_t bytes) {
  uint32_t a[32], b[32];
  a[0] = kPoly;  // one zero bit: shift right, fold the polynomial in when bit 0 falls out
  for (int i = 1; i < 32; i++) a[i] = 1u << (i - 1);
  for (int k = 0; k < 3; k++) { MatSquare(b, a); std::memcpy(a, b, sizeof a); }  // 8 bits: one byte
  for (size_t n = bytes; n > 1; n >>= 1) { MatSquare(b, a); std::memcpy(a, b, sizeof a); }
  for (int k = 0; k < 4; k++)
    for (uint32_t i = 0; i < 256; i++) shift[k][i] = MatTimes(a, i << (8 * k));
}

inline uint32_t Shift(const uint32_t shift[4][256], uint32_t c) {
  return shift[0][c & 0xff] ^ shift[1][(c >> 8) & 0xff] ^ shift[2][(c >> 16) & 0xff] ^ shift[3][c >> 24];
}

constexpr size_t kLong = 4096;   // bytes per stream in a long block (3 x 4 KiB)
constexpr size_t kShort = 256;   // and in a short one (3 x 256 B)
uint32_t shiftLong[4][256];
uint32_t shiftShort[4][256];

#if defined(__x86_64__)
inline uint64_t Load(const uint8_t* p) { uint64_t w; std::memcpy(&w, p, 8); return w; }

/** Three streams of `len` bytes each at p, p + len, p + 2 len, joined. */
__attribute__((target("sse4.2"))) inline uint32_t Three(uint32_t crc, const uint8_t* p, size_t len, const uint32_t shift[4][256]) {
  uint64_t c0 = crc, c1 = 0, c2 = 0;
  const uint8_t* end = p + len;
  for (; p < end; p += 8) {
    c0 = _mm_crc32_u64(c0, Load(p));
    c1 = _mm_crc32_u64(c1, Load(p + len));
    c2 = _mm_crc32_u64(c2, Load(p + 2 * len));
  }
  uint32_t c = Shift(shift, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
  return Shift(shift, c) ^ static_cast<uint32_t>(c2);
}

__attribute__((target("sse4.2"))) uint32_t Hard(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 3 * kLong) { crc = Three(crc, p, kLong, shiftLong); p += 3 * kLong; n -= 3 * kLong; }
  while (n >= 3 * kShort) { crc = Three(crc, p, kShort, shiftShort); p += 3 * kShort; n -= 3 * kShort; }
  uint64_t c = crc;
  while (n >= 8) { c = _mm_crc32_u64(c, Load(p)); p += 8; n -= 8; }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) { c32 = _mm_crc32_u8(c32, *p++); n--; }
  return c32;
}
bool hard = false;
#endif

uint32_t Compute(uint32_t seed, const uint8_t* p, size_t len) {
  uint32_t c = ~seed;
#if defined(__x86_64__)
  c = hard ? Hard(c, p, len) : Soft(c, p, len);
#else
  c = Soft(c, p, len);
#endif
  return ~c;
}

/** crc32c(view, seed = 0) -> uint32, chainable: crc32c(b, crc32c(a)) === crc32c(a + b). */
napi_value Crc(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  const size_t argc = Args(env, info, argv, 2);
  char* p = nullptr;
  size_t len = 0;
  if (!BytesOf(env, argv[0], &p, &len)) { ThrowType(env, "crc32c(view, seed)"); return nullptr; }
  uint32_t seed = 0;
  if (argc > 1) napi_get_value_uint32(env, argv[1], &seed);  // not a number: seed 0
  return Uint(env, Compute(seed, reinterpret_cast<uint8_t*>(p), len));
}

/**
 * crc32cRange(view, offset, length) -> uint32: the CRC32C of view[offset, offset + length)
 * without a subarray per call (the udp rail checks every datagram).
 */
napi_value CrcRange(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  Args(env, info, argv, 3);
  char* p = nullptr;
  size_t len = 0;
  double off = 0, n = 0;
  if (!BytesOf(env, argv[0], &p, &len) || !Num(env, argv[1], &off) || !Num(env, argv[2], &n) || !Whole(off, 4294967295.0) || !Whole(n, 4294967295.0)) {
    ThrowType(env, "crc32cRange(view, offset, length)");
    return nullptr;
  }
  if (off > static_cast<double>(len) || n > static_cast<double>(len) - off) { ThrowType(env, "crc32cRange: offset and length must lie inside the view"); return nullptr; }
  return Uint(env, Compute(0, reinterpret_cast<uint8_t*>(p) + static_cast<size_t>(off), static_cast<size_t>(n)));
}

napi_value Hardware(napi_env env, napi_callback_info) {
#if defined(__x86_64__)
  return Bool(env, hard);
#else
  return Bool(env, false);
#endif
}

}  // namespace

void InitCrc(Napi::Env env, Napi::Object exports) {
  static std::once_flag once;  // worker threads may load the addon at the same moment
  std::call_once(once, [] {
    MakeTable();
    MakeShift(shiftLong, kLong);
    MakeShift(shiftShort, kShort);
#if defined(__x86_64__)
    __builtin_cpu_init();
    hard = __builtin_cpu_supports("sse4.2");
#endif
  });
  SetFn(env, exports, "crc32c", Crc);
  SetFn(env, exports, "crc32cRange", CrcRange);
  SetFn(env, exports, "crc32cHardware", Hardware);
}

}  // namespace railcomm
