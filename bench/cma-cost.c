// What a cross-memory-attach write costs on this machine, beside a trivial
// syscall: process_vm_writev of 8 bytes into a forked child, 200,000 times,
// then getppid as often; three rounds. The ofi rail writes small puts to a
// peer on this host this way (libfabric's shm provider over CMA), so this is
// the floor of such a put here (bench/RESULTS.md, the ofi small-message section).
//   cc -O2 -o bench/cma-cost bench/cma-cost.c && bench/cma-cost
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
  static char target[64];
  const pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  usleep(50000);
  char bytes[8] = {1};
  struct iovec local = {bytes, sizeof bytes}, remote = {target, sizeof bytes};
  const int n = 200000;
  for (int round = 0; round < 3; round++) {
    double t = now_us();
    for (int i = 0; i < n; i++) {
      if (process_vm_writev(child, &local, 1, &remote, 1, 0) != (ssize_t)sizeof bytes) { perror("process_vm_writev"); kill(child, SIGKILL); return 1; }
    }
    const double cma = (now_us() - t) / n;
    t = now_us();
    for (int i = 0; i < n; i++) getppid();
    printf("{\"process_vm_writev_8B_us\":%.3f,\"getppid_us\":%.3f}\n", cma, (now_us() - t) / n);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
