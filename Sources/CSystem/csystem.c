#define _GNU_SOURCE
#include "csystem.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

int today_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

/* Closes every descriptor from `lowest` up except `keep`. */
static void close_all_from(int lowest, int keep) {
    if (keep >= lowest) {
        if (keep > lowest) close_range((unsigned)lowest, (unsigned)keep - 1, 0);
        close_range((unsigned)keep + 1, ~0U, 0);
    } else {
        close_range((unsigned)lowest, ~0U, 0);
    }
}

pid_t today_siginfo_pid(const siginfo_t *info) { return info->si_pid; }

int today_set_thread_nice(int nice) { return setpriority(PRIO_PROCESS, (id_t)gettid(), nice); }

void today_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

void today_malloc_configure(int map_bytes, int trim_bytes, int arenas) {
    mallopt(M_MMAP_THRESHOLD, map_bytes);
    mallopt(M_TRIM_THRESHOLD, trim_bytes);
    mallopt(M_ARENA_MAX, arenas);
}

void today_malloc_give_back(void) { malloc_trim(0); }

ssize_t today_receive(int socket, void *buffer, size_t length, int *descriptors, int capacity, int *received) {
    /* The kernel passes at most 253 descriptors in one message (SCM_MAX_FD). */
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 253)];
        struct cmsghdr align;
    } control;
    struct iovec part = {.iov_base = buffer, .iov_len = length};
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes};
    *received = 0;
    ssize_t count = recvmsg(socket, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (count < 0) return -1;
    int overflow = (message.msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
            if (*received < capacity) {
                descriptors[(*received)++] = fd;
            } else {
                close(fd);
                overflow = 1;
            }
        }
    }
    if (overflow) {
        for (int i = 0; i < *received; i++) close(descriptors[i]);
        *received = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return count;
}

int today_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

int today_process_nice(void) {
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)getpid());
    return errno == 0 ? nice : 0;
}

/* What the child needs, in the parent's memory. */
struct today_child {
    const struct today_spawn_request *request;
    /* Where a detached grandchild, which has its own copy of memory,
     * reports a failure; -1 otherwise. */
    int report;
    int error;
};

/* Records why the child could not start and ends it. */
static _Noreturn void child_failed(struct today_child *child, int error) {
    child->error = error;
    if (child->report >= 0) (void)!write(child->report, &error, sizeof error);
    _exit(127);
}

/* Runs in the child, in the parent's memory while the parent thread is
 * suspended (CLONE_VM | CLONE_VFORK), until execve: system call wrappers
 * only, no allocation, no lock. */
static int child_main(void *argument) {
    struct today_child *child = argument;
    const struct today_spawn_request *request = child->request;
    /* Every disposition back to the default, the two signals glibc keeps
     * for itself (32, 33) included: its sigaction() refuses them, and its
     * posix_spawn leaves them ignored in the child. A zeroed kernel
     * sigaction is SIG_DFL, no flags, an empty mask on every architecture. */
    unsigned long standard[4] = {0, 0, 0, 0};
    for (int number = 1; number <= 64; number++) {
        if (number != SIGKILL && number != SIGSTOP) syscall(SYS_rt_sigaction, number, standard, NULL, 8);
    }
    if (request->flags & TODAY_SPAWN_ENDS_WITH_THREAD) prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (request->flags & TODAY_SPAWN_DETACHED) {
        if (setsid() < 0) child_failed(child, errno);
        /* The raw system call: glibc's fork() would run its fork handlers,
         * which take locks in the memory this child shares with todayd. */
        long grandchild = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
        if (grandchild < 0) child_failed(child, errno);
        if (grandchild > 0) _exit(0);
        /* The grandchild, adopted by init once this child ends. */
    } else if (request->flags & TODAY_SPAWN_PROCESS_GROUP) {
        if (setpgid(0, 0) < 0) child_failed(child, errno);
    }
    /* The starting thread's own nice value is not passed on (as root,
     * libdispatch runs its threads at -2 and -4); lowering a priority is
     * always allowed, so a failure here is only a higher one kept. */
    (void)setpriority(PRIO_PROCESS, 0, request->nice);
    int sources[3] = {request->input, request->output, request->error};
    int null = -1;
    if (sources[0] < 0 || sources[1] < 0 || sources[2] < 0) {
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0) child_failed(child, errno);
    }
    for (int target = 0; target < 3; target++) {
        int source = sources[target] < 0 ? null : sources[target];
        if (source == target) {
            if (fcntl(target, F_SETFD, 0) < 0) child_failed(child, errno);
        } else if (dup2(source, target) < 0) {
            child_failed(child, errno);
        }
    }
    if (request->directory && chdir(request->directory) < 0 && !(request->flags & TODAY_SPAWN_DETACHED)) {
        child_failed(child, errno);
    }
    /* Nothing else of todayd's: its bus socket, other children's pipes, a
     * file open for writing that could then not be executed (ETXTBSY). The
     * report pipe closes itself at execve. */
    close_all_from(3, child->report);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(request->path, request->argv, request->envp);
    child_failed(child, errno);
}

int today_spawn(const struct today_spawn_request *request, pid_t *pid) {
    struct today_child child = {request, -1, 0};
    int report[2] = {-1, -1};
    if (request->flags & TODAY_SPAWN_DETACHED) {
        if (pipe2(report, O_CLOEXEC) != 0) return errno;
        child.report = report[1];
    }
    /* The child's stack: this frame is not used while the child runs, so
     * no mapping is made and unmapped for each start (posix_spawn's
     * per-call mmap and munmap, and the TLB shootdown that munmap costs
     * in a process with threads on other processors). */
    char stack[32768] __attribute__((aligned(16)));
    /* No handler of ours may run in the child before it resets them all;
     * SIGCHLD stays deliverable (it is never handled in todayd), so that a
     * child that ends before clone returns is not left pending. */
    sigset_t all, saved;
    sigfillset(&all);
    sigdelset(&all, SIGCHLD);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    int saved_errno = errno;
    pid_t started = clone(child_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
    int clone_errno = errno;
    errno = saved_errno;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (started < 0) {
        if (report[0] >= 0) {
            close(report[0]);
            close(report[1]);
        }
        return clone_errno;
    }
    if (request->flags & TODAY_SPAWN_DETACHED) {
        /* The child has ended (or is ending) once its grandchild exists;
         * the grandchild's execve closes the pipe, or it writes why not. */
        close(report[1]);
        int status;
        while (waitpid(started, &status, 0) < 0 && errno == EINTR) {}
        if (child.error == 0) {
            ssize_t got;
            do {
                got = read(report[0], &child.error, sizeof child.error);
            } while (got < 0 && errno == EINTR);
            if (got != (ssize_t)sizeof child.error) child.error = 0;
        }
        close(report[0]);
        if (pid) *pid = 0;
        return child.error;
    }
    if (child.error) {
        int status;
        while (waitpid(started, &status, 0) < 0 && errno == EINTR) {}
        return child.error;
    }
    if (pid) *pid = started;
    return 0;
}

int today_rename_exchange(int folder, const char *a, const char *b) {
    return renameat2(folder, a, folder, b, RENAME_EXCHANGE) == 0 ? 0 : errno;
}
