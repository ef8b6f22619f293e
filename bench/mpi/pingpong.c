/*
 * Baseline: MPI point-to-point latency and bandwidth between 2 ranks, for comparison with
 * railcomm. `latency` is an osu_latency-style half round trip; `bw` is osu_bw-style windows of
 * 64 MPI_Isend / MPI_Irecv followed by a 4-byte ack. Output: one JSON line per run (--json).
 *
 * Usage: mpirun -n 2 ./pingpong latency|bw [--sizes 8,1048576] [--label ompi-tcp]
 *                               [--iters N] [--warmup N] [--window 64] [--json]
 */
#include <mpi.h>
#include "sizes.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_DATA 1
#define TAG_ACK 2

static const long latency_sizes[] = {0, 8, 64, 512, 4096, 65536, 1048576, 4194304};
static const long bw_sizes[] = {8, 1024, 65536, 1048576, 4194304};

struct options {
    int bw; /* 0 = latency, 1 = bw */
    long sizes[MAX_SIZES];
    int nsizes;
    const char *label;
    int iters;  /* -1 = per-size default */
    int warmup; /* -1 = per-size default */
    int window;
    int json;
};

static void usage_and_exit(int rank, const char *msg) {
    if (rank == 0) {
        if (msg) fprintf(stderr, "pingpong: %s\n", msg);
        fprintf(stderr,
                "usage: pingpong latency|bw [--sizes 8,1048576] [--label NAME] [--iters N]\n"
                "                [--warmup N] [--window 64] [--json]\n");
    }
    MPI_Finalize();
    exit(msg ? 1 : 0);
}

static void parse_args(int argc, char **argv, int rank, struct options *o) {
    memset(o, 0, sizeof *o);
    o->iters = o->warmup = -1;
    o->window = 64;
    o->label = "ompi-tcp";
    if (argc < 2) usage_and_exit(rank, "missing mode");
    if (strcmp(argv[1], "latency") == 0) o->bw = 0;
    else if (strcmp(argv[1], "bw") == 0) o->bw = 1;
    else if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) usage_and_exit(rank, NULL);
    else usage_and_exit(rank, "mode must be latency or bw");

    const long *def = o->bw ? bw_sizes : latency_sizes;
    o->nsizes = o->bw ? (int)(sizeof bw_sizes / sizeof *bw_sizes)
                      : (int)(sizeof latency_sizes / sizeof *latency_sizes);
    memcpy(o->sizes, def, o->nsizes * sizeof(long));

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (strcmp(a, "--json") == 0) o->json = 1;
        else if (strcmp(a, "--sizes") == 0 && has_val) {
            o->nsizes = parse_size_list(argv[++i], o->sizes);
            if (o->nsizes == -1) usage_and_exit(rank, "bad size in --sizes");
            if (o->nsizes == -2) usage_and_exit(rank, "too many sizes");
        } else if (strcmp(a, "--label") == 0 && has_val) o->label = argv[++i];
        else if (strcmp(a, "--iters") == 0 && has_val) o->iters = atoi(argv[++i]);
        else if (strcmp(a, "--warmup") == 0 && has_val) o->warmup = atoi(argv[++i]);
        else if (strcmp(a, "--window") == 0 && has_val) o->window = atoi(argv[++i]);
        else usage_and_exit(rank, "unknown or incomplete argument");
    }
    if (o->nsizes == 0) usage_and_exit(rank, "no sizes");
    if (o->window < 1) usage_and_exit(rank, "window must be >= 1");
    if (o->iters == 0 || o->iters < -1) usage_and_exit(rank, "iters must be >= 1");
}

/* Same schedules as bench/raw-tcp-pingpong.mjs and bench/raw-tcp-stream.mjs. */
static void schedule(const struct options *o, long size, int *warmup, int *iters) {
    if (!o->bw) {
        if (size <= 8192) { *warmup = 200; *iters = 2000; }
        else if (size < 1048576) { *warmup = 20; *iters = 200; }
        else { *warmup = 5; *iters = 50; }
    } else {
        if (size <= 8192) { *warmup = 10; *iters = 100; }
        else if (size < 1048576) { *warmup = 2; *iters = 20; }
        else { *warmup = 2; *iters = 10; }
    }
    if (o->warmup >= 0) *warmup = o->warmup;
    if (o->iters > 0) *iters = o->iters;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Returns mean half round trip in us; *median_us gets the median one, and up to 8 KiB *batch_us the
 * median of batch averages and *batch_avg_us their mean (the average over 20,000 round trips with
 * the clock read once per batch, as osu_latency reads it once per run). Meaningful on rank 0. */
#define BATCH 100
#define BATCHES 200

static double run_latency(int rank, char *buf, long size, int warmup, int iters, double *median_us, double *batch_us, double *batch_avg_us) {
    int peer = 1 - rank;
    double *rtt = malloc(sizeof(double) * iters);
    double t_start = 0.0, t0 = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < warmup + iters; i++) {
        if (i == warmup) t_start = MPI_Wtime();
        if (rank == 0) {
            t0 = MPI_Wtime();
            MPI_Send(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= warmup) rtt[i - warmup] = MPI_Wtime() - t0;
        } else {
            MPI_Recv(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
        }
    }
    double total = MPI_Wtime() - t_start;
    *median_us = 0.0;
    if (rank == 0) {
        qsort(rtt, iters, sizeof(double), cmp_double);
        *median_us = rtt[iters / 2] / 2.0 * 1e6;
    }
    free(rtt);
    *batch_us = 0.0;
    *batch_avg_us = 0.0;
    if (size <= 8192) {
        /* The median of batch averages, the clock read once per BATCH round trips (as railcomm's
         * usec_batch): a clock read per round trip is a fifth of an 8-byte one here. */
        double *bt = malloc(sizeof(double) * BATCHES);
        for (int b = 0; b < BATCHES; b++) {
            double b0 = MPI_Wtime();
            for (int k = 0; k < BATCH; k++) {
                if (rank == 0) {
                    MPI_Send(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
                }
            }
            bt[b] = (MPI_Wtime() - b0) / BATCH / 2.0 * 1e6;
        }
        double sum = 0.0;
        for (int b = 0; b < BATCHES; b++) sum += bt[b];
        *batch_avg_us = sum / BATCHES;
        qsort(bt, BATCHES, sizeof(double), cmp_double);
        *batch_us = bt[BATCHES / 2];
        free(bt);
    }
    return total / iters / 2.0 * 1e6;
}

/* Returns MB/s (10^6 bytes/s) measured by rank 0 (sender). All requests in a window use the
 * same buffer, as osu_bw does; only the timing matters, not the contents. */
static double run_bw(int rank, char *buf, long size, int window, int warmup, int iters) {
    int peer = 1 - rank;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * window);
    char ack[4] = {0};
    double t_start = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < warmup + iters; i++) {
        if (i == warmup) t_start = MPI_Wtime();
        if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[w]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++)
                MPI_Irecv(buf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[w]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    double total = MPI_Wtime() - t_start;
    free(reqs);
    return (double)size * window * iters / total / 1e6;
}

int main(int argc, char **argv) {
    int rank, nranks;
    struct options o;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse_args(argc, argv, rank, &o);
    if (nranks != 2) usage_and_exit(rank, "run with exactly 2 ranks (mpirun -n 2)");

    long max_size = 1;
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > max_size) max_size = o.sizes[i];
    if (max_size > 0x7fffffffL) usage_and_exit(rank, "size too large");
    char *buf = malloc(max_size);
    memset(buf, rank ? 'b' : 'a', max_size);

    if (rank == 0) {
        if (o.json)
            printf("{\"benchmark\":\"%s\",\"rails\":\"%s\",\"ranks\":2,\"results\":[", o.bw ? "bw" : "latency",
                   o.label);
        else
            printf("# MPI %s (%s), 2 ranks\n# %10s %12s %12s %8s\n", o.bw ? "bandwidth" : "latency", o.label,
                   "size", o.bw ? "MB/s" : "avg us", o.bw ? "" : "median us", o.bw ? "windows" : "iters");
    }
    for (int s = 0; s < o.nsizes; s++) {
        long size = o.sizes[s];
        int warmup, iters;
        schedule(&o, size, &warmup, &iters);
        if (!o.bw) {
            double median = 0.0, batch = 0.0, batch_avg = 0.0;
            double usec = run_latency(rank, buf, size, warmup, iters, &median, &batch, &batch_avg);
            if (rank == 0) {
                if (o.json)
                    printf("%s{\"size\":%ld,\"usec\":%.2f,\"usec_median\":%.2f,\"usec_batch\":%.3f,\"usec_batch_avg\":%.3f,\"iters\":%d}", s ? "," : "",
                           size, usec, median, batch, batch_avg, iters);
                else
                    printf("  %10ld %12.2f %12.2f %8d\n", size, usec, median, iters);
            }
        } else {
            double mbps = run_bw(rank, buf, size, o.window, warmup, iters);
            if (rank == 0) {
                if (o.json)
                    printf("%s{\"size\":%ld,\"mbps\":%.2f,\"windows\":%d}", s ? "," : "", size, mbps, iters);
                else
                    printf("  %10ld %12.2f %12s %8d\n", size, mbps, "", iters);
            }
        }
        fflush(stdout);
    }
    if (rank == 0 && o.json) printf("]}\n");
    fflush(stdout);
    free(buf);
    MPI_Finalize();
    return 0;
}
