// A stand-in for the CUDA driver (libcuda.so.1) made of host memory, for
// developing railcomm's device datapaths on machines without a GPU: every
// entry point native/src/cuda.cc looks up, with the same signatures. Device
// memory is a /dev/shm mapping (so "CUDA IPC" between processes works: the
// handle names the file), copies are memcpy, kernels are the element-wise
// reductions run on the host, selected by the entry's name. Never a test
// result by itself: test/gpu says when it ran on this instead of a GPU.
//   gcc -shared -fPIC -O2 -o test/gpu/fake/libcuda.so.1 test/gpu/fake/fakecuda.c -lpthread
//   RAILCOMM_CUDA_LIBRARY=$PWD/test/gpu/fake/libcuda.so.1 node ...
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500 };

#define MAX_REGIONS 4096
struct region {
  uintptr_t base;
  size_t size;
  int kind;                 // 2 device (own), 3 device (imported), 1 pinned host
  unsigned long long id;    // buffer id, never reused
  int refs;                 // imported: times opened
  char name[32];            // own device: /dev/shm name
  int owner_pid;
  unsigned long long owner_id;
};
static struct region regions[MAX_REGIONS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long next_id = 1;
static int initialised = 0;
static __thread void* current = NULL;

struct handle { char magic[8]; int pid; int pad; unsigned long long id; unsigned long long size; char name[32]; };

static struct region* find(uintptr_t p) {
  for (int i = 0; i < MAX_REGIONS; i++) {
    struct region* r = &regions[i];
    if (r->kind != 0 && p >= r->base && p < r->base + (r->size ? r->size : 1)) return r;
  }
  return NULL;
}
static struct region* slot(void) {
  for (int i = 0; i < MAX_REGIONS; i++) if (regions[i].kind == 0) return &regions[i];
  return NULL;
}

CUresult cuGetErrorString(CUresult e, const char** s) {
  switch (e) {
    case OK: *s = "no error"; break;
    case INVALID_VALUE: *s = "invalid argument"; break;
    case NOT_INITIALIZED: *s = "initialization error"; break;
    case INVALID_CONTEXT: *s = "invalid device context"; break;
    case INVALID_HANDLE: *s = "invalid resource handle"; break;
    case NOT_FOUND: *s = "named symbol not found"; break;
    default: *s = "unknown error"; break;
  }
  return OK;
}
CUresult cuGetErrorName(CUresult e, const char** s) {
  switch (e) {
    case OK: *s = "CUDA_SUCCESS"; break;
    case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; break;
  }
  return OK;
}
CUresult cuInit(unsigned int f) { (void)f; initialised = 1; return OK; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return OK; }
static int devices(void) { const char* e = getenv("FAKECUDA_DEVICES"); return e ? atoi(e) : 1; }
CUresult cuDeviceGetCount(int* n) { if (!initialised) return NOT_INITIALIZED; *n = devices(); return OK; }
CUresult cuDeviceGet(int* d, int ordinal) { if (ordinal < 0 || ordinal >= devices()) return INVALID_VALUE; *d = ordinal; return OK; }
CUresult cuDeviceGetName(char* name, int len, int d) { snprintf(name, (size_t)len, "railcomm fake GPU %d (host memory)", d); return OK; }
CUresult cuDeviceGetAttribute(int* v, int attr, int d) {
  switch (attr) {
    case 16: *v = 4; break;           // SMs
    case 33: *v = 0x10 + d; break;    // PCI bus
    case 34: *v = 0; break;
    case 41: *v = 1; break;           // unified addressing
    case 50: *v = 0; break;
    case 75: *v = 9; break;
    case 76: *v = 0; break;
    default: *v = 0; break;
  }
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t* b, int d) { (void)d; *b = (size_t)1 << 34; return OK; }
CUresult cuDeviceCanAccessPeer(int* can, int a, int b) { (void)a; (void)b; *can = 1; return OK; }
static int ctx_token[16];
CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) { *ctx = &ctx_token[d & 15]; return OK; }
CUresult cuCtxSetCurrent(void* ctx) { current = ctx; return OK; }
CUresult cuCtxSynchronize(void) { return current ? OK : INVALID_CONTEXT; }
CUresult cuStreamCreate(void** s, unsigned int f) { (void)f; static int token; *s = &token; return current ? OK : INVALID_CONTEXT; }
CUresult cuStreamSynchronize(void* s) { (void)s; return OK; }

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  if (!current) return INVALID_CONTEXT;
  pthread_mutex_lock(&mu);
  struct region* r = slot();
  if (!r) { pthread_mutex_unlock(&mu); return 2; }
  unsigned long long id = next_id++;
  char name[32];
  snprintf(name, sizeof name, "/fakecuda-%d-%llu", (int)getpid(), id);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)n) != 0) { if (fd >= 0) close(fd); pthread_mutex_unlock(&mu); return 2; }
  void* m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) { shm_unlink(name); pthread_mutex_unlock(&mu); return 2; }
  memset(r, 0, sizeof *r);
  r->base = (uintptr_t)m; r->size = n; r->kind = 2; r->id = id;
  snprintf(r->name, sizeof r->name, "%s", name);
  *p = (CUdeviceptr)(uintptr_t)m;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  pthread_mutex_lock(&mu);
  struct region* r = find((uintptr_t)p);
  if (!r || r->kind != 2 || r->base != (uintptr_t)p) { pthread_mutex_unlock(&mu); return INVALID_VALUE; }
  munmap((void*)r->base, r->size);
  shm_unlink(r->name);
  r->kind = 0;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  pthread_mutex_lock(&mu);
  struct region* r = find((uintptr_t)p);
  CUresult rc = r && r->kind != 1 ? OK : NOT_FOUND;
  if (r) { if (base) *base = r->base; if (size) *size = r->size; }
  pthread_mutex_unlock(&mu);
  return rc;
}
CUresult cuMemHostAlloc(void** pp, size_t n, unsigned int f) {
  (void)f;
  void* m = NULL;
  if (posix_memalign(&m, 4096, n) != 0) return 2;
  pthread_mutex_lock(&mu);
  struct region* r = slot();
  if (r) { memset(r, 0, sizeof *r); r->base = (uintptr_t)m; r->size = n; r->kind = 1; r->id = next_id++; }
  pthread_mutex_unlock(&mu);
  *pp = m;
  return OK;
}
CUresult cuMemFreeHost(void* p) {
  pthread_mutex_lock(&mu);
  struct region* r = find((uintptr_t)p);
  if (r && r->kind == 1) r->kind = 0;
  pthread_mutex_unlock(&mu);
  free(p);
  return OK;
}
/* Every copy checks that its device side is memory the "driver" knows (a wild pointer is an error, not a crash). */
static int known(CUdeviceptr p, size_t n) {
  pthread_mutex_lock(&mu);
  struct region* r = find((uintptr_t)p);
  int ok = r && r->kind != 1 && (uintptr_t)p + n <= r->base + r->size;
  pthread_mutex_unlock(&mu);
  return ok;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) { (void)st; if (!known(d, n)) return INVALID_VALUE; memcpy((void*)(uintptr_t)d, s, n); return OK; }
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) { (void)st; if (!known(s, n)) return INVALID_VALUE; memcpy(d, (void*)(uintptr_t)s, n); return OK; }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) { (void)st; if (!known(d, n) || !known(s, n)) return INVALID_VALUE; memmove((void*)(uintptr_t)d, (void*)(uintptr_t)s, n); return OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { return cuMemcpyHtoDAsync_v2(d, s, n, NULL); }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { return cuMemcpyDtoHAsync_v2(d, s, n, NULL); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return cuMemcpyDtoDAsync_v2(d, s, n, NULL); }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void* st) { (void)st; if (!known(d, n)) return INVALID_VALUE; memset((void*)(uintptr_t)d, v, n); return OK; }

CUresult cuPointerGetAttribute(void* data, int attr, CUdeviceptr p) {
  pthread_mutex_lock(&mu);
  struct region* r = find((uintptr_t)p);
  CUresult rc = OK;
  if (!r) rc = INVALID_VALUE;
  else switch (attr) {
    case 2: *(unsigned*)data = r->kind == 1 ? 1u : 2u; break;
    case 7: *(unsigned long long*)data = r->id; break;
    case 8: *(unsigned*)data = 0; break;
    case 9: *(int*)data = 0; break;
    case 10: *(unsigned*)data = r->kind == 2 ? 1u : 0u; break;
    default: rc = INVALID_VALUE;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

CUresult cuIpcGetMemHandle(void* out, CUdeviceptr p) {
  pthread_mutex_lock(&mu);
  struct region* r = find((uintptr_t)p);
  if (!r || r->kind != 2 || r->base != (uintptr_t)p) { pthread_mutex_unlock(&mu); return INVALID_VALUE; }
  struct handle h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, "RCFAKE1", 8);
  h.pid = (int)getpid(); h.id = r->id; h.size = r->size;
  snprintf(h.name, sizeof h.name, "%s", r->name);
  memcpy(out, &h, sizeof h);
  pthread_mutex_unlock(&mu);
  return OK;
}
struct handle64 { char b[64]; };
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* p, struct handle64 hv, unsigned int f) {
  (void)f;
  struct handle h;
  memcpy(&h, hv.b, sizeof h);
  if (memcmp(h.magic, "RCFAKE1", 8) != 0) return INVALID_VALUE;
  if (h.pid == (int)getpid()) return INVALID_CONTEXT;  // as the driver: not in the process that made it
  pthread_mutex_lock(&mu);
  for (int i = 0; i < MAX_REGIONS; i++) {
    struct region* r = &regions[i];
    if (r->kind == 3 && r->owner_pid == h.pid && r->owner_id == h.id) { r->refs++; *p = r->base; pthread_mutex_unlock(&mu); return OK; }
  }
  int fd = shm_open(h.name, O_RDWR, 0);
  if (fd < 0) { pthread_mutex_unlock(&mu); return INVALID_HANDLE; }
  void* m = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  struct region* r = slot();
  if (m == MAP_FAILED || !r) { pthread_mutex_unlock(&mu); return INVALID_HANDLE; }
  memset(r, 0, sizeof *r);
  r->base = (uintptr_t)m; r->size = h.size; r->kind = 3; r->id = next_id++; r->refs = 1;
  r->owner_pid = h.pid; r->owner_id = h.id;
  *p = r->base;
  pthread_mutex_unlock(&mu);
  if (getenv("FAKECUDA_TRACE")) fprintf(stderr, "fakecuda %d: opened %s\n", (int)getpid(), h.name);
  return OK;
}
CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
  pthread_mutex_lock(&mu);
  struct region* r = find((uintptr_t)p);
  if (!r || r->kind != 3 || r->base != (uintptr_t)p) { pthread_mutex_unlock(&mu); return INVALID_VALUE; }
  if (--r->refs == 0) { munmap((void*)r->base, r->size); r->kind = 0; }
  pthread_mutex_unlock(&mu);
  return OK;
}

/* Modules: the PTX's entry names; a function is its op and element type, parsed from the name. */
struct module { int n; char names[64][64]; };
struct function { int op; int type; };
CUresult cuModuleLoadDataEx(void** mod, const void* image, unsigned int nopt, int* opts, void** vals) {
  (void)nopt; (void)opts; (void)vals;
  const char* ptx = (const char*)image;
  if (strstr(ptx, ".version") == NULL || strstr(ptx, ".target") == NULL) return 218;  // CUDA_ERROR_INVALID_PTX
  struct module* m = calloc(1, sizeof *m);
  for (const char* s = strstr(ptx, ".entry "); s != NULL && m->n < 64; s = strstr(s + 7, ".entry ")) {
    const char* b = s + 7;
    while (*b == ' ') b++;
    int i = 0;
    while (b[i] && b[i] != '(' && b[i] != ' ' && b[i] != '\n' && i < 63) { m->names[m->n][i] = b[i]; i++; }
    m->n++;
  }
  *mod = m;
  return OK;
}
static const char* OPS[] = {"sum", "prod", "min", "max"};
static const char* TYPES[] = {"f32", "f64", "i32", "u32", "i64", "u64"};
CUresult cuModuleGetFunction(void** fn, void* mod, const char* name) {
  struct module* m = mod;
  int found = 0;
  for (int i = 0; i < m->n; i++) if (strcmp(m->names[i], name) == 0) found = 1;
  if (!found) return NOT_FOUND;
  struct function* f = calloc(1, sizeof *f);
  f->op = f->type = -1;
  for (int i = 0; i < 4; i++) { char p[32]; snprintf(p, sizeof p, "_%s_", OPS[i]); if (strstr(name, p)) f->op = i; }
  for (int i = 0; i < 6; i++) { size_t l = strlen(name); if (l > 3 && strcmp(name + l - 3, TYPES[i]) == 0) f->type = i; }
  if (f->op < 0 || f->type < 0) { free(f); return NOT_FOUND; }
  *fn = f;
  return OK;
}
/* As native/cuda/reduce.cu: a NaN on either side wins min and max; integers wrap (computed unsigned, U). */
#define APPLY(T, U) { T* d = (T*)(uintptr_t)dst; const T* s = (const T*)(uintptr_t)src; \
  for (unsigned long long i = 0; i < n; i++) { T a = d[i], b = s[i]; \
    d[i] = f->op == 0 ? (T)((U)a + (U)b) : f->op == 1 ? (T)((U)a * (U)b) : f->op == 2 ? ((b < a || b != b) ? b : a) : ((b > a || b != b) ? b : a); } }
CUresult cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shm, void* stream, void** params, void** extra) {
  (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shm; (void)stream; (void)extra;
  struct function* f = fn;
  CUdeviceptr dst = *(CUdeviceptr*)params[0], src = *(CUdeviceptr*)params[1];
  unsigned long long n = *(unsigned long long*)params[2];
  size_t el = (f->type == 0 || f->type == 2 || f->type == 3) ? 4 : 8;
  if (n > 0 && (!known(dst, n * el) || !known(src, n * el))) return INVALID_VALUE;
  switch (f->type) {
    case 0: APPLY(float, float) break;
    case 1: APPLY(double, double) break;
    case 2: APPLY(int32_t, uint32_t) break;
    case 3: APPLY(uint32_t, uint32_t) break;
    case 4: APPLY(int64_t, uint64_t) break;
    case 5: APPLY(uint64_t, uint64_t) break;
  }
  return OK;
}

/* Remove what this process still has in /dev/shm when it exits normally. */
__attribute__((destructor)) static void cleanup(void) {
  for (int i = 0; i < MAX_REGIONS; i++) if (regions[i].kind == 2) shm_unlink(regions[i].name);
}
