/* Size arguments shared by the MPI benchmarks: "8,64k,1M" -> byte counts. */
#ifndef BENCH_SIZES_H
#define BENCH_SIZES_H

#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 64

/* One size with an optional k/M suffix; -1 when malformed. */
static long parse_size(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0) return -1;
    if (*end == 'k' || *end == 'K') { v *= 1024; end++; }
    else if (*end == 'm' || *end == 'M') { v *= 1048576; end++; }
    return *end == '\0' ? v : -1;
}

/* A comma-separated list into out[MAX_SIZES]: the count, or -1 for a bad
 * size and -2 for more than MAX_SIZES. */
static int parse_size_list(const char *text, long *out) {
    char *list = strdup(text);
    int n = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        long v = parse_size(tok);
        if (v < 0) { free(list); return -1; }
        if (n == MAX_SIZES) { free(list); return -2; }
        out[n++] = v;
    }
    free(list);
    return n;
}

#endif
