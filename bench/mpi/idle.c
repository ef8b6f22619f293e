/* CPU used by an MPI rank that waits in MPI_Recv for 5 s (the contrast to
 * bench/idle-cpu.mjs). Rank 0 sleeps, then sends; rank 1 reports its CPU time.
 * Usage: mpirun -np 2 --mca pml ob1 --mca btl self,vader ./idle [seconds] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

int main(int argc, char **argv) {
    int rank, secs = argc > 1 ? atoi(argv[1]) : 5;
    char b[8] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        sleep((unsigned)secs);
        MPI_Send(b, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
    } else {
        struct timespec t0, t1;
        double c0 = cpu_ms();
        clock_gettime(CLOCK_MONOTONIC, &t0);
        MPI_Recv(b, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double waited = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6, c = cpu_ms() - c0;
        printf("{\"benchmark\":\"idle-cpu\",\"rails\":\"ompi\",\"waitedMs\":%.0f,\"cpuMs\":%.1f,\"cpuPercent\":%.2f}\n", waited, c, c / waited * 100);
    }
    MPI_Finalize();
    return 0;
}
