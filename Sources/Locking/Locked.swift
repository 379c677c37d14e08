import Glibc

/// A value guarded by a `pthread_mutex_t`, with the shape of `Synchronization.Mutex`
/// (`withLock { state in ... }`).
///
/// Why not `Synchronization.Mutex`: on Linux (Swift 6.3) it locks with raw futex system calls,
/// which ThreadSanitizer does not see, so every access made under it is reported as a race and a
/// real race cannot be told apart from that noise (docs/reliability.md, "ThreadSanitizer"). TSan
/// intercepts `pthread_mutex_lock`, so state guarded by this lock is checked for real. The cost is
/// two heap allocations per lock (the mutex and the value, below), made once, and the same
/// uncontended lock/unlock path in glibc.
///
/// The value lives in memory allocated once beside the mutex, not in a stored property: an `inout`
/// access to a class's stored property is checked for exclusivity at run time (a
/// `swift_beginAccess`/`swift_endAccess` pair, about 80 instructions, on every `withLock`), which
/// the mutex already guarantees. Measured under callgrind: ~6 locks per single-event request.
///
/// `@unchecked Sendable`: the value is only read or written inside `withLock`, while the mutex is
/// held; the mutex and the value are allocated once, never moved, and destroyed in `deinit`.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)

    /// A lock around `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        value.initialize(to: initialValue)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with exclusive access to the value; the lock is released when `body` returns
    /// or throws. Not reentrant: calling `withLock` on the same lock inside `body` deadlocks.
    package func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
