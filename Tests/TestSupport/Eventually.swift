import Foundation

/// Tries `condition` every `interval` until it holds or `timeout` has passed, and says whether it
/// held: for server state that changes a moment after the client saw its answer (a connection's
/// cleanup, a budget released in the completion callback, a readiness window). The bound is
/// generous because a loaded CI machine can stall any thread for seconds; a passing run returns
/// as soon as the condition holds.
package func eventually(
    timeout: Duration = .seconds(60), every interval: Duration = .milliseconds(50), _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        Thread.sleep(
            forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
    }
}
