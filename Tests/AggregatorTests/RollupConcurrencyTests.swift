import Dispatch
import EventModel
import Foundation
import Locking
import Postgres
import Synchronization
import Testing

@testable import Aggregator

/// A rollup pass in another session while a load is open (sql/075).
@Suite struct RollupConcurrencyTests {
    @Test(
        "a pass run from another session during a load waits for its commit: a day the load queued again keeps the load's rows"
    )
    func passDuringLoad() throws {
        let world = try World()
        defer { world.tearDown() }
        var configuration = world.configuration()
        configuration.rollupInterval = .seconds(3600)  // no pass but the test's
        let holding = Atomic<Bool>(false)
        let inHook = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        var hooks = LoaderHooks()
        hooks.beforeCommit = { _ in
            guard holding.exchange(false, ordering: .relaxed) else { return }
            inHook.signal()
            _ = release.wait(timeout: .now() + 120)
        }
        let aggregator = try world.aggregator(configuration, hooks: hooks)
        defer { aggregator.stop() }
        try aggregator.processRollups()
        // Day 2026-06-01 is queued by a committed load that no pass has applied yet.
        try world.write([event("first", time: "2026-06-01T10:00:00.000Z")])
        _ = try aggregator.runOnce()
        #expect(try world.count("select count(*) from rollup_pending_utc_days") == 1)

        // A second load of the same day, held just before its COMMIT: its key is queued already.
        try world.write([event("second", time: "2026-06-01T11:00:00.000Z")])
        holding.store(true, ordering: .relaxed)
        let loadDone = DispatchSemaphore(value: 0)
        let loadFailure = Locked<(any Error)?>(nil)
        Thread.detachNewThread {
            do { _ = try aggregator.runOnce() } catch { loadFailure.withLock { $0 = error } }
            loadDone.signal()
        }
        try #require(inHook.wait(timeout: .now() + 60) == .success, "the load never reached its commit")

        // Another session's pass, as `report daily` or an operator's psql runs it.
        let passer = try world.connect()
        defer { passer.close() }
        let pid = try #require(try passer.query("select pg_backend_pid() as pid").first?["pid", as: Int.self])
        let passFinished = Atomic<Bool>(false)
        let passDone = DispatchSemaphore(value: 0)
        let passFailure = Locked<(any Error)?>(nil)
        Thread.detachNewThread {
            do { _ = try passer.query("select process_rollups() as days") } catch {
                passFailure.withLock { $0 = error }
            }
            passFinished.store(true, ordering: .releasing)
            passDone.signal()
        }
        // Until the pass has run (before sql/075 it took the day and finished) or waits on a lock.
        let observer = try world.connect()
        defer { observer.close() }
        var waited = false
        for _ in 0..<600 where !passFinished.load(ordering: .acquiring) {  // at most 60 s
            let waiting = try observer.query(
                "select count(*)::int as n from pg_locks where pid = \(pid)::int and not granted"
            ).first?["n", as: Int.self]
            if waiting ?? 0 > 0 {
                waited = true
                break
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        release.signal()
        try #require(loadDone.wait(timeout: .now() + 60) == .success && passDone.wait(timeout: .now() + 60) == .success)
        #expect(loadFailure.withLock { $0 } == nil)
        #expect(passFailure.withLock { $0 } == nil)
        #expect(waited, "the pass did not wait for the load")

        // Whatever is still queued is applied; the day's rollup holds both loads' events.
        try aggregator.processRollups()
        #expect(try world.count("select count(*) from events") == 2)
        #expect(try world.count("select coalesce(sum(events), 0)::int from rollup_events_daily") == 2)
        #expect(try world.count("select count(*) from rollup_pending_utc_days") == 0)
        #expect(try world.count("select count(*) from rollup_pending_keys") == 0)
    }
}
