import Dispatch
import Foundation
import Locking

/// Watches for SIGINT and SIGTERM so `run`, `serve` and `aggregate` stop cleanly: the caller then
/// stops accepting, lets in-flight requests and the running load cycle finish, and exits.
enum Termination {
    /// Starts watching for SIGINT and SIGTERM. Called before start-up (which can wait seconds for
    /// PostgreSQL), so a `docker stop` then is not fatal: the process finishes starting, and
    /// `wait()` returns at once for a clean shutdown (it was killed with status 143 before).
    static func watch() -> Watch { Watch() }

    /// The signal sources of one `watch()`.
    final class Watch {
        private let received = DispatchSemaphore(value: 0)
        private let name = SignalName()
        private let sources: [any DispatchSourceSignal]

        fileprivate init() {
            var sources: [any DispatchSourceSignal] = []
            for (number, label) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
                signal(number, SIG_IGN)  // let Dispatch see the signal instead of the default action
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { [received, name] in
                    name.value.withLock { $0 = label }
                    received.signal()
                }
                source.resume()
                sources.append(source)
            }
            self.sources = sources
        }

        /// Blocks the calling thread until SIGINT or SIGTERM has arrived (since `watch()`); returns
        /// the signal's name.
        func wait() -> String {
            received.wait()
            sources.forEach { $0.cancel() }
            return name.value.withLock { $0 }
        }
    }
}

/// The received signal's name, handed from the Dispatch handler to the waiting thread.
private final class SignalName: Sendable {
    let value = Locked("")
}
