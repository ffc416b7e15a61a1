#ifndef TODAY_CDBUS_SHIM_H
#define TODAY_CDBUS_SHIM_H
#include <dbus/dbus.h>
#include <sys/eventfd.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
/* Declared by unistd.h only under _GNU_SOURCE (glibc 2.34 for close_range). */
extern int pipe2(int fds[2], int flags);
extern int close_range(unsigned int first, unsigned int last, int flags);

/* Starts a private bus daemon: `argv` with `envp` (this process's own when
 * NULL), standard output `output`, standard error /dev/null, no other
 * descriptor, an empty signal mask, default dispositions and the nice
 * value of this process's main thread (not the calling thread's). With
 * `die_with_thread`, the daemon gets SIGTERM when the calling thread ends
 * (PR_SET_PDEATHSIG), however it ends; dbus-daemon then removes its
 * socket. Returns the daemon's pid once it has been executed, or -1 with
 * `error` set to the errno of what failed. */
static inline pid_t today_spawn_bus(const char *path, char *const argv[], char *const envp[], int output,
                                    int die_with_thread, int *error) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        *error = errno;
        return -1;
    }
    pid_t parent = getpid();
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)parent);
    if (errno != 0) nice = 0;
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pid_t child = fork();
    if (child == 0) {
        /* Only async-signal-safe calls from here on. */
        struct sigaction standard;
        memset(&standard, 0, sizeof standard);
        standard.sa_handler = SIG_DFL;
        for (int number = 1; number < NSIG; number++) sigaction(number, &standard, NULL);
        if (die_with_thread) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            /* Gone already: the signal would never come. */
            if (getppid() != parent) _exit(1);
        }
        (void)setpriority(PRIO_PROCESS, 0, nice);
        if (dup2(output, 1) < 0) goto failed;
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, 2) < 0) goto failed;
        /* Nothing else: a file this process has open for writing, held by
         * the bus for its life, could not be executed meanwhile (ETXTBSY). */
        if (report[1] > 3) close_range(3, (unsigned)report[1] - 1, 0);
        close_range((unsigned)report[1] + 1, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(path, argv, envp ? envp : environ);
    failed:;
        int failure = errno;
        (void)!write(report[1], &failure, sizeof failure);
        _exit(127);
    }
    int fork_error = errno;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    close(report[1]);
    if (child < 0) {
        close(report[0]);
        *error = fork_error;
        return -1;
    }
    int failure = 0;
    ssize_t got;
    do {
        got = read(report[0], &failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof failure) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        *error = failure;
        return -1;
    }
    return child;
}
#endif
