/*
 * Baseline: MPI collective latency, for comparison with railcomm's collectives. For each size:
 * barrier, warm-up calls, then timed calls; each rank measures total/iters, and the reported
 * time is the average of that over all ranks (osu_allreduce style), gathered with MPI_Reduce.
 *
 * Size S is in bytes per rank:
 *   allreduce  MPI_DOUBLE, count max(1, S/8), MPI_SUM
 *   bcast      S bytes of MPI_BYTE from root 0
 *   allgather  S bytes of MPI_BYTE from each rank, S*ranks received
 *   alltoall   S bytes of MPI_BYTE to each rank, S*ranks sent and received
 *   barrier    no data (S only names the row)
 *
 * Usage: mpirun -n N ./coll allreduce|bcast|allgather|alltoall|barrier [--sizes 8,65536,1M]
 *                           [--label ompi-vader] [--iters N] [--warmup N] [--json] [--per-call]
 *
 * --per-call also times each call on its own (the clock read per call, as bench/coll-stalls.mjs
 * does for railcomm) and adds rank 0's median call and its slow calls (over 3x the median and
 * 20 us more: count, and the time they lost beyond the median) to each row: the C baseline's own tail.
 */
#include <limits.h>
#include <mpi.h>
#include "sizes.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}


enum coll { ALLREDUCE, BCAST, ALLGATHER, ALLTOALL, BARRIER };
static const char *coll_names[] = {"allreduce", "bcast", "allgather", "alltoall", "barrier"};

static const long default_sizes[] = {8, 64, 1024, 8192, 65536, 262144, 1048576};

struct options {
    enum coll coll;
    long sizes[MAX_SIZES];
    int nsizes;
    const char *label;
    int iters;  /* -1 = per-size default */
    int warmup; /* -1 = per-size default */
    int json;
    int per_call;
};

static void usage_and_exit(int rank, const char *msg) {
    if (rank == 0) {
        if (msg) fprintf(stderr, "coll: %s\n", msg);
        fprintf(stderr,
                "usage: coll allreduce|bcast|allgather|alltoall|barrier [--sizes 8,65536,1M] [--label NAME]\n"
                "            [--iters N] [--warmup N] [--json] [--per-call]\n");
    }
    MPI_Finalize();
    exit(msg ? 1 : 0);
}

static void parse_args(int argc, char **argv, int rank, struct options *o) {
    memset(o, 0, sizeof *o);
    o->iters = o->warmup = -1;
    o->label = "ompi-vader";
    if (argc < 2) usage_and_exit(rank, "missing collective");
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) usage_and_exit(rank, NULL);
    int found = 0;
    for (int c = 0; c < 5; c++)
        if (strcmp(argv[1], coll_names[c]) == 0) { o->coll = (enum coll)c; found = 1; }
    if (!found) usage_and_exit(rank, "collective must be allreduce, bcast, allgather, alltoall or barrier");

    o->nsizes = (int)(sizeof default_sizes / sizeof *default_sizes);
    memcpy(o->sizes, default_sizes, sizeof default_sizes);

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (strcmp(a, "--json") == 0) o->json = 1;
        else if (strcmp(a, "--per-call") == 0) o->per_call = 1;
        else if (strcmp(a, "--sizes") == 0 && has_val) {
            o->nsizes = parse_size_list(argv[++i], o->sizes);
            if (o->nsizes == -1) usage_and_exit(rank, "bad size in --sizes");
            if (o->nsizes == -2) usage_and_exit(rank, "too many sizes");
        } else if (strcmp(a, "--label") == 0 && has_val) o->label = argv[++i];
        else if (strcmp(a, "--iters") == 0 && has_val) o->iters = atoi(argv[++i]);
        else if (strcmp(a, "--warmup") == 0 && has_val) o->warmup = atoi(argv[++i]);
        else usage_and_exit(rank, "unknown or incomplete argument");
    }
    if (o->nsizes == 0) usage_and_exit(rank, "no sizes");
    if (o->iters == 0 || o->iters < -1) usage_and_exit(rank, "iters must be >= 1");
    if (o->warmup < -1) usage_and_exit(rank, "warmup must be >= 0");
}

/* 1000 / 100 / 20 timed calls for <= 8 KiB / < 1 MiB / >= 1 MiB; warm-up is a tenth of that. */
static void schedule(const struct options *o, long size, int *warmup, int *iters) {
    if (size <= 8192) *iters = 1000;
    else if (size < 1048576) *iters = 100;
    else *iters = 20;
    if (o->iters > 0) *iters = o->iters;
    *warmup = *iters / 10 > 2 ? *iters / 10 : 2;
    if (o->warmup >= 0) *warmup = o->warmup;
}

static void do_coll(enum coll c, long size, void *sbuf, void *rbuf) {
    switch (c) {
    case ALLREDUCE: {
        int count = size / 8 > 0 ? (int)(size / 8) : 1;
        MPI_Allreduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    }
    case BCAST:
        MPI_Bcast(sbuf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

int main(int argc, char **argv) {
    int rank, nranks;
    struct options o;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse_args(argc, argv, rank, &o);

    long max_size = 8;
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > max_size) max_size = o.sizes[i];
    if (max_size > INT_MAX || max_size * (long)nranks > INT_MAX) usage_and_exit(rank, "size too large");
    /* alltoall sends S bytes to each rank; allgather/alltoall receive S*ranks; allreduce needs
     * at least one double. Touch every page before timing. */
    size_t sbytes = (size_t)max_size * (o.coll == ALLTOALL ? (size_t)nranks : 1);
    size_t rbytes = (size_t)max_size * (size_t)nranks;
    char *sbuf = malloc(sbytes);
    char *rbuf = malloc(rbytes);
    if (!sbuf || !rbuf) usage_and_exit(rank, "out of memory");
    if (o.coll == ALLREDUCE) {
        double *d = (double *)sbuf;
        for (size_t i = 0; i < sbytes / sizeof(double); i++) d[i] = rank + 1.0;
    } else {
        memset(sbuf, 'a' + rank % 26, sbytes);
    }
    memset(rbuf, 0, rbytes);

    if (rank == 0) {
        if (o.json)
            printf("{\"benchmark\":\"%s\",\"rails\":\"%s\",\"ranks\":%d,\"results\":[", coll_names[o.coll],
                   o.label, nranks);
        else
            printf("# MPI_%s (%s), %d ranks; us per call, averaged over ranks (min/max: per-rank extremes)\n"
                   "# %10s %12s %12s %12s %8s\n",
                   coll_names[o.coll], o.label, nranks, "size", "avg us", "min us", "max us", "iters");
    }
    for (int s = 0; s < o.nsizes; s++) {
        long size = o.sizes[s];
        int warmup, iters;
        schedule(&o, size, &warmup, &iters);

        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < warmup; i++) do_coll(o.coll, size, sbuf, rbuf);
        double *each = o.per_call ? malloc(sizeof(double) * (size_t)iters) : NULL;
        if (o.per_call && !each) usage_and_exit(rank, "out of memory");
        double t0 = MPI_Wtime();
        if (each) {
            double t = t0;
            for (int i = 0; i < iters; i++) {
                do_coll(o.coll, size, sbuf, rbuf);
                double t1 = MPI_Wtime();
                each[i] = (t1 - t) * 1e6;
                t = t1;
            }
        } else {
            for (int i = 0; i < iters; i++) do_coll(o.coll, size, sbuf, rbuf);
        }
        double mine = (MPI_Wtime() - t0) / iters * 1e6;
        double med = 0.0, lost_us = 0.0;
        int slow = 0;
        if (each) {
            double *sorted = malloc(sizeof(double) * (size_t)iters);
            if (!sorted) usage_and_exit(rank, "out of memory");
            memcpy(sorted, each, sizeof(double) * (size_t)iters);
            qsort(sorted, (size_t)iters, sizeof(double), cmp_double);
            med = sorted[iters / 2];
            for (int i = 0; i < iters; i++)
                if (each[i] > 3 * med && each[i] > med + 20) { slow++; lost_us += each[i] - med; }
            free(sorted);
            free(each);
        }

        double sum = 0.0, lo = 0.0, hi = 0.0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double avg = sum / nranks;
            if (o.json && o.per_call)
                printf("%s{\"size\":%ld,\"usec\":%.2f,\"iters\":%d,\"usec_median\":%.3f,\"slow\":%d,\"lost_ms\":%.3f}",
                       s ? "," : "", size, avg, iters, med, slow, lost_us / 1000);
            else if (o.json)
                printf("%s{\"size\":%ld,\"usec\":%.2f,\"iters\":%d}", s ? "," : "", size, avg, iters);
            else
                printf("  %10ld %12.2f %12.2f %12.2f %8d\n", size, avg, lo, hi, iters);
            fflush(stdout);
        }
    }
    if (rank == 0 && o.json) printf("]}\n");
    fflush(stdout);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
