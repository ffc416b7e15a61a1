import CSystem
import Glibc

/// Other processes: signals to a process or its group, waiting for a child
/// and reaping it.
public enum Processes {
    /// Sends `signal` to process `pid`. The corresponding C function is `kill`.
    public static func signal(_ pid: pid_t, _ signal: Int32) throws(Errno) {
        _ = try failingWithErrno(.kill) { kill(pid, signal) }
    }

    /// Sends `signal` to every process of the group `group`.
    /// The corresponding C function is `kill`, with the group negated.
    public static func signal(group: pid_t, _ signal: Int32) throws(Errno) {
        _ = try failingWithErrno(.kill) { kill(-group, signal) }
    }

    /// Whether a process `pid` exists (one of another user's counts).
    public static func exists(_ pid: pid_t) -> Bool {
        do {
            try signal(pid, 0)
            return true
        } catch {
            return error.code == EPERM
        }
    }

    /// Whether the child `pid` has ended, without reaping it: its pid
    /// stays reserved until `reap`. The corresponding C function is
    /// `waitid` (WEXITED, WNOHANG, WNOWAIT).
    public static func hasEnded(_ child: pid_t) -> Bool {
        var info = siginfo_t()
        guard (try? failingWithErrno(.wait) { waitid(P_PID, id_t(child), &info, WEXITED | WNOHANG | WNOWAIT) }) != nil else { return false }
        return today_siginfo_pid(&info) == child
    }

    /// Waits for the child `pid` to end and reaps it; returns its wait
    /// status. The corresponding C function is `waitpid`.
    @discardableResult
    public static func reap(_ child: pid_t) throws(Errno) -> Int32 {
        var status: Int32 = 0
        _ = try retryingInterrupts(.wait) { waitpid(child, &status, 0) }
        return status
    }

    /// A descriptor that becomes readable when process `pid` ends, or nil
    /// where the kernel has none (before Linux 5.3).
    /// The corresponding C function is `pidfd_open`.
    public static func exitDescriptor(_ pid: pid_t) -> FileDescriptor? {
        guard let fd = try? failingWithErrno(.open, { today_pidfd_open(pid) }) else { return nil }
        return FileDescriptor(owning: fd)
    }
}
