/*
 * Baseline: MPI one-sided (RMA) latency, bandwidth and atomics between 2 ranks, for comparison
 * with railcomm. osu_put_latency / osu_get_latency / osu_put_bw / osu_get_bw / osu_atomic_latency
 * style: rank 0 is the origin, rank 1 the target, the window comes from MPI_Win_allocate and rank 0
 * holds one MPI_Win_lock(MPI_LOCK_SHARED, 1) epoch for the whole test (warm-up included); rank 1
 * only waits in MPI_Barrier.
 *
 *   put, get     MPI_Put / MPI_Get of S bytes + MPI_Win_flush(1); avg and median us per op, and up
 *                to 8 KiB the median of per-batch averages (usec_batch, no clock read per op)
 *   putbw, getbw windows of --window (64) puts / gets to consecutive target offsets, then one
 *                flush; MB/s = 10^6 bytes/s
 *   fadd         MPI_Fetch_and_op(MPI_SUM, MPI_INT64_T) + flush; us per op and ops/s, and usec_batch
 *                as for put and get
 *   cas          MPI_Compare_and_swap(MPI_INT64_T) + flush; us per op and ops/s
 *   all          every one of the above, in that order
 *
 * fadd/cas always use 8 bytes (--sizes is ignored for them). The results are checked (the target
 * sees the put data, the origin the got data, the fetch-add sum and every CAS succeeds); a failed
 * check is reported on stderr and makes the exit status 1.
 *
 * Usage: mpirun -n 2 ./osc put|get|putbw|getbw|fadd|cas|all [--sizes 8,1M] [--label ompi-vader]
 *                         [--iters N] [--warmup N] [--window 64] [--json] [--create]
 *        (--create: the window from MPI_Win_create over malloc'd memory)
 *        (-t MODE, -s, -i, -w are short forms of the mode, --sizes, --iters, --warmup)
 */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include "sizes.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum test { PUT, GET, PUTBW, GETBW, FADD, CAS, NTESTS };
static const char *test_names[] = {"put", "get", "putbw", "getbw", "fadd", "cas"};
static const char *test_titles[] = {"MPI_Put latency",   "MPI_Get latency",          "MPI_Put bandwidth",
                                    "MPI_Get bandwidth", "MPI_Fetch_and_op latency", "MPI_Compare_and_swap latency"};

static const long latency_sizes[] = {8};
static const long bw_sizes[] = {8, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304};

/* Bandwidth windows use distinct target offsets (as osu_put_bw does) up to this many bytes, then
 * wrap around, so 4 MiB x 64 does not need a 256 MiB window. */
#define MAX_WINDOW_BYTES (64L * 1048576L)

struct options {
    int all;
    enum test test;
    long sizes[MAX_SIZES];
    int nsizes; /* 0 = per-test default */
    const char *label;
    int iters;  /* -1 = per-size default */
    int warmup; /* -1 = per-size default */
    int window;
    int json;
    int create; /* --create: MPI_Win_create over malloc'd memory instead of MPI_Win_allocate */
};

static void usage_and_exit(int rank, const char *msg) {
    if (rank == 0) {
        if (msg) fprintf(stderr, "osc: %s\n", msg);
        fprintf(stderr,
                "usage: osc put|get|putbw|getbw|fadd|cas|all [--sizes 8,1048576] [--label NAME]\n"
                "           [--iters N] [--warmup N] [--window 64] [--json] [--create]\n"
                "       (-t MODE, -s SIZES, -i N, -w N are short forms)\n");
    }
    MPI_Finalize();
    exit(msg ? 1 : 0);
}

static void set_mode(int rank, struct options *o, const char *m, int *have_mode) {
    if (*have_mode) usage_and_exit(rank, "mode given twice");
    *have_mode = 1;
    if (strcmp(m, "all") == 0) { o->all = 1; return; }
    for (int t = 0; t < NTESTS; t++)
        if (strcmp(m, test_names[t]) == 0) { o->test = (enum test)t; return; }
    usage_and_exit(rank, "mode must be put, get, putbw, getbw, fadd, cas or all");
}

static void parse_args(int argc, char **argv, int rank, struct options *o) {
    memset(o, 0, sizeof *o);
    o->iters = o->warmup = -1;
    o->window = 64;
    o->label = "ompi-vader";
    int have_mode = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) usage_and_exit(rank, NULL);
        else if (strcmp(a, "--json") == 0) o->json = 1;
        else if (strcmp(a, "--create") == 0) o->create = 1;
        else if (strcmp(a, "-t") == 0 && has_val) set_mode(rank, o, argv[++i], &have_mode);
        else if ((strcmp(a, "--sizes") == 0 || strcmp(a, "-s") == 0) && has_val) {
            o->nsizes = parse_size_list(argv[++i], o->sizes);
            if (o->nsizes == -1) usage_and_exit(rank, "bad size in --sizes");
            if (o->nsizes == -2) usage_and_exit(rank, "too many sizes");
            if (o->nsizes == 0) usage_and_exit(rank, "no sizes");
        } else if (strcmp(a, "--label") == 0 && has_val) o->label = argv[++i];
        else if ((strcmp(a, "--iters") == 0 || strcmp(a, "-i") == 0) && has_val) o->iters = atoi(argv[++i]);
        else if ((strcmp(a, "--warmup") == 0 || strcmp(a, "-w") == 0) && has_val) o->warmup = atoi(argv[++i]);
        else if (strcmp(a, "--window") == 0 && has_val) o->window = atoi(argv[++i]);
        else if (a[0] != '-') set_mode(rank, o, a, &have_mode);
        else usage_and_exit(rank, "unknown or incomplete argument");
    }
    if (!have_mode) usage_and_exit(rank, "missing mode");
    if (o->window < 1) usage_and_exit(rank, "window must be >= 1");
    if (o->iters == 0 || o->iters < -1) usage_and_exit(rank, "iters must be >= 1");
    if (o->warmup < -1) usage_and_exit(rank, "warmup must be >= 0");
}

static int is_bw(enum test t) { return t == PUTBW || t == GETBW; }
static int is_atomic(enum test t) { return t == FADD || t == CAS; }

/* The sizes one test runs: fadd/cas always 8; otherwise --sizes or the latency/bw default. */
static int test_sizes(const struct options *o, enum test t, const long **sizes) {
    static const long atomic_size[] = {8};
    if (is_atomic(t)) { *sizes = atomic_size; return 1; }
    if (o->nsizes > 0) { *sizes = o->sizes; return o->nsizes; }
    if (is_bw(t)) { *sizes = bw_sizes; return (int)(sizeof bw_sizes / sizeof *bw_sizes); }
    *sizes = latency_sizes;
    return (int)(sizeof latency_sizes / sizeof *latency_sizes);
}

/* Same schedules as bench/mpi/pingpong.c (latency: 2000 / 200 / 50 timed iterations for <= 8 KiB /
 * < 1 MiB / >= 1 MiB; bandwidth: 100 / 20 / 10 windows). */
static void schedule(const struct options *o, enum test t, long size, int *warmup, int *iters) {
    if (!is_bw(t)) {
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

/* The target's window memory, read or written by the target itself inside a lock on its own
 * rank so that the RMA and the local accesses are ordered in either memory model. */
static void target_fill(MPI_Win win, char *base, long nbytes, int c) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    memset(base, c, nbytes);
    MPI_Win_unlock(1, win);
}

static int check_bytes(const char *buf, long n, int c) {
    for (long i = 0; i < n; i++)
        if (buf[i] != (char)c) return 0;
    return 1;
}

/* Small puts, gets and fetch-adds are also timed in BATCHES batches of BATCH operations, with no clock read
 * per operation, as railcomm's `bench put|get` times them: a clock read costs about as much as
 * an 8-byte put here. */
#define BATCH 100
#define BATCHES 500

struct result {
    double usec, usec_median; /* latency and atomics */
    double usec_batch;        /* put, get up to 8 KiB: median of per-batch averages (0: not measured) */
    double mbps;              /* bandwidth */
    int ok;
};

/* One (test, size) run; the figures are meaningful on rank 0, ok on both ranks. */
static struct result run_one(int rank, enum test t, long size, int warmup, int iters, int window, MPI_Win win,
                             char *base, char *obuf, long slots) {
    struct result r = {0.0, 0.0, 0.0, 0.0, 1};
    int n = warmup + iters;
    long span = is_bw(t) ? (size > 0 ? slots * size : 0) : size;
    if (is_atomic(t)) span = sizeof(int64_t);

    /* Known contents before the test: target window 'b' (or 0 for atomics), origin buffer 'a'. */
    if (rank == 1) {
        if (is_atomic(t)) target_fill(win, base, sizeof(int64_t), 0);
        else target_fill(win, base, span, 'b');
    } else {
        memset(obuf, 'a', span);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        double *lat = is_bw(t) ? NULL : malloc(sizeof(double) * iters);
        double t_start = 0.0, t0 = 0.0;
        int64_t one = 1, fetched = -1, compare = 0, swap = 0;
        long cas_failures = 0;
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (int i = 0; i < n; i++) {
            if (i == warmup) t_start = MPI_Wtime();
            t0 = MPI_Wtime();
            switch (t) {
            case PUT:
                MPI_Put(obuf, (int)size, MPI_CHAR, 1, 0, (int)size, MPI_CHAR, win);
                break;
            case GET:
                MPI_Get(obuf, (int)size, MPI_CHAR, 1, 0, (int)size, MPI_CHAR, win);
                break;
            case PUTBW:
                for (int w = 0; w < window; w++) {
                    MPI_Aint off = (MPI_Aint)(w % slots) * size;
                    MPI_Put(obuf + off, (int)size, MPI_CHAR, 1, off, (int)size, MPI_CHAR, win);
                }
                break;
            case GETBW:
                for (int w = 0; w < window; w++) {
                    MPI_Aint off = (MPI_Aint)(w % slots) * size;
                    MPI_Get(obuf + off, (int)size, MPI_CHAR, 1, off, (int)size, MPI_CHAR, win);
                }
                break;
            case FADD:
                MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, 1, 0, MPI_SUM, win);
                break;
            case CAS:
                compare = i;
                swap = i + 1;
                MPI_Compare_and_swap(&swap, &compare, &fetched, MPI_INT64_T, 1, 0, win);
                break;
            default:
                break;
            }
            MPI_Win_flush(1, win);
            if (t == CAS && fetched != compare) cas_failures++;
            if (lat && i >= warmup) lat[i - warmup] = MPI_Wtime() - t0;
        }
        double total = MPI_Wtime() - t_start;
        if ((t == PUT || t == GET || t == FADD) && size <= 8192) {
            double *bl = malloc(sizeof(double) * BATCHES);
            for (int b = 0; b < BATCHES; b++) {
                double b0 = MPI_Wtime();
                for (int k = 0; k < BATCH; k++) {
                    if (t == PUT) MPI_Put(obuf, (int)size, MPI_CHAR, 1, 0, (int)size, MPI_CHAR, win);
                    else if (t == GET) MPI_Get(obuf, (int)size, MPI_CHAR, 1, 0, (int)size, MPI_CHAR, win);
                    else MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, 1, 0, MPI_SUM, win);
                    MPI_Win_flush(1, win);
                }
                bl[b] = (MPI_Wtime() - b0) / BATCH;
            }
            qsort(bl, BATCHES, sizeof(double), cmp_double);
            r.usec_batch = bl[BATCHES / 2] * 1e6;
            free(bl);
        }
        MPI_Win_unlock(1, win);

        if (is_bw(t)) {
            r.mbps = (double)size * window * iters / total / 1e6;
        } else {
            qsort(lat, iters, sizeof(double), cmp_double);
            r.usec = total / iters * 1e6;
            r.usec_median = lat[iters / 2] * 1e6;
        }
        free(lat);

        if ((t == GET || t == GETBW) && !check_bytes(obuf, span, 'b')) {
            fprintf(stderr, "osc: %s size %ld: origin buffer does not hold the target's data\n", test_names[t], size);
            r.ok = 0;
        }
        if (t == FADD && fetched != n + BATCHES * BATCH - 1) {
            fprintf(stderr, "osc: fadd: last fetched value %lld, expected %d\n", (long long)fetched, n + BATCHES * BATCH - 1);
            r.ok = 0;
        }
        if (t == CAS && cas_failures) {
            fprintf(stderr, "osc: cas: %ld of %d compare-and-swaps did not find the expected value\n", cas_failures,
                    n);
            r.ok = 0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 1 && (t == PUT || t == PUTBW || is_atomic(t))) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        if (is_atomic(t)) {
            int64_t v;
            memcpy(&v, base, sizeof v);
            long expect = n + (t == FADD ? BATCHES * BATCH : 0);
            if (v != expect) {
                fprintf(stderr, "osc: %s: target value %lld, expected %ld\n", test_names[t], (long long)v, expect);
                r.ok = 0;
            }
        } else if (!check_bytes(base, span, 'a')) {
            fprintf(stderr, "osc: %s size %ld: target window does not hold the put data\n", test_names[t], size);
            r.ok = 0;
        }
        MPI_Win_unlock(1, win);
    }
    return r;
}

int main(int argc, char **argv) {
    int rank, nranks;
    struct options o;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse_args(argc, argv, rank, &o);
    if (nranks != 2) usage_and_exit(rank, "run with exactly 2 ranks (mpirun -n 2)");

    int first = o.all ? 0 : (int)o.test, last = o.all ? NTESTS - 1 : (int)o.test;

    /* One window and one origin buffer, big enough for every (test, size). */
    long win_bytes = sizeof(int64_t);
    for (int t = first; t <= last; t++) {
        const long *sizes;
        int ns = test_sizes(&o, (enum test)t, &sizes);
        for (int s = 0; s < ns; s++) {
            long need = sizes[s];
            if (need > INT_MAX) usage_and_exit(rank, "size too large");
            if (is_bw((enum test)t) && need > 0) {
                long slots = MAX_WINDOW_BYTES / need;
                if (slots < 1) slots = 1;
                if (slots > o.window) slots = o.window;
                need *= slots;
            }
            if (need > win_bytes) win_bytes = need;
        }
    }
    char *base = NULL;
    MPI_Win win;
    if (o.create) {
        /* Memory MPI did not allocate: osc rdma cannot map a peer's window on this host and goes
         * through its btl (btl ofi) for every operation, as it must for a remote peer. */
        base = malloc(win_bytes);
        if (!base) usage_and_exit(rank, "out of memory");
        MPI_Win_create(base, (MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate((MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    }
    char *obuf = malloc(win_bytes);
    if (!obuf) usage_and_exit(rank, "out of memory");
    memset(obuf, 'a', win_bytes);
    memset(base, 0, win_bytes); /* before any epoch; touches every page */
    MPI_Barrier(MPI_COMM_WORLD);

    int ok = 1;
    for (int t = first; t <= last; t++) {
        enum test test = (enum test)t;
        const long *sizes;
        int ns = test_sizes(&o, test, &sizes);
        if (rank == 0) {
            if (o.json)
                printf("{\"benchmark\":\"%s\",\"rails\":\"%s\",\"ranks\":2,\"results\":[", test_names[t], o.label);
            else if (is_bw(test))
                printf("# %s (%s), 2 ranks, window %d\n# %10s %12s %12s %8s\n", test_titles[t], o.label, o.window,
                       "size", "MB/s", "", "windows");
            else if (is_atomic(test))
                printf("# %s (%s), 2 ranks, int64 + flush\n# %10s %12s %12s %8s %12s\n", test_titles[t], o.label,
                       "size", "avg us", "median us", "iters", "ops/s");
            else
                printf("# %s (%s), 2 ranks, op + flush\n# %10s %12s %12s %8s\n", test_titles[t], o.label, "size",
                       "avg us", "median us", "iters");
        }
        for (int s = 0; s < ns; s++) {
            long size = sizes[s];
            int warmup, iters;
            schedule(&o, test, size, &warmup, &iters);
            long slots = 1;
            if (is_bw(test) && size > 0) {
                slots = MAX_WINDOW_BYTES / size;
                if (slots < 1) slots = 1;
                if (slots > o.window) slots = o.window;
            }
            struct result r = run_one(rank, test, size, warmup, iters, o.window, win, base, obuf, slots);
            if (!r.ok) ok = 0;
            if (rank == 0) {
                const char *sep = s ? "," : "";
                if (is_bw(test)) {
                    if (o.json)
                        printf("%s{\"size\":%ld,\"mbps\":%.2f,\"windows\":%d}", sep, size, r.mbps, iters);
                    else
                        printf("  %10ld %12.2f %12s %8d\n", size, r.mbps, "", iters);
                } else if (is_atomic(test)) {
                    double rate = r.usec > 0 ? 1e6 / r.usec : 0.0;
                    if (o.json)
                        printf("%s{\"size\":%ld,\"usec\":%.3f,\"usec_median\":%.3f,\"usec_batch\":%.3f,\"ops_per_sec\":%.0f,"
                               "\"iters\":%d}", sep, size, r.usec, r.usec_median, r.usec_batch, rate, iters);
                    else
                        printf("  %10ld %12.2f %12.2f %8d %12.0f\n", size, r.usec, r.usec_median, iters, rate);
                } else {
                    if (o.json)
                        printf("%s{\"size\":%ld,\"usec\":%.3f,\"usec_median\":%.3f,\"usec_batch\":%.3f,\"iters\":%d}", sep, size,
                               r.usec, r.usec_median, r.usec_batch, iters);
                    else
                        printf("  %10ld %12.2f %12.2f %8d\n", size, r.usec, r.usec_median, iters);
                }
                fflush(stdout);
            }
        }
        if (rank == 0 && o.json) printf("]}\n");
        fflush(stdout);
    }

    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Win_free(&win);
    if (o.create) free(base);
    free(obuf);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
