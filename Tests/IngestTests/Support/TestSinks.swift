import Locking
import Synchronization

@testable import Ingest

/// An in-memory sink that can be told to fail, for tests of the HTTP side.
final class MemorySink: EventSink {
    struct Failure: Error {}
    private let state = Locked<(records: [[UInt8]], failing: Bool)>(([], false))

    func append(_ records: [[UInt8]]) throws {
        try state.withLock { state throws(Failure) in
            if state.failing { throw Failure() }
            state.records += records
        }
    }

    var isWritable: Bool { !state.withLock { $0.failing } }
    var records: [[UInt8]] { state.withLock { $0.records } }
    var lines: [String] { records.map { String(decoding: $0, as: UTF8.self) } }
    func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }
}

/// Keys from a list the test controls; can be told to be unreachable.
final class StaticKeySource: KeySource {
    /// `source` tells this source's failures (in the log: `error="Unreachable(source: 3)"`) from
    /// those of other tests' sources failing at the same time in this process.
    struct Unreachable: Error { let source: Int }
    private static let sources = Atomic<Int>(0)
    /// This source's number, as its `Unreachable` errors carry it.
    let number = StaticKeySource.sources.wrappingAdd(1, ordering: .relaxed).newValue
    private let state: Locked<(keys: [APIKeyRecord], reachable: Bool)>

    init(_ keys: [APIKeyRecord]) { state = Locked((keys, true)) }

    func loadKeys() throws -> [APIKeyRecord] {
        let number = self.number
        return try state.withLock { state throws(Unreachable) in
            guard state.reachable else { throw Unreachable(source: number) }
            return state.keys
        }
    }

    func set(_ keys: [APIKeyRecord]) { state.withLock { $0.keys = keys } }
    /// How many keys it serves.
    var count: Int { state.withLock { $0.keys.count } }
    func setReachable(_ reachable: Bool) { state.withLock { $0.reachable = reachable } }
}
