/*
 * The floor under railcomm's ofi rail: raw libfabric between two processes on
 * one host (this one forks its peer), FI_EP_RDM on one provider, both sides
 * spinning on fi_cq_read (manual progress). Kinds:
 *   latency  osu_latency-style half round trip of fi_send/fi_recv (inject when it fits)
 *   bw       osu_bw-style windows of 64 sends then a 4-byte ack (MB/s = 10^6 B/s)
 *   rma      one-sided: put + remote completion (fi_write, FI_DELIVERY_COMPLETE),
 *            get (fi_read), fetch-and-add (fi_fetch_atomic, INT64), 1 MiB put bandwidth
 * Output: a table, or with --json one line like bench/mpi/pingpong.c's:
 *   {"benchmark":"latency","rails":"raw-ofi-shm","ranks":2,"results":[{"size":8,"usec":..,"usec_median":..,"iters":..}]}
 * Usage: ofi-bench latency|bw|rma [-p provider] [-d domain] [--sizes 8,1048576] [--iters N] [--json] [--wait-fd] [--tagged]
 *   --wait-fd: the completion queue with FI_WAIT_FD (as the ofi rail opens it, to sleep on), not FI_WAIT_NONE
 *   --tagged: latency and bw over the provider's tag matching (FI_TAGGED: fi_tsend/fi_tinject/fi_trecv,
 *             every receive posted for one exact 64-bit tag), not fi_send/fi_recv
 *   --cma-put: rma's 8 B put without FI_DELIVERY_COMPLETE, as the ofi rail writes to a peer shm
 *             reaches by cross-memory attach (complete when fi_writemsg returns; no target progress)
 *   (-p: "tcp;ofi_rxm" default; -d: lo for network providers)
 */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 32
#define WINDOW 64
#define MAX_MSG (4u << 20)

static const char *prov = "tcp;ofi_rxm", *dom = NULL;
static int json = 0, fixed_iters = -1, wait_fd = 0, tagged = 0, cma_put = 0;
/* The tag of every tagged message: a context, a source and a tag packed as railcomm would. */
#define TAG ((uint64_t)0x0001000200000007ull)
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fid_mr *mr;
static fi_addr_t peer;
static size_t inject_size;
static int virt_addr;
static uint8_t *buf, *rbuf;
static uint64_t peer_base, peer_key;

#define CHECK(x) do { int _r = (int)(x); if (_r) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, fi_strerror(-_r)); exit(1); } } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Wait for n completions (spinning). */
static void wait_cq(int n) {
  struct fi_cq_entry e[16];
  while (n > 0) {
    ssize_t r = fi_cq_read(cq, e, n < 16 ? n : 16);
    if (r > 0) { n -= (int)r; continue; }
    if (r == -FI_EAGAIN) continue;
    if (r == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      fi_cq_readerr(cq, &err, 0);
      fprintf(stderr, "completion error: %s\n", fi_strerror(err.err));
      exit(1);
    }
    fprintf(stderr, "fi_cq_read: %s\n", fi_strerror((int)-r));
    exit(1);
  }
}

static void post_recv(void *b, size_t len) {
  ssize_t r;
  if (tagged) while ((r = fi_trecv(ep, b, len, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL)) == -FI_EAGAIN) fi_cq_read(cq, NULL, 0);
  else while ((r = fi_recv(ep, b, len, NULL, FI_ADDR_UNSPEC, NULL)) == -FI_EAGAIN) fi_cq_read(cq, NULL, 0);
  CHECK(r);
}

/* One send (tagged or not), injected when it fits; true when it completes through the queue. */
static int start_send(void *b, size_t len) {
  ssize_t r;
  int inj = len <= inject_size;
  for (;;) {
    if (tagged) r = inj ? fi_tinject(ep, b, len, peer, TAG) : fi_tsend(ep, b, len, NULL, peer, TAG, NULL);
    else r = inj ? fi_inject(ep, b, len, peer) : fi_send(ep, b, len, NULL, peer, NULL);
    if (r != -FI_EAGAIN) break;
    fi_cq_read(cq, NULL, 0);
  }
  CHECK(r);
  return !inj;
}

static void send_msg(void *b, size_t len) {
  if (start_send(b, len)) wait_cq(1);
}

static void open_ep(void) {
  struct fi_info *hints = fi_allocinfo(), *info;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_RMA | FI_ATOMIC | (tagged ? FI_TAGGED : 0);
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  hints->fabric_attr->prov_name = strdup(prov);
  if (dom) hints->domain_attr->name = strdup(dom);
  CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
  CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
  CHECK(fi_domain(fabric, info, &domain, NULL));
  struct fi_av_attr aa = {.type = FI_AV_TABLE};
  CHECK(fi_av_open(domain, &aa, &av, NULL));
  struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = wait_fd ? FI_WAIT_FD : FI_WAIT_NONE};
  CHECK(fi_cq_open(domain, &ca, &cq, NULL));
  CHECK(fi_endpoint(domain, info, &ep, NULL));
  CHECK(fi_ep_bind(ep, &av->fid, 0));
  CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_enable(ep));
  inject_size = info->tx_attr->inject_size;
  int m = info->domain_attr->mr_mode;
  virt_addr = (m & FI_MR_VIRT_ADDR) || m == FI_MR_BASIC;
  buf = aligned_alloc(4096, MAX_MSG);
  rbuf = aligned_alloc(4096, MAX_MSG + 64);
  memset(buf, 1, MAX_MSG);
  memset(rbuf, 0, MAX_MSG + 64);
  CHECK(fi_mr_reg(domain, rbuf, MAX_MSG + 64, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, 0, 7, 0, &mr, NULL));
  fi_freeinfo(hints);
  fi_freeinfo(info);
}

/* What the peer needs: its address, our window's key and base. */
struct card { char name[256]; size_t len; uint64_t key, base; };

static int iters_for(long size, int small, int mid, int large) {
  if (fixed_iters > 0) return fixed_iters;
  return size <= 8192 ? small : size < (1 << 20) ? mid : large;
}

static int cmp_d(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static void emit_head(const char *kind) {
  if (json) printf("{\"benchmark\":\"%s\",\"rails\":\"raw-ofi-%s%s\",\"ranks\":2,\"results\":[", kind, prov, tagged ? "-tagged" : "");
  else printf("# raw libfabric %s over %s%s, 2 processes\n", kind, prov, tagged ? " (tagged)" : "");
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: ofi-bench latency|bw|rma [-p provider] [-d domain] [--sizes a,b] [--iters N] [--json] [--wait-fd] [--tagged] [--cma-put]\n"); return 1; }
  const char *kind = argv[1];
  long sizes[MAX_SIZES];
  int nsizes = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "-p") && i + 1 < argc) prov = argv[++i];
    else if (!strcmp(argv[i], "-d") && i + 1 < argc) dom = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--wait-fd")) wait_fd = 1;
    else if (!strcmp(argv[i], "--tagged")) tagged = 1;
    else if (!strcmp(argv[i], "--cma-put")) cma_put = 1;
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) fixed_iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
      for (char *s = strtok(argv[++i], ","); s && nsizes < MAX_SIZES; s = strtok(NULL, ",")) sizes[nsizes++] = atol(s);
    }
  }
  if (!dom && strcmp(prov, "shm") != 0) dom = "lo";
  if (nsizes == 0) { sizes[0] = 8; sizes[1] = 1 << 20; nsizes = 2; }
  for (int i = 0; i < nsizes; i++) if (sizes[i] > (long)MAX_MSG) { fprintf(stderr, "size %ld above %u\n", sizes[i], MAX_MSG); return 1; }

  int up[2], down[2];
  if (pipe(up) || pipe(down)) return 1;
  pid_t child = fork();
  int me = child == 0 ? 1 : 0;
  open_ep();
  struct card mine = {0}, theirs;
  mine.len = sizeof mine.name;
  CHECK(fi_getname(&ep->fid, mine.name, &mine.len));
  mine.key = fi_mr_key(mr);
  mine.base = (uint64_t)(uintptr_t)rbuf;
  if (write(me ? up[1] : down[1], &mine, sizeof mine) != sizeof mine) return 1;
  if (read(me ? down[0] : up[0], &theirs, sizeof theirs) != sizeof theirs) return 1;
  if (fi_av_insert(av, theirs.name, 1, &peer, 0, NULL) != 1) { fprintf(stderr, "fi_av_insert failed\n"); return 1; }
  peer_key = theirs.key;
  peer_base = virt_addr ? theirs.base : 0;

  /* Handshake (shm wants each side's progress before the first message goes). */
  post_recv(rbuf, MAX_MSG);
  send_msg(buf, 4);
  wait_cq(1);

  if (!strcmp(kind, "latency")) {
    if (me == 0) emit_head("latency");
    for (int s = 0; s < nsizes; s++) {
      long size = sizes[s];
      int iters = iters_for(size, 2000, 200, 50), warm = iters / 10 + 2;
      double *t = malloc(sizeof(double) * iters), total = 0;
      for (int i = -warm; i < iters; i++) {
        double t0 = now_us();
        if (me == 0) { post_recv(rbuf, MAX_MSG); send_msg(buf, size); wait_cq(1); }
        else { post_recv(rbuf, MAX_MSG); wait_cq(1); send_msg(buf, size); }
        double dt = (now_us() - t0) / 2;
        if (i >= 0) { t[i] = dt; total += dt; }
      }
      qsort(t, iters, sizeof(double), cmp_d);
      if (me == 0) {
        if (json) printf("%s{\"size\":%ld,\"usec\":%.2f,\"usec_median\":%.2f,\"iters\":%d}", s ? "," : "", size, total / iters, t[iters / 2], iters);
        else printf("  %10ld bytes %10.2f us (median %.2f, %d iterations)\n", size, total / iters, t[iters / 2], iters);
      }
      free(t);
    }
  } else if (!strcmp(kind, "bw")) {
    if (me == 0) emit_head("bw");
    for (int s = 0; s < nsizes; s++) {
      long size = sizes[s];
      int windows = iters_for(size, 100, 20, 10), warm = 2;
      double t0 = 0;
      for (int w = -warm; w < windows; w++) {
        if (w == 0) t0 = now_us();
        if (me == 0) {
          post_recv(rbuf, 64);
          for (int k = 0; k < WINDOW; k++) start_send(buf, size);
          wait_cq((size_t)size <= inject_size ? 1 : WINDOW + 1);
        } else {
          /* One receive buffer per message of the window (the provider fills them in order). */
          for (int k = 0; k < WINDOW; k++) post_recv(rbuf, size);
          wait_cq(WINDOW);
          send_msg(buf, 4);
        }
      }
      double secs = (now_us() - t0) / 1e6;
      if (me == 0) {
        double mbps = (double)size * WINDOW * windows / secs / 1e6;
        if (json) printf("%s{\"size\":%ld,\"mbps\":%.2f,\"windows\":%d}", s ? "," : "", size, mbps, windows);
        else printf("  %10ld bytes %10.2f MB/s (%d windows of %d)\n", size, mbps, windows, WINDOW);
      }
    }
  } else if (!strcmp(kind, "rma")) {
    /* Rank 0 drives; rank 1 only progresses its queue (manual progress) until told to stop. */
    if (me == 0) {
      int iters = fixed_iters > 0 ? fixed_iters : 2000;
      double put = 0, get = 0, fadd = 0;
      for (int i = -100; i < iters; i++) {
        double t0 = now_us();
        struct iovec iov = {buf, 8};
        struct fi_rma_iov rma = {peer_base, 8, peer_key};
        struct fi_msg_rma m = {.msg_iov = &iov, .iov_count = 1, .addr = peer, .rma_iov = &rma, .rma_iov_count = 1};
        ssize_t r;
        while ((r = fi_writemsg(ep, &m, FI_COMPLETION | (cma_put ? 0 : FI_DELIVERY_COMPLETE))) == -FI_EAGAIN) fi_cq_read(cq, NULL, 0);
        CHECK(r);
        wait_cq(1);
        double t1 = now_us();
        while ((r = fi_read(ep, buf + 64, 8, NULL, peer, peer_base, peer_key, NULL)) == -FI_EAGAIN) fi_cq_read(cq, NULL, 0);
        CHECK(r);
        wait_cq(1);
        double t2 = now_us();
        int64_t one = 1, old = 0;
        while ((r = fi_fetch_atomic(ep, &one, 1, NULL, &old, NULL, peer, peer_base + 128, peer_key, FI_INT64, FI_SUM, NULL)) == -FI_EAGAIN) fi_cq_read(cq, NULL, 0);
        CHECK(r);
        wait_cq(1);
        double t3 = now_us();
        if (i >= 0) { put += t1 - t0; get += t2 - t1; fadd += t3 - t2; }
      }
      /* 1 MiB puts, 16 at a time, then remote completion of all. */
      size_t big = 1 << 20;
      int rounds = fixed_iters > 0 ? fixed_iters : 50;
      double tb = 0;
      for (int i = -2; i < rounds; i++) {
        double t0 = now_us();
        for (int k = 0; k < 16; k++) {
          struct iovec iov = {buf, big};
          struct fi_rma_iov rma = {peer_base, big, peer_key};
          struct fi_msg_rma m = {.msg_iov = &iov, .iov_count = 1, .addr = peer, .rma_iov = &rma, .rma_iov_count = 1};
          ssize_t r;
          while ((r = fi_writemsg(ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE)) == -FI_EAGAIN) fi_cq_read(cq, NULL, 0);
          CHECK(r);
        }
        wait_cq(16);
        if (i >= 0) tb += now_us() - t0;
      }
      double mbps = (double)big * 16 * rounds / (tb / 1e6) / 1e6;
      send_msg(buf, 4); /* stop */
      if (json) printf("{\"benchmark\":\"rma\",\"rails\":\"raw-ofi-%s\",\"ranks\":2,\"results\":[{\"op\":\"put+flush\",\"size\":8,\"usec\":%.2f},{\"op\":\"get\",\"size\":8,\"usec\":%.2f},{\"op\":\"fetch-add\",\"size\":8,\"usec\":%.2f},{\"op\":\"put\",\"size\":%zu,\"mbps\":%.2f}]}\n",
                      prov, put / iters, get / iters, fadd / iters, big, mbps);
      else printf("# raw libfabric one-sided over %s\n  put+flush 8 B %8.2f us\n  get 8 B       %8.2f us\n  fetch-add     %8.2f us\n  put 1 MiB     %8.2f MB/s\n", prov, put / iters, get / iters, fadd / iters, mbps);
    } else {
      post_recv(rbuf + MAX_MSG - 64, 64);
      wait_cq(1);
    }
  } else {
    fprintf(stderr, "unknown kind %s\n", kind);
    return 1;
  }
  if (me == 0 && json && strcmp(kind, "rma") != 0) printf("]}\n");
  else if (me == 0 && !json) fflush(stdout);
  fflush(stdout);
  /* Both sides done before either closes (shm and tcp drop what the peer has not read). */
  char c = 0;
  if (write(me ? up[1] : down[1], &c, 1) != 1 || read(me ? down[0] : up[0], &c, 1) != 1) return 1;
  fi_close(&ep->fid); fi_close(&mr->fid); fi_close(&cq->fid); fi_close(&av->fid); fi_close(&domain->fid); fi_close(&fabric->fid);
  if (child > 0) waitpid(child, NULL, 0);
  return 0;
}
