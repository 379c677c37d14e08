import CThreadName
import Foundation

extension Thread {
    /// Starts a thread running `body`, named `name` where `top -H`, `perf`, gdb and
    /// `/proc/PID/task/*/comm` show it (Linux keeps 15 bytes of a name: a longer one is cut).
    /// Foundation's `Thread.name` set before `start()` never reaches the thread on Linux, and a
    /// name of more than 15 bytes is refused without a word: until 2026-12-03 every thread of ours
    /// showed as the process's own name. Set from inside the thread, it reaches it only when the
    /// thread that called `start()` has already recorded the new thread's handle (Foundation sets the
    /// kernel's name only for the thread it believes current), which a new thread that runs at once
    /// outpaces: it then kept the name it inherits from its creator (`oot.default-qos`, a Dispatch
    /// worker's), seen for the log's committer and compressor in the thread-name tests of two CI runs
    /// until 2026-12-05. So the kernel's name is set directly as well.
    package static func startNamed(_ name: String, _ body: @escaping @Sendable () -> Void) {
        var cut = Substring(name)
        while cut.utf8.count > 15 { cut.removeLast() }  // whole characters: a cut one would not shorten it
        let name = String(cut)
        let thread = Thread {
            _ = detour_set_thread_name(name)
            Thread.current.name = name
            body()
        }
        thread.start()
    }
}
