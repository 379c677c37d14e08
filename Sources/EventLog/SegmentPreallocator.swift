import Foundation
import Glibc

/// Extends the open segment ahead of the committer with written zeros (as PostgreSQL does for its
/// WAL), on a thread of its own, so frames are written into space whose blocks are allocated and
/// whose size is already durable: their `fdatasync` then writes no inode and allocates no blocks.
/// On this disk an 8 KiB write + `fdatasync` that extends the file took p50 0.14-0.21 ms, one into
/// written zeros 0.085-0.093 ms; a 1 MiB one 0.80-1.12 ms vs 0.43-0.47 ms
/// (`bench/eventlog/prealloc-probe.c`).
///
/// Protocol with the committer (`WriterCore`): the committer `attach`es each new segment, reserves
/// the range of each frame before writing it (`willWrite`) and reports where its data ends after
/// (`didWrite`); when fewer than half a chunk of zeros are left ahead of it, this thread zero-fills
/// the next chunk beyond both the data and the zeros written so far, piece by piece: each 256 KiB
/// piece is claimed under the lock only if no frame is (being) written at or past it, then written
/// and written back (`sync_file_range`); one `fdatasync` ends the chunk. A frame reaching into the
/// piece being filled waits for that piece only; a fill stops when the committer catches up with
/// it. So zeros never overwrite a frame. The fill starts a quarter chunk past the data when the
/// committer has caught up with the zeros. Zeros never go past `limit` (the segment size limit,
/// the disk cap). Before truncating or closing the segment the committer `detach`es, which waits
/// for a fill in progress to give up the descriptor. A failed piece (a full disk) is cut off again
/// and stops preallocation for that segment (logged once, as `segment.preallocation_failed`).
///
/// `@unchecked Sendable`: the state is only touched under the monitor's lock; the zero buffer is
/// never written.
final class SegmentPreallocator: @unchecked Sendable {
    final class State {
        var fd: Int32 = -1
        var path = ""
        /// End of the frames the committer wrote.
        var dataEnd: Int64 = 0
        /// End of the frame the committer is writing (`willWrite` to `didWrite`): no piece of zeros
        /// is claimed before it.
        var reservedEnd: Int64 = 0
        /// Where the frames end or will end once the frame being written is.
        var frontier: Int64 { max(dataEnd, reservedEnd) }
        /// Zeros are written (and synced) up to here.
        var zeroEnd: Int64 = 0
        /// Zeros never go past this.
        var limit: Int64 = 0
        /// The piece being zero-filled now: the committer waits only for a frame reaching into it.
        var filling: Range<Int64>?
        /// A fill (of a whole chunk, piece by piece) is under way on `fd`: `detach` waits for it.
        var isFilling = false
        /// A fill of this segment failed: no more fills until a new segment is attached (a retry
        /// on a full disk would take space frames need, and fail again).
        var failed = false
        /// The segment whose fill failed.
        var failedPath: String?
        var stopped = false
        var running = false
        /// Bytes per second the committer wrote in its last window of at least 100 ms: zeros are
        /// written only while this is low.
        var dataRate: Int64 = 0
        /// Start of the current rate window (monotonic ns) and where the data ended then.
        var windowStart: UInt64 = 0
        var windowStartEnd: Int64 = 0
        /// Chunks filled, and frames that waited for a fill (tests and benchmarks read them).
        var fills = 0
        var waits = 0
    }

    private enum Condition {
        static let work = 0  // the fill thread waits for a segment that needs zeros
        static let done = 1  // the committer waits for a fill to end
    }

    private let monitor = Monitor(State(), conditions: 2)
    /// Bytes zero-filled at a time.
    let chunk: Int64
    private let zeros: UnsafeMutableRawPointer

    /// A preallocator filling `chunk` bytes at a time; starts its thread.
    init(chunk: Int64) {
        self.chunk = chunk
        // calloc of this size maps zero pages: reading them costs no memory.
        zeros = calloc(1, Int(chunk))!
        monitor.withLock { $0.running = true }
        Thread.startNamed("eventlog-alloc") { [self] in self.run() }
    }

    deinit { free(zeros) }

    /// The committer opened the segment at `path` (a new segment, or the same one after a
    /// truncation) whose frames end at `dataEnd`; zeros may be written up to `limit`.
    ///
    /// The fills write and sync through a descriptor of their own, opened here, never the
    /// committer's: Linux reports a failed write-back once per open file description, to the first
    /// sync call that checks through it (`fdatasync`, and `sync_file_range` with WAIT_AFTER, check
    /// the whole file). Until 2026-12-04 the fills used the committer's descriptor, so a fill's sync
    /// could take the error of a frame whose write-back had failed, and the frame's own `fdatasync`
    /// then returned 0: a lost frame acknowledged. With its own description each side is told.
    func attach(path: String, dataEnd: Int64, limit: Int64) {
        monitor.withLock { state in
            releaseDescriptor(state)
            let own = open(path, O_WRONLY | O_CLOEXEC)
            if own < 0 {
                // No preallocation for this segment (frames are written as without it).
                Recovery.logger.warning(
                    "segment.preallocation_failed", ["segment.path": path, "call": "open", "errno": "\(errno)"])
            }
            state.fd = own
            state.path = path
            state.dataEnd = dataEnd
            state.reservedEnd = dataEnd
            state.zeroEnd = dataEnd
            state.windowStart = Monitor<State>.monotonicNow()
            state.windowStartEnd = dataEnd
            state.limit = limit
            state.failed = state.failedPath == path
            monitor.signal(Condition.work)
        }
    }

    /// The committer is about to truncate or close the segment: stops filling it and waits for a
    /// fill in progress to give the descriptor up (at most the piece being written).
    func detach() {
        monitor.withLock { state in releaseDescriptor(state) }
    }

    /// Stops filling through the fills' descriptor, waits for a fill in progress to give it up,
    /// and closes it (under the lock).
    private func releaseDescriptor(_ state: State) {
        let own = state.fd
        state.fd = -1
        while state.isFilling { monitor.wait(Condition.done) }
        if own >= 0 { Glibc.close(own) }
    }

    /// The committer is about to write `[offset, end)`: waits while that overlaps the piece being
    /// filled, then reserves the range (no piece is claimed before `end` from now on).
    func willWrite(from offset: Int64, to end: Int64) {
        monitor.withLock { state in
            var waited = false
            while let filling = state.filling, filling.overlaps(offset..<end) {
                waited = true
                monitor.wait(Condition.done)
            }
            if waited { state.waits += 1 }
            state.reservedEnd = max(state.reservedEnd, end)
        }
    }

    /// The committer wrote a frame ending at `end`; zeros may be written up to `limit`.
    func didWrite(end: Int64, limit: Int64) {
        monitor.withLock { state in
            let now = Monitor<State>.monotonicNow()
            let elapsed = now &- state.windowStart
            if elapsed >= 100_000_000 {
                state.dataRate = max(0, end - state.windowStartEnd) * 1_000_000_000 / Int64(elapsed)
                state.windowStart = now
                state.windowStartEnd = end
            }
            state.dataEnd = end
            state.limit = limit
            if !state.isFilling, needsFill(state) { monitor.signal(Condition.work) }
        }
    }

    /// Stops the fill thread (after `detach`).
    func stop() {
        monitor.withLock { state in
            state.stopped = true
            monitor.signal(Condition.work)
            while state.running { monitor.wait(Condition.done) }
            releaseDescriptor(state)
        }
    }

    /// Chunks filled and frames that waited for a fill so far.
    var counts: (fills: Int, waits: Int) { monitor.withLock { ($0.fills, $0.waits) } }

    private func needsFill(_ state: State) -> Bool {
        state.fd >= 0 && !state.failed && state.dataRate <= Self.maxFillRate
            && state.zeroEnd - state.frontier < chunk / 2 && nextRegion(state) != nil
    }

    /// Zeros are written only while the committer writes at most this many bytes per second.
    /// Writing zeros costs CPU and disk bandwidth in proportion to the bytes (~1.2 ms of kernel
    /// time per MB here, counting the writeback) and saves a roughly fixed time per sync, so it
    /// pays at the rates of single requests (~4 MB/s of frames at 40k requests/s) and not at those
    /// of batches (~50 MB/s) or `bench log` (~120 MB/s), which it slowed (docs/event-log.md).
    static let maxFillRate: Int64 = 16 << 20

    /// The next chunk to fill: after the zeros written so far, and a quarter chunk past the data
    /// when the committer has caught up with them (it keeps writing meanwhile).
    private func nextRegion(_ state: State) -> Range<Int64>? {
        let start = state.zeroEnd > state.frontier ? state.zeroEnd : state.frontier + chunk / 4
        let end = min(start + chunk, state.limit)
        return end > start ? start..<end : nil
    }

    private func run() {
        while let (fd, path, region) = takeRegion() {
            let failure = fill(fd: fd, region: region)
            if let failure {
                Recovery.logger.warning(
                    "segment.preallocation_failed",
                    ["segment.path": path, "call": failure.call, "errno": "\(failure.code)"])
            }
            monitor.withLock { state in
                state.filling = nil
                state.isFilling = false
                if failure == nil {
                    state.fills += 1
                } else {
                    state.failed = true
                    state.failedPath = path
                }
                monitor.broadcast(Condition.done)
            }
        }
        monitor.withLock { state in
            state.running = false
            monitor.broadcast(Condition.done)
        }
    }

    /// Waits until the attached segment needs zeros and marks the region as being filled; nil
    /// once stopped.
    private func takeRegion() -> (Int32, String, Range<Int64>)? {
        monitor.withLock { state in
            while !state.stopped {
                if needsFill(state), let region = nextRegion(state) {
                    state.isFilling = true
                    return (state.fd, state.path, region)
                }
                monitor.wait(Condition.work)
            }
            return nil
        }
    }

    /// Writes zeros over `region` and syncs them; the failed call and errno otherwise.
    ///
    /// In pieces of `pieceBytes`, each written back (`sync_file_range`) before the next is written,
    /// then one `fdatasync` for the size and allocation: a frame's `fdatasync` waits for every page
    /// of the file that is dirty or under writeback, so with the whole chunk dirty at once a sync
    /// running meanwhile waited for megabytes of zeros (p99 of single requests 40-77 ms instead of
    /// 10-26 ms with 4 MiB chunks written whole; `bench/ingest-ab`, 04:11 UTC).
    ///
    /// Each piece is claimed under the lock first (`filling`): the committer then waits only for a
    /// frame reaching into that piece (at most one piece's write-back), and the fill stops when
    /// the committer has caught up with it (zeros where frames already are would be pointless) or
    /// the segment was detached. A failed piece is cut off again: every frame lies before it.
    private func fill(fd: Int32, region: Range<Int64>) -> (call: String, code: Int32)? {
        var offset = region.lowerBound
        while offset < region.upperBound {
            let piece = offset..<min(offset + Self.pieceBytes, region.upperBound)
            let claimed = monitor.withLock { state in
                guard state.fd == fd, !state.stopped, state.frontier <= piece.lowerBound else { return false }
                state.filling = piece
                return true
            }
            guard claimed else { return nil }
            var failure: (call: String, code: Int32)?
            var at = piece.lowerBound
            while at < piece.upperBound, failure == nil {
                let written = pwrite(fd, zeros, Int(piece.upperBound - at), off_t(at))
                if written < 0 {
                    if errno != EINTR { failure = ("pwrite", errno) }
                    continue
                }
                at += Int64(written)
            }
            if failure == nil { failure = writeBack(fd: fd, offset: piece.lowerBound, count: Int(piece.count)) }
            if failure != nil { _ = ftruncate(fd, off_t(piece.lowerBound)) }
            monitor.withLock { state in
                state.filling = nil
                if failure == nil { state.zeroEnd = piece.upperBound }
                monitor.broadcast(Condition.done)
            }
            if let failure { return failure }
            offset = piece.upperBound
        }
        while fdatasync(fd) != 0 {
            if errno != EINTR { return ("fdatasync", errno) }
        }
        return nil
    }

    /// Bytes of zeros written (and written back) at a time.
    static let pieceBytes: Int64 = 256 * 1024

    /// Starts and waits for the writeback of `count` bytes at `offset` (`sync_file_range`, no
    /// metadata); `fdatasync` where libc has no `sync_file_range`.
    private func writeBack(fd: Int32, offset: Int64, count: Int) -> (call: String, code: Int32)? {
        guard let syncFileRange = Self.syncFileRange else {
            while fdatasync(fd) != 0 {
                if errno != EINTR { return ("fdatasync", errno) }
            }
            return nil
        }
        // SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER
        while syncFileRange(fd, off_t(offset), off_t(count), 1 | 2 | 4) != 0 {
            if errno != EINTR { return ("sync_file_range", errno) }
        }
        return nil
    }

    /// glibc's `sync_file_range` (Swift's Glibc module does not declare it: it needs _GNU_SOURCE).
    private static let syncFileRange: (@convention(c) (Int32, off_t, off_t, UInt32) -> Int32)? = {
        guard let symbol = dlsym(nil, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, off_t, off_t, UInt32) -> Int32).self)
    }()
}
