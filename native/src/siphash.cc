// SipHash-2-4 (Aumasson and Bernstein, 2012) keyed with 128 bits: the udp
// rail's per-session datagram MAC (truncated to 32 bits by the caller). One
// call per datagram, so it takes a range of a view and allocates nothing; a
// 4-byte hole in the range (the datagram's own MAC field) is read as zeros.
#include "common.h"
#include <cstdint>
#include <cstring>

namespace railcomm {
namespace {

inline uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }
inline uint64_t Load64(const uint8_t* p) { uint64_t w; std::memcpy(&w, p, 8); return w; }  // little endian (x86-64, arm64)

#define SIPROUND                                                            \
  do {                                                                      \
    v0 += v1; v1 = Rotl(v1, 13); v1 ^= v0; v0 = Rotl(v0, 32);               \
    v2 += v3; v3 = Rotl(v3, 16); v3 ^= v2;                                  \
    v0 += v3; v3 = Rotl(v3, 21); v3 ^= v0;                                  \
    v2 += v1; v1 = Rotl(v1, 17); v1 ^= v2; v2 = Rotl(v2, 32);               \
  } while (0)

/**
 * SipHash-2-4 of p[0, n) under the 16-byte key k, with bytes [hole, hole + 4)
 * read as zeros (hole < 0 or past the end: none). Only the (at most two)
 * 8-byte words the hole touches take the slow path.
 */
uint64_t Sip(const uint8_t* k, const uint8_t* p, size_t n, int64_t hole) {
  const uint64_t k0 = Load64(k), k1 = Load64(k + 8);
  uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
  const size_t words = n / 8;
  const bool holed = hole >= 0 && static_cast<uint64_t>(hole) < n;
  const size_t h0 = holed ? static_cast<size_t>(hole) / 8 : SIZE_MAX;
  const size_t h1 = holed ? (static_cast<size_t>(hole) + 3) / 8 : SIZE_MAX;
  uint8_t tmp[8];
  auto word = [&](size_t i, size_t len) -> uint64_t {
    // The word at byte 8i with `len` bytes (8, or the tail's), the hole zeroed.
    std::memset(tmp, 0, 8);
    std::memcpy(tmp, p + 8 * i, len);
    if (i == h0 || i == h1) {
      for (size_t b = 0; b < len; b++) {
        const size_t at = 8 * i + b;
        if (at >= static_cast<size_t>(hole) && at < static_cast<size_t>(hole) + 4) tmp[b] = 0;
      }
    }
    return Load64(tmp);
  };
  for (size_t i = 0; i < words; i++) {
    const uint64_t m = (i == h0 || i == h1) ? word(i, 8) : Load64(p + 8 * i);
    v3 ^= m;
    SIPROUND;
    SIPROUND;
    v0 ^= m;
  }
  const uint64_t b = (static_cast<uint64_t>(n) << 56) | word(words, n & 7);
  v3 ^= b;
  SIPROUND;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

/**
 * siphash24Range(view, offset, length, key, hole, out?) -> uint32: the low 32
 * bits of SipHash-2-4 of view[offset, offset + length) under the 16-byte key,
 * with the 4 bytes at offset + hole read as zeros (hole -1: none). `out`, an
 * 8-byte view, takes the whole 64-bit result (little endian): for the tests.
 */
napi_value SipRange(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  const size_t argc = Args(env, info, argv, 6);
  char* p = nullptr;
  char* k = nullptr;
  size_t len = 0, klen = 0;
  double off = 0, n = 0, hole = -1;
  if (!BytesOf(env, argv[0], &p, &len) || !Num(env, argv[1], &off) || !Num(env, argv[2], &n) || !BytesOf(env, argv[3], &k, &klen) ||
      !Num(env, argv[4], &hole) || !Whole(off, 4294967295.0) || !Whole(n, 4294967295.0) || klen != 16 || !(hole >= -1 && hole <= 4294967295.0)) {
    ThrowType(env, "siphash24Range(view, offset, length, key16, hole, out?)");
    return nullptr;
  }
  if (off > static_cast<double>(len) || n > static_cast<double>(len) - off) { ThrowType(env, "siphash24Range: offset and length must lie inside the view"); return nullptr; }
  const uint64_t h = Sip(reinterpret_cast<uint8_t*>(k), reinterpret_cast<uint8_t*>(p) + static_cast<size_t>(off), static_cast<size_t>(n), static_cast<int64_t>(hole));
  if (argc > 5) {
    char* o = nullptr;
    size_t olen = 0;
    if (!BytesOf(env, argv[5], &o, &olen) || olen < 8) { ThrowType(env, "siphash24Range: out must be a view of at least 8 bytes"); return nullptr; }
    std::memcpy(o, &h, 8);
  }
  return Uint(env, static_cast<uint32_t>(h));
}

}  // namespace

void InitSiphash(Napi::Env env, Napi::Object exports) {
  SetFn(env, exports, "siphash24Range", SipRange);
}

}  // namespace railcomm
