// CRC32C (Castagnoli), with the SSE4.2 crc32 instruction where the CPU has it
// and a table otherwise; for the udp rail's segment checksums.
#include "common.h"
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace railcomm {
namespace {

uint32_t table[256];

void MakeTable() {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
}

uint32_t Soft(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Hard(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  while (n >= 8) { uint64_t w; std::memcpy(&w, p, 8); c = _mm_crc32_u64(c, w); p += 8; n -= 8; }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) { c32 = _mm_crc32_u8(c32, *p++); n--; }
  return c32;
}
bool hard = false;
#endif

/** crc32c(view, seed = 0) -> uint32, chainable: crc32c(b, crc32c(a)) === crc32c(a + b). */
void Crc(const FunctionCallbackInfo<Value>& a) {
  char* p = nullptr; size_t len = 0;
  if (a.Length() < 1 || !BytesOf(a[0], &p, &len)) { ThrowType(a.GetIsolate(), "crc32c(view, seed)"); return; }
  uint32_t seed = a.Length() > 1 && a[1]->IsNumber() ? a[1]->Uint32Value(a.GetIsolate()->GetCurrentContext()).FromMaybe(0) : 0;
  uint32_t c = ~seed;
#if defined(__x86_64__)
  c = hard ? Hard(c, reinterpret_cast<uint8_t*>(p), len) : Soft(c, reinterpret_cast<uint8_t*>(p), len);
#else
  c = Soft(c, reinterpret_cast<uint8_t*>(p), len);
#endif
  a.GetReturnValue().Set(~c);
}

void Hardware(const FunctionCallbackInfo<Value>& a) {
#if defined(__x86_64__)
  a.GetReturnValue().Set(hard);
#else
  a.GetReturnValue().Set(false);
#endif
}

}  // namespace

void InitCrc(Local<v8::Object> exports, Local<v8::Context> ctx) {
  MakeTable();
#if defined(__x86_64__)
  __builtin_cpu_init();
  hard = __builtin_cpu_supports("sse4.2");
#endif
  SetFn(exports, ctx, "crc32c", Crc);
  SetFn(exports, ctx, "crc32cHardware", Hardware);
}

}  // namespace railcomm
