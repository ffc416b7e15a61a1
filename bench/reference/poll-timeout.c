/* poll-timeout: what a poll with a timeout costs against one without, in
 * a ping-pong of two threads over two eventfds (no bus).
 *
 *   poll-timeout [ROUNDS]
 *
 * Each round the main thread wakes the other through one eventfd and
 * waits in poll() for its answer on the other; the other thread waits in
 * poll() with no timeout. The main thread's poll has no timeout (-1) in
 * one run and 5 ms in the next (the timeout never runs out: the answer
 * comes first), alternated three times, and the microseconds a round trip
 * are printed for each. A poll with a timeout arms a kernel timer each
 * time it sleeps, which on a virtual machine can be a round through the
 * host; run it under `taskset -c 0` for one processor. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int there, back;
static long rounds;

static void fail(const char *what) {
    perror(what);
    exit(1);
}

static void wait_and_read(int fd, int timeout) {
    struct pollfd entry = {fd, POLLIN, 0};
    while (poll(&entry, 1, timeout) < 0)
        if (errno != EINTR) fail("poll");
    uint64_t count;
    if (read(fd, &count, sizeof count) != sizeof count) fail("read");
}

static void signal_fd(int fd) {
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) != sizeof one) fail("write");
}

static void *answerer(void *unused) {
    (void)unused;
    for (;;) {
        wait_and_read(there, -1);
        signal_fd(back);
    }
    return NULL;
}

static double run(int timeout) {
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < rounds; i++) {
        signal_fd(there);
        wait_and_read(back, timeout);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double ns = (double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec);
    return ns / (double)rounds / 1000;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    if (rounds <= 0) {
        fprintf(stderr, "usage: poll-timeout [ROUNDS]\n");
        return 2;
    }
    there = eventfd(0, EFD_CLOEXEC);
    back = eventfd(0, EFD_CLOEXEC);
    if (there < 0 || back < 0) fail("eventfd");
    pthread_t thread;
    if (pthread_create(&thread, NULL, answerer, NULL) != 0) fail("pthread_create");
    run(-1);
    for (int i = 0; i < 3; i++) {
        printf("no timeout  %.2f µs a round trip\n", run(-1));
        printf("5 ms        %.2f µs a round trip\n", run(5));
    }
    return 0;
}
