// The raw baseline for railcomm's GPU figures: the CUDA driver API alone, the
// copies railcomm makes (cuMemcpy*Async on a stream, then cuStreamSynchronize),
// timed the same way. Prints one JSON object per line.
//   memcpy            device-to-device copies: 8 B, 1 MiB, 64 MiB, 1 GiB (median per copy)
//   memcpy ipc        a child process opens this process's 1 GiB allocation through
//                     CUDA IPC: first open, a second open after closing, and copies from it
// Build (needs cuda.h; libcuda.so.1 is opened at run time, as railcomm does):
//   gcc -O2 -std=gnu11 -I/usr/local/cuda/include -o memcpy bench/gpu/memcpy.c -ldl
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SYM(name) static __typeof__(&name) p_##name;
SYM(cuInit) SYM(cuDeviceGet) SYM(cuDevicePrimaryCtxRetain) SYM(cuCtxSetCurrent) SYM(cuMemAlloc) SYM(cuMemFree)
SYM(cuMemcpyDtoDAsync) SYM(cuMemcpyHtoDAsync) SYM(cuMemcpyDtoHAsync) SYM(cuStreamCreate) SYM(cuStreamSynchronize)
SYM(cuIpcGetMemHandle) SYM(cuIpcOpenMemHandle) SYM(cuIpcCloseMemHandle) SYM(cuMemHostAlloc) SYM(cuGetErrorString)
#undef SYM

static void load(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) { fprintf(stderr, "memcpy: %s\n", dlerror()); exit(2); }
#define L(name, sym) p_##name = (__typeof__(p_##name))dlsym(h, sym); if (!p_##name) { fprintf(stderr, "memcpy: no %s\n", sym); exit(2); }
  L(cuInit, "cuInit") L(cuDeviceGet, "cuDeviceGet") L(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") L(cuCtxSetCurrent, "cuCtxSetCurrent")
  L(cuMemAlloc, "cuMemAlloc_v2") L(cuMemFree, "cuMemFree_v2") L(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")
  L(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") L(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
  L(cuStreamCreate, "cuStreamCreate") L(cuStreamSynchronize, "cuStreamSynchronize") L(cuIpcGetMemHandle, "cuIpcGetMemHandle")
  L(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2") L(cuIpcCloseMemHandle, "cuIpcCloseMemHandle") L(cuMemHostAlloc, "cuMemHostAlloc")
  L(cuGetErrorString, "cuGetErrorString")
#undef L
}

static void check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return;
  const char* s = "?";
  p_cuGetErrorString(rc, &s);
  fprintf(stderr, "memcpy: %s: %s\n", what, s);
  exit(1);
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y; }

static CUstream stream;

static void setup(void) {
  load();
  check(p_cuInit(0), "cuInit");
  CUdevice dev;
  check(p_cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(p_cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(p_cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  check(p_cuStreamCreate(&stream, CU_STREAM_DEFAULT), "cuStreamCreate");
}

/** Median microseconds of one device-to-device copy of n bytes (copy, then stream sync), over reps. */
static double dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, int reps) {
  double* t = malloc(sizeof(double) * reps);
  for (int i = 0; i < 3; i++) { check(p_cuMemcpyDtoDAsync(dst, src, n, stream), "copy"); check(p_cuStreamSynchronize(stream), "sync"); }
  for (int i = 0; i < reps; i++) {
    double t0 = now_us();
    check(p_cuMemcpyDtoDAsync(dst, src, n, stream), "copy");
    check(p_cuStreamSynchronize(stream), "sync");
    t[i] = now_us() - t0;
  }
  qsort(t, reps, sizeof(double), cmp);
  double m = t[reps / 2];
  free(t);
  return m;
}

static void copies(void) {
  const size_t big = (size_t)1 << 30;
  CUdeviceptr a, b;
  check(p_cuMemAlloc(&a, big), "cuMemAlloc");
  check(p_cuMemAlloc(&b, big), "cuMemAlloc");
  const struct { size_t n; int reps; } sizes[] = {{8, 2000}, {1 << 20, 500}, {64 << 20, 50}, {big, 15}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    double us = dtod(b, a, sizes[i].n, sizes[i].reps);
    printf("{\"what\":\"raw cuMemcpyDtoD\",\"bytes\":%zu,\"us\":%.2f,\"GBps\":%.1f}\n", sizes[i].n, us, sizes[i].n / us / 1e3);
  }
  // Small host<->device copies through pinned memory (what a staged 8-byte message pays twice).
  void* pinned;
  check(p_cuMemHostAlloc(&pinned, 4096, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  double t[1000];
  for (int i = 0; i < 1000; i++) {
    double t0 = now_us();
    check(p_cuMemcpyDtoHAsync(pinned, a, 8, stream), "DtoH");
    check(p_cuStreamSynchronize(stream), "sync");
    t[i] = now_us() - t0;
  }
  qsort(t, 1000, sizeof(double), cmp);
  printf("{\"what\":\"raw cuMemcpyDtoH pinned\",\"bytes\":8,\"us\":%.2f}\n", t[500]);
  for (int i = 0; i < 1000; i++) {
    double t0 = now_us();
    check(p_cuMemcpyHtoDAsync(a, pinned, 8, stream), "HtoD");
    check(p_cuStreamSynchronize(stream), "sync");
    t[i] = now_us() - t0;
  }
  qsort(t, 1000, sizeof(double), cmp);
  printf("{\"what\":\"raw cuMemcpyHtoD pinned\",\"bytes\":8,\"us\":%.2f}\n", t[500]);
  fflush(stdout);
}

static void ipc_parent(const char* self) {
  const size_t big = (size_t)1 << 30;
  CUdeviceptr a;
  check(p_cuMemAlloc(&a, big), "cuMemAlloc");
  double t0 = now_us();
  CUipcMemHandle h;
  check(p_cuIpcGetMemHandle(&h, a), "cuIpcGetMemHandle");
  double get = now_us() - t0;
  char hex[2 * CU_IPC_HANDLE_SIZE + 1];
  for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++) sprintf(hex + 2 * i, "%02x", (unsigned char)h.reserved[i]);
  printf("{\"what\":\"raw cuIpcGetMemHandle\",\"us\":%.1f}\n", get);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) { execl(self, self, "ipc-child", hex, (char*)NULL); _exit(127); }
  int st = 0;
  waitpid(pid, &st, 0);
  check(p_cuMemFree(a), "cuMemFree");
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { fprintf(stderr, "memcpy: the IPC child failed\n"); exit(1); }
}

static void ipc_child(const char* hex) {
  CUipcMemHandle h;
  for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++) { unsigned v; sscanf(hex + 2 * i, "%2x", &v); h.reserved[i] = (char)v; }
  const size_t big = (size_t)1 << 30;
  CUdeviceptr mine, theirs;
  check(p_cuMemAlloc(&mine, big), "cuMemAlloc");
  double t0 = now_us();
  check(p_cuIpcOpenMemHandle(&theirs, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
  double first = now_us() - t0;
  check(p_cuIpcCloseMemHandle(theirs), "cuIpcCloseMemHandle");
  t0 = now_us();
  check(p_cuIpcOpenMemHandle(&theirs, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
  double second = now_us() - t0;
  printf("{\"what\":\"raw cuIpcOpenMemHandle\",\"firstUs\":%.1f,\"againUs\":%.1f}\n", first, second);
  const size_t sizes[] = {8, 1 << 20, big};
  for (int i = 0; i < 3; i++) {
    double us = dtod(mine, theirs, sizes[i], sizes[i] == big ? 15 : 500);
    printf("{\"what\":\"raw copy from an IPC-opened allocation\",\"bytes\":%zu,\"us\":%.2f,\"GBps\":%.1f}\n", sizes[i], us, sizes[i] / us / 1e3);
  }
  fflush(stdout);
  check(p_cuIpcCloseMemHandle(theirs), "cuIpcCloseMemHandle");
}

int main(int argc, char** argv) {
  setup();
  if (argc > 2 && strcmp(argv[1], "ipc-child") == 0) ipc_child(argv[2]);
  else if (argc > 1 && strcmp(argv[1], "ipc") == 0) ipc_parent(argv[0]);
  else copies();
  return 0;
}
