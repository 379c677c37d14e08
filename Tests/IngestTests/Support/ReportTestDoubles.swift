import Dispatch
import Foundation
import Locking
import Synchronization
import Testing

@testable import Ingest

// The report provider and bodies the report API's tests serve: an echoing provider that can hold
// requests at a gate, a pattern stream and a body made while it is sent.

/// A report provider that echoes what it was asked, optionally holding each request at a gate
/// until the test opens it (to prove reports run off the event loops and to fill the queue).
final class EchoReportProvider: ReportProvider {
    let requests = Locked<[ReportRequest]>([])
    let isGated: Bool
    /// Signalled when a request reaches the provider (on a report worker).
    let arrived = DispatchSemaphore(value: 0)
    /// Each signal lets one gated request through.
    let gate = DispatchSemaphore(value: 0)
    /// Makes each answer (nil: the echo); a maker, so the provider keeps no streamed body alive.
    let makeAnswer: (@Sendable () -> ReportAnswer)?

    init(isGated: Bool = false, answer: ReportAnswer? = nil) {
        self.isGated = isGated
        if let answer { self.makeAnswer = { answer } } else { self.makeAnswer = nil }
    }

    init(isGated: Bool = false, makeAnswer: @escaping @Sendable () -> ReportAnswer) {
        self.isGated = isGated
        self.makeAnswer = makeAnswer
    }

    func respond(to request: ReportRequest) -> ReportAnswer {
        requests.withLock { $0.append(request) }
        arrived.signal()
        // Bounded: a test that forgets to open the gate fails instead of hanging.
        if isGated { _ = gate.wait(timeout: .now() + 20) }
        if let makeAnswer { return makeAnswer() }
        let pairs = request.parameters.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }
        let body = "{\"report\":\"\(request.kind)\",\"parameters\":{\(pairs.joined(separator: ","))}}"
        return .report(contentType: "application/json", body: Array(body.utf8))
    }
}

/// Carries a non-Sendable test object to a helper thread the test joins.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A body of `total` bytes following `byte(_:)`, made in pieces of at most 1,000 bytes (fewer than
/// libmicrohttpd asks for, so a chunk holds several reads); `released` runs when it is freed.
final class PatternStream: HTTPBodyStream, @unchecked Sendable {
    let total: Int
    private var offset = 0
    private let released: @Sendable () -> Void

    init(total: Int, released: @escaping @Sendable () -> Void) {
        self.total = total
        self.released = released
    }

    deinit { released() }

    static func byte(_ position: Int) -> UInt8 { UInt8(truncatingIfNeeded: position &* 7 &+ position / 251) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffer.count, total - offset, 1_000)
        for index in 0..<count { buffer[index] = Self.byte(offset + index) }
        offset += count
        return count
    }
}

/// A body made while it is sent (`HTTPProducedBody`), in two pieces: `first`, then, once `gate` is
/// signalled (or after 10 s), `rest`. `firstSent` is signalled when the server has read all of
/// `first`; `suspensions` counts the reads that found nothing ready; `cancelled` is signalled by
/// `cancel`. `produce` makes the body once (later calls return; HEAD makes it first).
final class GatedBody: HTTPProducedBody, @unchecked Sendable {
    let first: [UInt8]
    let rest: [UInt8]
    let gate = DispatchSemaphore(value: 0)
    let firstSent = DispatchSemaphore(value: 0)
    let cancelled = DispatchSemaphore(value: 0)
    let suspensions = Atomic<Int>(0)
    private let lock = NSLock()
    private var ready: [UInt8] = []
    private var sent = 0
    private var isMade = false
    private var isStarted = false
    private var wake: (@Sendable () -> Void)?

    init(first: [UInt8], rest: [UInt8]) {
        self.first = first
        self.rest = rest
    }

    func produce() {
        lock.lock()
        let starts = !isStarted
        isStarted = true
        lock.unlock()
        guard starts else { return }
        publish(first, last: false)
        _ = gate.wait(timeout: .now() + 10)
        publish(rest, last: true)
    }

    private func publish(_ bytes: [UInt8], last: Bool) {
        lock.lock()
        ready += bytes
        isMade = last
        let wake = self.wake
        self.wake = nil
        lock.unlock()
        wake?()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        produce()
        return read(into: buffer, suspend: {}, wake: {})
    }

    func read(
        into buffer: UnsafeMutableRawBufferPointer, suspend: () -> Void, wake: @escaping @Sendable () -> Void
    ) -> Int {
        lock.lock()
        defer { lock.unlock() }
        guard sent < ready.count else {
            guard isMade else {
                suspensions.add(1, ordering: .relaxed)
                suspend()
                self.wake = wake
                return -1
            }
            return 0
        }
        let count = min(buffer.count, ready.count - sent)
        ready.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + sent, byteCount: count) }
        sent += count
        if sent == first.count { firstSent.signal() }
        return count
    }

    func cancel() { cancelled.signal() }
}
