import Glibc
import Observability

/// The I/O half of the writer: owns the open segment's file descriptor and executes
/// `SegmentStateMachine` plans for groups of compressed frames (compression runs before, on the
/// compressor threads, see `FrameEncoder`).
///
/// `@unchecked Sendable`: owns a file descriptor; after `LogWriter.init` hands it to the committer
/// thread, only that thread touches it (and `close` runs on that thread as it ends).
final class WriterCore: @unchecked Sendable {
    private(set) var machine: SegmentStateMachine
    private let nodeDirectory: String
    private let codec: Codec
    private let prefixSize: Int
    private let clock: LogClock
    private let metrics: LogMetrics
    /// `fdatasync` (or the test's replacement): 0 or the errno.
    private let groupSync: @Sendable (_ fd: Int32) -> Int32
    private var fd: Int32 = -1
    private var path = ""
    /// With syncs in flight, one descriptor on the open segment per sync thread, opened with the
    /// segment, before any frame is written: Linux reports a failed write-back to every description
    /// open when it happened, but to one opened later only if nobody has seen it yet, and the
    /// preallocator's syncs may have. Until 2026-12-05 each sync thread opened its own when it
    /// first took a group of the segment, and could miss the error of a group it then acknowledged.
    private var syncFDs: [Int32] = []
    /// The errno of opening `syncFDs` for the open segment, 0 when they are open.
    private var syncOpenError: Int32 = 0
    private let syncThreads: Int
    /// End of the frames written to the open segment (the file may extend past it with the zeros
    /// of the preallocator: frames are written at this offset, not appended).
    private var dataEnd: Int64 = 0
    /// Zero-fills the open segment ahead of the frames; nil when `preallocationBytes` is 0.
    let preallocator: SegmentPreallocator?
    private let maxSegmentBytes: Int64
    private let maxDiskBytes: Int64?
    private var lastDiskScan: Int64?
    private var lockFD: Int32

    /// Takes the node directory's writer lock: a POSIX record lock on `writer.lock`, so a second
    /// process cannot append to the same node (POSIX locks are per process and not inherited
    /// across `fork`, unlike `flock`). Called before recovery.
    static func lockDirectory(_ nodeDirectory: String) throws(LogError) -> Int32 {
        try FileSystem.makeDirectories(nodeDirectory)
        let path = nodeDirectory + "/writer.lock"
        let fd = try FileSystem.open(path, flags: O_RDWR | O_CREAT)
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        if fcntl(fd, F_SETLK, &lock) != 0 {
            let code = errno
            Glibc.close(fd)
            if code == EAGAIN || code == EACCES {
                throw .unavailable(reason: "another process is writing to \(nodeDirectory)")
            }
            throw .io(call: "fcntl(F_SETLK)", errno: code, path: path)
        }
        return fd
    }

    init(configuration: LogConfiguration, lockFD: Int32, recovered: Recovery.Result, metrics: LogMetrics) {
        self.lockFD = lockFD
        syncThreads = configuration.syncThreads
        nodeDirectory = configuration.nodeDirectory
        codec = configuration.codec
        clock = configuration.clock
        self.metrics = metrics
        groupSync = configuration.groupSync
        prefixSize = SegmentFormat.prefixSize(configuration.codec)
        maxSegmentBytes = configuration.maxSegmentBytes
        maxDiskBytes = configuration.maxDiskBytes
        preallocator =
            configuration.preallocationBytes > 0 ? SegmentPreallocator(chunk: configuration.preallocationBytes) : nil
        var syncInterval: Int64?
        if case .interval(let interval) = configuration.durability { syncInterval = interval.microseconds }
        machine = SegmentStateMachine(
            limits: .init(
                maxSegmentBytes: configuration.maxSegmentBytes,
                maxSegmentAgeMicros: configuration.maxSegmentAge.microseconds,
                maxDiskBytes: configuration.maxDiskBytes, syncIntervalMicros: syncInterval),
            nextSegmentID: recovered.nextSegmentID, nextSequence: recovered.nextSequence,
            diskBytes: recovered.diskBytes)
        metrics.diskBytes.set(Double(recovered.diskBytes))
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
        closeSyncDescriptors()
        if lockFD >= 0 { Glibc.close(lockFD) }
    }

    private func closeSyncDescriptors() {
        for descriptor in syncFDs { Glibc.close(descriptor) }
        syncFDs = []
    }

    /// Commits a prefix of `jobs` (compressed frames in ticket order) as one group: writes each
    /// frame with its metadata prefix at the end of the open segment, then one `fdatasync` covers
    /// them all (when the durability mode asks for it). Sets `job.error` on every frame that is not
    /// durable; on a failed write or sync the whole group is cut away again, so nothing but whole,
    /// acknowledged-or-never-acknowledged frames stays in the segment, and sequence numbers stay
    /// gap-free. A group ends before a frame that needs a new segment (the old one is synced and
    /// sealed in the next group). Returns how many jobs it consumed (at least one).
    func commit(_ jobs: ArraySlice<FrameJob>) -> Int {
        let (consumed, group, needsSync) = write(jobs, mayRotate: true)
        guard let group else { return consumed }
        if needsSync {
            let start = MonotonicInstant.now
            let code = groupSync(fd)
            if code != 0 {
                failGroups([group], error: Self.syncError(code, group))
                return consumed
            }
            metrics.fsyncSeconds.observe(since: start)
            machine.didSync()
        }
        countCommitted(group)
        publishDiskBytes()
        return consumed
    }

    /// The first half of `commit`: writes a prefix of `jobs` as one group without syncing it.
    /// Returns how many jobs it consumed, the group when any frame was written (nil when every
    /// consumed job carries its error), and whether the durability mode wants it synced now.
    /// With `mayRotate` false (syncs of the open segment still in flight), consumes nothing when
    /// the first frame needs a new segment: the caller waits for those syncs and calls again.
    func write(_ jobs: ArraySlice<FrameJob>, mayRotate: Bool) -> (consumed: Int, group: WrittenGroup?, needsSync: Bool)
    {
        var consumed = 0
        var written: [(job: FrameJob, offset: Int64)] = []
        var needsSync = false
        var groupBytes = 0
        for job in jobs {
            if job.error != nil {
                consumed += 1
                continue
            }
            let now = clock.now()
            let elapsed = clock.elapsed()
            let frameLength = prefixSize + job.bodyLength
            // Planned on a copy, taken only once the frame is known to belong to this group. The
            // disk cap's re-check comes first: with space freed since the last scan, the frame may
            // need a new segment where it was refused before. The group then ends before it: until
            // 2026-12-04 it rotated mid-group, and a failed sync of the group cut the new segment
            // back to an offset in the old one, leaving the frames before the switch in the log
            // although their appends were refused.
            var planned = machine
            var plan = planned.plan(frameBytes: frameLength, now: elapsed)
            if case .diskFull = plan, refreshDiskUsage(now: elapsed) {
                planned = machine
                plan = planned.plan(frameBytes: frameLength, now: elapsed)
            }
            if !written.isEmpty || !mayRotate, case .write(let write) = plan, write.rotate { break }
            consumed += 1
            machine = planned
            guard case .write(let write) = plan else {
                job.error = .diskFull
                continue
            }
            if write.rotate {
                do {
                    try rotate(to: write.segment, syncFirst: write.syncBeforeSeal)
                } catch {
                    machine.didFail(frameWasComplete: false, truncated: false)
                    job.error = Self.classify(error)
                    continue
                }
            }
            if let error = writeFrame(job, at: write.offset, frameLength: frameLength, now: now) {
                job.error = error
                failGroup(written, from: written.first?.offset ?? write.offset, error: error, frameWasComplete: false)
                return (consumed, nil, false)
            }
            machine.didWrite(frameBytes: frameLength, records: job.records, now: elapsed, synced: false)
            written.append((job, write.offset))
            needsSync = needsSync || write.syncAfterWrite
            groupBytes += job.ndjson.count
        }
        guard let first = written.first else { return (consumed, nil, false) }
        let group = WrittenGroup(
            jobs: written.map(\.job), fd: fd, syncFDs: syncFDs, syncOpenError: syncOpenError, path: path,
            offset: first.offset,
            records: written.reduce(0) { $0 + $1.job.records },
            frameBytes: written.reduce(0) { $0 + prefixSize + $1.job.bodyLength }, uncompressedBytes: groupBytes)
        return (consumed, group, needsSync)
    }

    /// Counts a durable group in the metrics (any thread: the metrics are thread-safe).
    func countCommitted(_ group: WrittenGroup) {
        metrics.frames.increment(by: group.jobs.count)
        metrics.records.increment(by: group.records)
        metrics.bytesWritten.increment(by: group.frameBytes)
        metrics.uncompressedBytes.increment(by: group.uncompressedBytes)
    }

    /// Sets the disk-usage gauge from the committer's count.
    func publishDiskBytes() { metrics.diskBytes.set(Double(machine.diskBytes)) }

    /// Groups written one after another in the open segment, the first of which failed its sync
    /// (and no later one is acknowledged): cuts the segment back to where the first began, takes
    /// back their sequence numbers and bytes, and fails every frame of them. Frames continue in a
    /// new segment (a reader may have seen the cut frames).
    func failGroups(_ groups: [WrittenGroup], error: LogError) {
        guard let first = groups.first else { return }
        for group in groups {
            machine.undoWrites(records: group.records, bytes: Int64(group.frameBytes))
            for job in group.jobs { job.error = error }
        }
        machine.didFail(frameWasComplete: true, truncated: truncate(to: first.offset))
    }

    /// Every written frame is synced (fsync durability, after the syncs in flight completed).
    func didSyncAll() { machine.didSync() }

    /// Fills in the frame's metadata prefix (its first sequence number is the next one) and writes
    /// the whole frame with one `pwrite` at `offset` (the end of the data); returns the (classified)
    /// error instead of throwing.
    private func writeFrame(_ job: FrameJob, at offset: Int64, frameLength: Int, now: Int64) -> LogError? {
        let metadata = FrameMetadata(
            codec: codec, firstSequence: machine.nextSequence, recordCount: job.records,
            uncompressedLength: job.ndjson.count, bodyLength: job.bodyLength, committedAt: now,
            bodyChecksum: job.bodyChecksum)
        let prefix = prefixSize
        preallocator?.willWrite(from: offset, to: offset + Int64(frameLength))
        let result = job.frame.withUnsafeMutableBytes { raw in
            metadata.writePrefix(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<prefix]))
            return Result { () throws(LogError) in
                try FileSystem.writeAll(
                    fd, UnsafeRawBufferPointer(rebasing: raw[0..<frameLength]), at: offset, path: path)
            }
        }
        if case .failure(let error) = result { return Self.classify(error) }
        dataEnd = offset + Int64(frameLength)
        // This frame is not in `machine.diskBytes` yet (the caller counts it next): until
        // 2026-12-05 the zeros could run past the disk cap by the frame's size.
        preallocator?.didWrite(end: dataEnd, limit: preallocationLimit(uncounted: Int64(frameLength)))
        return nil
    }

    /// How far zeros may go: not past the segment size limit, nor the disk cap's headroom, less
    /// `uncounted` bytes written and not yet in `machine.diskBytes`.
    private func preallocationLimit(uncounted: Int64 = 0) -> Int64 {
        let headroom = maxDiskBytes.map { max(0, $0 - machine.diskBytes - uncounted) } ?? maxSegmentBytes
        return min(maxSegmentBytes, dataEnd + headroom)
    }

    /// A write or sync of the group failed: cut the segment back to where the group began, take
    /// back the group's sequence numbers and bytes, and fail every frame of it.
    private func failGroup(
        _ written: [(job: FrameJob, offset: Int64)], from offset: Int64, error: LogError, frameWasComplete: Bool
    ) {
        let records = written.reduce(0) { $0 + $1.job.records }
        let bytes = written.reduce(0) { $0 + prefixSize + $1.job.bodyLength }
        machine.undoWrites(records: records, bytes: Int64(bytes))
        machine.didFail(frameWasComplete: frameWasComplete || !written.isEmpty, truncated: truncate(to: offset))
        for entry in written { entry.job.error = error }
    }

    /// Syncs the open segment if interval durability says it is time (called when idle).
    func syncIfDue() {
        guard fd >= 0, machine.isSyncDue(now: clock.elapsed()) else { return }
        let start = MonotonicInstant.now
        if fdatasync(fd) == 0 {
            metrics.fsyncSeconds.observe(since: start)
        } else {
            // Interval mode already acknowledged these frames; all we can do is say so, stop
            // trusting this segment and continue in a new one (retrying would spin on the same error).
            Recovery.logger.error("segment.sync_failed", ["segment.path": path, "errno": "\(errno)"])
            metrics.failures.increment()
            machine.didFail(frameWasComplete: true, truncated: false)
        }
        machine.didSync()
    }

    /// Monotonic nanoseconds until a pending interval sync is due, nil when none is pending.
    func nanosUntilSync() -> UInt64? {
        guard fd >= 0, let micros = machine.microsUntilSync(now: clock.elapsed()) else { return nil }
        return UInt64(micros) * 1000
    }

    /// Cuts the zero tail off, syncs and closes the open segment, stops the preallocator and
    /// releases the directory lock.
    func close() {
        if fd >= 0 {
            let trimmed = (try? trimZeroTail()) ?? false
            if machine.unsyncedSince != nil || trimmed { _ = fdatasync(fd) }
            Glibc.close(fd)
            fd = -1
        }
        closeSyncDescriptors()
        preallocator?.stop()
        if lockFD >= 0 {
            Glibc.close(lockFD)
            lockFD = -1
        }
    }

    /// Seals the open segment (its zero tail cut off; the cut and any unsynced frames synced before
    /// the next segment exists, so a sealed segment never keeps zeros) and creates `segment`.
    private func rotate(to segment: UInt64, syncFirst: Bool) throws(LogError) {
        if fd >= 0 {
            let trimmed = try trimZeroTail()
            if syncFirst || trimmed { try FileSystem.syscall("fdatasync", path: path) { fdatasync(fd) } }
            Glibc.close(fd)
            fd = -1
        }
        // No sync is in flight here (the committer switches segments only then).
        closeSyncDescriptors()
        let newPath = nodeDirectory + "/" + SegmentFormat.fileName(segment: segment)
        let newFD = try FileSystem.open(newPath, flags: O_WRONLY | O_CREAT | O_EXCL)
        fd = newFD
        path = newPath
        dataEnd = 0
        syncOpenError = 0
        for _ in 0..<syncThreads {
            let descriptor = Glibc.open(newPath, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                // The segment's groups then fail at their sync, as a failed sync would fail them.
                syncOpenError = errno
                closeSyncDescriptors()
                break
            }
            syncFDs.append(descriptor)
        }
        // The new file's directory entry must be durable before any frame in it is acknowledged.
        try FileSystem.fsyncDirectory(nodeDirectory)
        _ = refreshDiskUsage(now: clock.elapsed(), force: true)
        preallocator?.attach(path: path, dataEnd: 0, limit: preallocationLimit())
    }

    /// Stops preallocating the open segment and cuts the file back to the end of its frames; true
    /// when it cut anything (the caller syncs the new size).
    private func trimZeroTail() throws(LogError) -> Bool {
        guard let preallocator else { return false }
        preallocator.detach()
        guard try FileSystem.size(fd, path: path) > dataEnd else { return false }
        try FileSystem.syscall("ftruncate", path: path) { ftruncate(fd, off_t(dataEnd)) }
        return true
    }

    /// Cuts the open segment back to `offset` (zeros after it included; preallocation then
    /// continues from there); false when even that failed.
    private func truncate(to offset: Int64) -> Bool {
        guard fd >= 0 else { return false }
        preallocator?.detach()
        while ftruncate(fd, off_t(offset)) != 0 {
            if errno != EINTR { return false }
        }
        dataEnd = offset
        preallocator?.attach(path: path, dataEnd: offset, limit: preallocationLimit())
        return true
    }

    /// Re-measures disk usage (retention may have freed space) at most once a second unless forced.
    private func refreshDiskUsage(now: Int64, force: Bool = false) -> Bool {
        guard force || lastDiskScan.map({ now - $0 >= 1_000_000 }) ?? true else { return false }
        lastDiskScan = now
        guard let bytes = try? FileSystem.diskUsage(of: nodeDirectory) else { return false }
        machine.measuredDisk(bytes: bytes)
        metrics.diskBytes.set(Double(bytes))
        return true
    }

    /// `classify` for a failed `fdatasync` of `group`.
    static func syncError(_ code: Int32, _ group: WrittenGroup) -> LogError {
        classify(.io(call: "fdatasync", errno: code, path: group.path))
    }

    static func classify(_ error: LogError) -> LogError {
        if case .io(_, let code, _) = error, code == ENOSPC || code == EDQUOT { return .diskFull }
        return error
    }
}

/// Frames written to the open segment as one group, waiting for (or past) their `fdatasync`.
/// Created by the committer; with syncs in flight a sync thread fills in the outcome under the
/// writer's lock.
final class WrittenGroup {
    /// The frames written (in ticket order).
    let jobs: [FrameJob]
    /// The segment's descriptor: stays open while the group's sync is in flight (rotation waits).
    let fd: Int32
    /// The sync threads' descriptors on the segment, by thread (`WriterCore.syncFDs`), and the errno
    /// of opening them when they are missing.
    let syncFDs: [Int32]
    let syncOpenError: Int32
    let path: String
    /// Where the group begins in the segment.
    let offset: Int64
    let records: Int
    let frameBytes: Int
    let uncompressedBytes: Int
    /// A sync thread has taken the group.
    var isSyncing = false
    /// The sync finished (`error` says how).
    var isSynced = false
    var error: LogError?

    init(
        jobs: [FrameJob], fd: Int32, syncFDs: [Int32], syncOpenError: Int32, path: String, offset: Int64, records: Int,
        frameBytes: Int, uncompressedBytes: Int
    ) {
        self.jobs = jobs
        self.fd = fd
        self.syncFDs = syncFDs
        self.syncOpenError = syncOpenError
        self.path = path
        self.offset = offset
        self.records = records
        self.frameBytes = frameBytes
        self.uncompressedBytes = uncompressedBytes
    }
}
