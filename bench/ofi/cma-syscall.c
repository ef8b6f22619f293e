/*
 * What cross-memory attach costs on this kernel: an 8-byte process_vm_writev
 * into a child process, 200,000 times, 3 rounds, beside getppid (a syscall
 * that does nothing). The ofi rail's writes and reads to a peer on this host
 * over libfabric's shm provider are one such call each.
 *   make -C bench/ofi cma-syscall && bench/ofi/cma-syscall
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char target[4096];

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void) {
  pid_t child = fork();
  if (child == 0) for (;;) pause();
  char src[8] = "railcom";
  const int n = 200000;
  for (int r = 0; r < 3; r++) {
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
      struct iovec local = {src, 8}, remote = {target, 8};
      if (process_vm_writev(child, &local, 1, &remote, 1, 0) != 8) { perror("process_vm_writev"); kill(child, SIGKILL); return 1; }
    }
    double t1 = now_ns();
    for (int i = 0; i < n; i++) getppid();
    double t2 = now_ns();
    printf("process_vm_writev 8 B: %.3f us a call; getppid: %.3f us\n", (t1 - t0) / n / 1e3, (t2 - t1) / n / 1e3);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
