/* What the log's fdatasync waits for while checkpoints write the database file.
 *
 * The writer's group commit ends in an fdatasync of the WAL (~120 KB of frames for a group of
 * ~20 identifies). Meanwhile the checkpoint thread copies pages into the database file and
 * fsyncs it. This program does the two on plain files, so the disk's share of identify's p99
 * can be seen without the server:
 *
 *   gcc -O2 -pthread -o /tmp/lsi bench/log_sync_interference.c
 *   /tmp/lsi 5 0 1000          # the log alone
 *   /tmp/lsi 5 45 1000         # beside 45 MB/s of random 4 KiB page writes, fsync'd every 1000 ms
 *   TRICKLE=1 /tmp/lsi 5 45 250   # the same, writeback started every 64 pages (sync_file_range)
 *
 * Arguments: SECONDS MB_PER_SECOND PERIOD_MS. Files go to the current directory (the disk the
 * database would be on). Prints the log's sync latency: mean, p50, p90, p99, max. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double seconds, megabytes, period_ms;
static volatile int stop;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* The checkpoint's side: a period's worth of random pages, then fsync. */
static void *checkpoint_writer(void *unused) {
    (void)unused;
    int fd = open("lsi-db.bin", O_RDWR | O_CREAT, 0644);
    char page[4096];
    memset(page, 'd', sizeof page);
    long pages = (long)(megabytes * 1024 * 1024 / 4096 * period_ms / 1000.0);
    int trickle = getenv("TRICKLE") != NULL;
    while (!stop) {
        double start = now();
        for (long i = 0; i < pages; i++) {
            if (pwrite(fd, page, sizeof page, (random() % 65536) * 4096L) < 0) perror("pwrite");
            if (trickle && i % 64 == 63) sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        }
        fsync(fd);
        double left = period_ms / 1000.0 - (now() - start);
        if (left > 0) usleep((useconds_t)(left * 1e6));
    }
    close(fd);
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s SECONDS MB_PER_SECOND PERIOD_MS\n", argv[0]);
        return 2;
    }
    seconds = atof(argv[1]);
    megabytes = atof(argv[2]);
    period_ms = atof(argv[3]);
    static char frames[122880];
    memset(frames, 'x', sizeof frames);
    int log = open("lsi-wal.bin", O_RDWR | O_CREAT, 0644);
    /* Written once in full first: the log is overwritten in place, as after a restart. */
    for (long at = 0; at < 64L * 1024 * 1024; at += sizeof frames) pwrite(log, frames, sizeof frames, at);
    fsync(log);
    pthread_t thread;
    if (megabytes > 0) pthread_create(&thread, NULL, checkpoint_writer, NULL);
    static double latency[200000];
    long n = 0, at = 0;
    double end = now() + seconds;
    while (now() < end && n < 200000) {
        pwrite(log, frames, sizeof frames, at);
        at = (at + sizeof frames) % (60L * 1024 * 1024);
        double start = now();
        fdatasync(log);
        latency[n++] = (now() - start) * 1e3;
        usleep(1500); /* the next group's work */
    }
    stop = 1;
    if (megabytes > 0) pthread_join(thread, NULL);
    qsort(latency, n, sizeof latency[0], by_value);
    double sum = 0;
    for (long i = 0; i < n; i++) sum += latency[i];
    printf("beside %.0f MB/s fsync'd every %.0f ms%s: %ld syncs, mean %.2f p50 %.2f p90 %.2f p99 %.2f max %.1f ms\n",
           megabytes, period_ms, getenv("TRICKLE") ? " (trickled)" : "", n, sum / n, latency[n / 2],
           latency[n * 9 / 10], latency[n * 99 / 100], latency[n - 1]);
    unlink("lsi-wal.bin");
    unlink("lsi-db.bin");
    return 0;
}
