/// The aggregator's scheduling and retry decisions as a value type: the I/O code reports how each
/// cycle ended and executes the returned `Decision` (wait, log a state change, reconnect). Tests drive
/// it directly, without a database or a clock.
///
/// States: `active` (last cycle succeeded), `standby` (another aggregator holds the load lock),
/// `failing(attempts:)` (PostgreSQL or the log failed `attempts` times in a row), `stopped`.
/// A log line is due only when the state changes, never per retry.
package struct LoadStateMachine: Sendable {
    /// Where the aggregator stands.
    package enum State: Equatable, Sendable {
        case active
        case standby
        case failing(attempts: Int)
        case stopped

        /// The value of the `aggregator_state` gauge: 0 active, 1 standby, 2 failing, 3 stopped.
        package var gaugeValue: Double {
            switch self {
            case .active: 0
            case .standby: 1
            case .failing: 2
            case .stopped: 3
            }
        }
    }

    /// How a cycle ended.
    package enum CycleOutcome: Equatable, Sendable {
        /// The transaction committed; `backlog` when a batch bound was hit and more is waiting.
        case loaded(records: Int, backlog: Bool)
        /// Another aggregator held the load lock; nothing was done.
        case busy
        /// The cycle failed and was rolled back; `reason` is safe to log.
        case failed(reason: String)
    }

    /// A state change worth one log line.
    package enum StateChange: Equatable, Sendable {
        /// The first failure after success: the reason, and the first retry delay.
        case startedFailing(reason: String, retryIn: Duration)
        /// The first success after failures.
        case recovered(afterAttempts: Int)
        /// Another aggregator holds the lock; this one waits.
        case becameStandby
        /// This aggregator holds the lock again.
        case becameActive
    }

    /// What the I/O code must do after a cycle.
    package struct Decision: Equatable, Sendable {
        /// Delay before the next cycle (zero: at once).
        package var delay: Duration
        /// A line to log, when the state changed.
        package var change: StateChange?
        /// Drop the database connection and open a new one before the next cycle.
        package var reconnect: Bool
    }

    /// The current state.
    package private(set) var state: State = .active

    /// Interval between cycles without backlog.
    package let interval: Duration
    /// First retry delay.
    package let backoffBase: Duration
    /// Largest retry delay.
    package let backoffCap: Duration

    /// Creates a machine in the `active` state.
    package init(interval: Duration, backoffBase: Duration, backoffCap: Duration) {
        self.interval = interval
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
    }

    /// Records how a cycle ended and decides what happens next.
    /// - Parameters:
    ///   - outcome: how the cycle ended.
    ///   - jitter: a random number in `0..<1` (injected so tests are deterministic); retry delays are
    ///     spread over `[d/2, d]` ("equal jitter") so many aggregators do not retry in lock-step.
    package mutating func cycleFinished(_ outcome: CycleOutcome, jitter: Double) -> Decision {
        guard state != .stopped else { return Decision(delay: .zero, change: nil, reconnect: false) }
        switch outcome {
        case .loaded(_, let backlog):
            var change: StateChange?
            switch state {
            case .failing(let attempts): change = .recovered(afterAttempts: attempts)
            case .standby: change = .becameActive
            case .active, .stopped: break
            }
            state = .active
            return Decision(delay: backlog ? .zero : interval, change: change, reconnect: false)
        case .busy:
            var change: StateChange?
            switch state {
            case .active: change = .becameStandby
            case .failing(let attempts): change = .recovered(afterAttempts: attempts)
            case .standby, .stopped: break
            }
            state = .standby
            return Decision(delay: interval, change: change, reconnect: false)
        case .failed(let reason):
            let attempts: Int
            if case .failing(let previous) = state { attempts = previous + 1 } else { attempts = 1 }
            let delay = Self.backoff(attempt: attempts, base: backoffBase, cap: backoffCap, jitter: jitter)
            let change: StateChange? = attempts == 1 ? .startedFailing(reason: reason, retryIn: delay) : nil
            state = .failing(attempts: attempts)
            return Decision(delay: delay, change: change, reconnect: true)
        }
    }

    /// Marks the machine stopped; later outcomes are ignored.
    package mutating func stop() { state = .stopped }

    /// The retry delay after `attempt` consecutive failures: `min(cap, base * 2^(attempt-1))`, then
    /// spread over its upper half by `jitter` in `0..<1`.
    package static func backoff(attempt: Int, base: Duration, cap: Duration, jitter: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 40)
        let baseSeconds = base.seconds
        let raw = min(cap.seconds, baseSeconds * Double(1 << UInt64(exponent)))
        let clampedJitter = min(max(jitter, 0), 1)
        return .seconds(raw / 2 + raw / 2 * clampedJitter)
    }
}

extension Duration {
    /// The duration in seconds as a floating-point number.
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
