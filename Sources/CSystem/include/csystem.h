#ifndef TODAY_CSYSTEM_H
#define TODAY_CSYSTEM_H

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/types.h>

/// A pipe whose two ends are close-on-exec. 0 or -1 with errno.
int today_pipe_cloexec(int fds[2]);

/// The process id a waitid() filled in; 0 when none changed state.
pid_t today_siginfo_pid(const siginfo_t *info);

/// Sets the nice value of the calling thread alone (Linux keeps one per
/// thread). 0 or -1 with errno.
int today_set_thread_nice(int nice);

/// Names the calling thread (up to 15 bytes), as `top -H` and
/// /proc/<pid>/task/<tid>/comm show it.
void today_set_thread_name(const char *name);

/// Reads what `socket` holds, up to `length` bytes, without waiting, and
/// the file descriptors that came with those bytes (SCM_RIGHTS), close-on-
/// exec, up to `capacity` of them into `descriptors`, their number into
/// `received`. The byte count (0 at the end of the stream), or -1 with
/// errno (EAGAIN where nothing waits, EINTR where a signal came first).
/// Where the sender passed more descriptors than fit, those received are
/// closed and errno is EMSGSIZE.
ssize_t today_receive(int socket, void *buffer, size_t length, int *descriptors, int capacity, int *received);

/// A file descriptor that becomes readable when the process ends
/// (pidfd_open, Linux 5.3); -1 with errno where the kernel lacks it.
int today_pidfd_open(pid_t pid);

/// Sets how malloc holds memory: every block of `map_bytes` or more gets a
/// mapping of its own, returned to the system when freed; free memory over
/// `trim_bytes` at the top of a heap goes back too; threads share at most
/// `arenas` heaps. Fixed thresholds also stop glibc from raising them after
/// large frees.
void today_malloc_configure(int map_bytes, int trim_bytes, int arenas);

/// Gives the free memory of every malloc arena back to the system
/// (malloc_trim): the free pages inside every heap, and the main heap's
/// top (glibc leaves a thread heap's top to the trim threshold).
void today_malloc_give_back(void);

/// How a program is started (`today_spawn`).
enum {
    /// In a process group of its own (providers: one kill ends them all).
    TODAY_SPAWN_PROCESS_GROUP = 1,
    /// In a new session, as a grandchild that init adopts (apps); a working
    /// folder that cannot be entered is then not an error.
    TODAY_SPAWN_DETACHED = 2,
    /// Sent SIGTERM when the calling thread ends, however it ends
    /// (PR_SET_PDEATHSIG; private buses).
    TODAY_SPAWN_ENDS_WITH_THREAD = 4,
};

/// What to start: `path` with `argv` and `envp`; `input`, `output` and
/// `error` as its standard descriptors (-1 for /dev/null); in `directory`
/// (NULL to stay); at nice value `nice`; `flags` from the enum above.
struct today_spawn_request {
    const char *path;
    char *const *argv;
    char *const *envp;
    int input, output, error;
    const char *directory;
    int nice;
    int flags;
};

/// Starts a program as `request` says, for every program todayd starts
/// (providers, apps, private buses): with every signal disposition at its
/// default (glibc's own 32 and 33 included), an empty signal mask, and no
/// descriptor but the three standard ones. Returns 0 once it has been
/// executed, with `pid` set (0 for a detached program, which is not our
/// child), or the errno of what failed; nothing is left running then.
int today_spawn(const struct today_spawn_request *request, pid_t *pid);

/// The nice value of the process (its main thread), which every program
/// todayd starts gets: the calling thread's may be higher or lower.
int today_process_nice(void);

/// Swaps the entries `a` and `b` of the open folder `folder` in one step
/// (renameat2 with RENAME_EXCHANGE): whoever looks sees the one or the
/// other, never neither. 0 or the errno.
int today_rename_exchange(int folder, const char *a, const char *b);

#endif
