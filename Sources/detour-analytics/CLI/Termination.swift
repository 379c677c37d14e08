import Dispatch
import Foundation
import Locking

/// Waits for SIGINT or SIGTERM so `run`, `serve` and `aggregate` stop cleanly: the caller then
/// stops accepting, lets in-flight requests and the running load cycle finish, and exits.
enum Termination {
    /// Blocks the calling thread until SIGINT or SIGTERM arrives; returns the signal's name.
    static func wait() -> String {
        let received = DispatchSemaphore(value: 0)
        let name = SignalName()
        var sources: [any DispatchSourceSignal] = []
        for (number, label) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)  // let Dispatch see the signal instead of the default action
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                name.value.withLock { $0 = label }
                received.signal()
            }
            source.resume()
            sources.append(source)
        }
        received.wait()
        sources.forEach { $0.cancel() }
        return name.value.withLock { $0 }
    }
}

/// The received signal's name, handed from the Dispatch handler to the waiting thread.
private final class SignalName: Sendable {
    let value = Locked("")
}
