import Testing

@testable import Aggregator

@Suite struct LoadStateMachineTests {
    private func machine() -> LoadStateMachine {
        LoadStateMachine(interval: .seconds(2), backoffBase: .milliseconds(500), backoffCap: .seconds(30))
    }

    @Test("a backlog runs the next cycle at once, otherwise after the interval")
    func backlogRunsAtOnce() {
        var machine = machine()
        #expect(machine.cycleFinished(.loaded(records: 10, backlog: true), jitter: 0.5).delay == .zero)
        #expect(machine.cycleFinished(.loaded(records: 10, backlog: false), jitter: 0.5).delay == .seconds(2))
        #expect(machine.state == .active)
    }

    @Test("failures back off exponentially up to the cap and log only the first failure")
    func backoffDoublesToCap() {
        var machine = machine()
        var logged: [LoadStateMachine.StateChange] = []
        var delays: [Duration] = []
        for _ in 0..<12 {
            let decision = machine.cycleFinished(.failed(reason: "connection refused"), jitter: 1.0)
            delays.append(decision.delay)
            #expect(decision.reconnect)
            if let change = decision.change { logged.append(change) }
        }
        #expect(delays.prefix(4) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4)])
        #expect(delays.last == .seconds(30))
        #expect(delays.allSatisfy { $0 <= .seconds(30) })
        #expect(logged == [.startedFailing(reason: "connection refused", retryIn: .milliseconds(500))])
        #expect(machine.state == .failing(attempts: 12))

        let recovered = machine.cycleFinished(.loaded(records: 0, backlog: false), jitter: 0)
        #expect(recovered.change == .recovered(afterAttempts: 12))
        #expect(machine.state == .active)
        // A new failure after recovery starts again from the base delay and logs again.
        let again = machine.cycleFinished(.failed(reason: "x"), jitter: 1.0)
        #expect(again.delay == .milliseconds(500))
        #expect(again.change != nil)
    }

    @Test("jitter spreads a retry delay over the upper half of its step", arguments: [0.0, 0.25, 0.999])
    func jitterBounds(jitter: Double) {
        for attempt in 1...10 {
            let delay = LoadStateMachine.backoff(
                attempt: attempt, base: .milliseconds(500), cap: .seconds(30), jitter: jitter)
            let full = min(30.0, 0.5 * Double(1 << (attempt - 1)))
            #expect(delay.seconds >= full / 2 - 1e-9)
            #expect(delay.seconds <= full + 1e-9)
        }
    }

    @Test("another aggregator holding the lock is logged once, and so is taking over")
    func standbyLoggedOnce() {
        var machine = machine()
        #expect(machine.cycleFinished(.busy, jitter: 0).change == .becameStandby)
        #expect(machine.cycleFinished(.busy, jitter: 0).change == nil)
        #expect(machine.state == .standby)
        #expect(machine.cycleFinished(.loaded(records: 1, backlog: false), jitter: 0).change == .becameActive)
    }

    @Test("a stopped machine ignores later outcomes")
    func stoppedIgnores() {
        var machine = machine()
        machine.stop()
        #expect(machine.cycleFinished(.failed(reason: "x"), jitter: 0).change == nil)
        #expect(machine.state == .stopped)
    }
}
