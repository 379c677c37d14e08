import Glibc
import Observability

/// State guarded by one pthread mutex, with condition variables to wait on (a classic monitor).
/// `Synchronization.Mutex` has no condition variable; the group commit needs threads to sleep
/// until the writer finishes their frame.
///
/// The state is a class instance, not an `inout` struct: code inside `withLock` calls `wait`, which
/// releases the lock so other threads change the state. Under an `inout` access the optimizer may
/// assume nobody else changes the value and keep stale copies across `wait` (it did: release
/// builds hung in `close`); loads of class properties after an opaque call are always fresh.
///
/// `@unchecked Sendable`: owns the pthread mutex and conditions (freed in `deinit`); `state` is
/// only touched inside `withLock` or `wait`, i.e. while the mutex is held.
final class Monitor<State: AnyObject>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let conditions: UnsafeMutablePointer<pthread_cond_t>
    private let conditionCount: Int
    private let state: State

    /// A monitor around `state` with `conditions` condition variables (numbered from 0).
    init(_ state: State, conditions count: Int) {
        self.state = state
        conditionCount = count
        conditions = .allocate(capacity: count)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        for index in 0..<count { pthread_cond_init(conditions + index, &attributes) }
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        for index in 0..<conditionCount { pthread_cond_destroy(conditions + index) }
        pthread_mutex_destroy(mutex)
        conditions.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the state while holding the lock.
    func withLock<T, E: Error>(_ body: (State) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(state)
    }

    /// Inside `withLock`: sleeps on `condition` until signalled or `deadline` (monotonic ns) passes.
    /// Spurious wake-ups happen: callers re-check their predicate in a loop.
    func wait(_ condition: Int, deadline: UInt64? = nil) {
        if let deadline {
            var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            pthread_cond_timedwait(conditions + condition, mutex, &spec)
        } else {
            pthread_cond_wait(conditions + condition, mutex)
        }
    }

    /// Wakes every thread waiting on `condition`.
    func broadcast(_ condition: Int) { pthread_cond_broadcast(conditions + condition) }

    /// Wakes one thread waiting on `condition`.
    func signal(_ condition: Int) { pthread_cond_signal(conditions + condition) }

    /// Monotonic nanoseconds, the time base of `wait(_:deadline:)`.
    static func monotonicNow() -> UInt64 { MonotonicInstant.now.nanoseconds }
}
