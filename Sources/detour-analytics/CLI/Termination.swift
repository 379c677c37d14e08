import Dispatch
import Foundation
import Locking
import Observability

/// Watches for SIGINT, SIGTERM and SIGHUP so `run`, `serve` and `aggregate` stop cleanly: the caller
/// then stops accepting, lets in-flight requests and the running load cycle finish, and exits.
/// SIGHUP (the terminal closed: an ssh session that dropped) took the default action until
/// 2026-12-02, killing the process at once (status 129) with requests in flight unanswered.
///
/// The same signal a second time (SIGINT, SIGINT: Ctrl-C twice; or SIGTERM twice) stops the process
/// at once (status 128 + the signal's number, as a kill would), logged as `shutdown.forced`: the
/// clean stop waits for the running load cycle, and a cycle waiting on a PostgreSQL lock (a long
/// `report rebuild`, a migration) or on a server that went silent can wait for minutes. Until 2026-12-02 every further signal was ignored, so Ctrl-C
/// could not stop such a process at all. Nothing acknowledged is lost: ingest answers only once an
/// event is durable, and PostgreSQL rolls the cycle back when the connection goes. A repeat within
/// `repeatWindow` of the first is the same request delivered twice, not a second one: `timeout`
/// (coreutils) sends its signal to the command and then to the command's process group, so a
/// `timeout -s INT` or `-s TERM` stop always took the forced exit.
enum Termination {
    /// How soon after the first signal the same signal counts as the same request. A person's second
    /// Ctrl-C comes seconds later; a doubled delivery, microseconds. (`DETOUR_TEST_SIGNAL_REPEAT_MS`
    /// sets it for the tests, which cannot time a doubled delivery to the microsecond: two `kill`s in a
    /// row usually merge into one pending signal.)
    static let repeatWindow: Duration = {
        let text = ProcessInfo.processInfo.environment["DETOUR_TEST_SIGNAL_REPEAT_MS"] ?? ""
        return .milliseconds(Int(text) ?? 500)
    }()

    /// Starts watching for SIGINT, SIGTERM and SIGHUP. Called before start-up (which can wait seconds for
    /// PostgreSQL), so a `docker stop` then is not fatal: the process finishes starting, and
    /// `stopOnSignal` stops it at once, cleanly (it was killed with status 143 before).
    static func watch() -> Watch { Watch() }

    /// The signal sources of one `watch()`.
    final class Watch {
        private let received = DispatchSemaphore(value: 0)
        private let name = SignalName()
        private let sources: [any DispatchSourceSignal]

        fileprivate init() {
            // A log line written after whatever reads standard error went away (`serve 2>&1 | tee`,
            // and Ctrl-C stopped tee too; a log shipper restarting) killed a long-running command
            // with SIGPIPE: the shutdown notice ended a clean stop as a kill, and a PostgreSQL
            // outage's warning killed ingest (until 2026-12-05). Ignored, the write fails with EPIPE
            // and the line is dropped. Sockets never raised it (libmicrohttpd and libpq suppress it);
            // the one-shot commands keep the default, so `report links | head` ends quietly.
            signal(SIGPIPE, SIG_IGN)
            var sources: [any DispatchSourceSignal] = []
            for (number, label) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")] {
                signal(number, SIG_IGN)  // let Dispatch see the signal instead of the default action
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { [received, name] in
                    let now = ContinuousClock.now
                    let first = name.value.withLock { current in
                        defer { if current.label.isEmpty { current = (label, now) } }
                        return current
                    }
                    if first.label.isEmpty {
                        received.signal()
                    } else if first.label == label, now - first.at >= Termination.repeatWindow {
                        Logger(label: "detour").warning("shutdown.forced", ["signal": label])
                        _exit(128 + number)
                    }
                    // The other signal after the first is the same request, not a second one: Ctrl-C
                    // under scripts/run reaches the process as SIGINT from the terminal and SIGTERM
                    // from the script's clean-up, and must still stop it cleanly.
                }
                source.resume()
                sources.append(source)
            }
            self.sources = sources
        }

        /// Blocks the calling thread until SIGINT, SIGTERM or SIGHUP has arrived (since `watch()`), logs
        /// `shutdown.begin` with the signal's name and runs `stop`. The watch goes on while `stop`
        /// runs: the same signal again ends the process at once. (It is a method, so the sources live
        /// until `stop` returns; a signal source released early would leave the signal ignored.)
        func stopOnSignal(_ stop: () -> Void) {
            received.wait()
            Logger(label: "detour").notice("shutdown.begin", ["signal": name.value.withLock { $0.label }])
            stop()
            withExtendedLifetime(sources) {}
        }
    }
}

/// The first received signal's name and when it came, handed from the Dispatch handler to the
/// waiting thread.
private final class SignalName: Sendable {
    let value = Locked((label: "", at: ContinuousClock.now))
}
