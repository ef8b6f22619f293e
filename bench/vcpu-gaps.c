// How often this machine takes a CPU away from a thread that never blocks,
// with no Node.js and no railcomm in the picture (a sysjitter-style probe):
// a thread pinned to CPU 0 reads the monotonic clock in a tight loop for
// SECONDS and records every gap between two reads longer than 5 us (an
// interrupt, the kernel's or the hypervisor's preemption), first with CPU 1
// idle, then with a process spinning on CPU 1 (what the peer of a spinning
// rank does). Prints one line of JSON per case: gaps per second by length and
// the time lost per second. Issue 18 asks which tails are the platform's.
//   cc -O2 -o bench/vcpu-gaps bench/vcpu-gaps.c && bench/vcpu-gaps [seconds]
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof s, &s);
}

static void probe(const char* label, double seconds) {
  // Buckets: 5-20 us, 20-100 us, 0.1-1 ms, 1-10 ms, over 10 ms.
  static const double edges[] = {5, 20, 100, 1000, 10000};
  long counts[5] = {0};
  double lost = 0, longest = 0;
  const double start = now_us(), end = start + seconds * 1e6;
  double last = start;
  for (;;) {
    const double t = now_us();
    const double gap = t - last;
    last = t;
    if (gap > edges[0]) {
      int b = 4;
      while (b > 0 && gap < edges[b]) b--;
      counts[b]++;
      lost += gap;
      if (gap > longest) longest = gap;
    }
    if (t >= end) break;
  }
  const double s = (last - start) / 1e6;
  printf("{\"case\":\"%s\",\"seconds\":%.2f,\"gaps_per_s\":{\"5-20us\":%.1f,\"20-100us\":%.1f,\"0.1-1ms\":%.1f,\"1-10ms\":%.1f,\"over10ms\":%.1f},"
         "\"lost_ms_per_s\":%.3f,\"longest_us\":%.0f}\n",
         label, s, counts[0] / s, counts[1] / s, counts[2] / s, counts[3] / s, counts[4] / s, lost / 1e3 / s, longest);
  fflush(stdout);
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 5;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || pin(0) != 0) {
    fprintf(stderr, "vcpu-gaps: needs CPUs 0 and 1\n");
    return 1;
  }
  probe("CPU 1 idle", seconds);
  const pid_t child = fork();
  if (child == 0) {
    pin(1);
    volatile unsigned long x = 0;
    for (;;) x++;
  }
  usleep(100000);
  probe("CPU 1 spinning", seconds);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
