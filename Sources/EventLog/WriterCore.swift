import Glibc

/// The I/O half of the writer: owns the open segment's file descriptor, the compression context
/// and the frame buffer, and executes `SegmentStateMachine` plans.
///
/// `@unchecked Sendable`: owns a file descriptor and a compression context; after `LogWriter.init`
/// hands it to the writer thread, only that thread touches it (and `close` runs after the thread ended).
final class WriterCore: @unchecked Sendable {
    private(set) var machine: SegmentStateMachine
    private let nodeDirectory: String
    private let codec: Codec
    private let compressor: FrameCompressor
    private let clock: LogClock
    private let metrics: LogMetrics
    private var fd: Int32 = -1
    private var path = ""
    private var frame: [UInt8] = []
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

    init(configuration: LogConfiguration, lockFD: Int32, recovered: Recovery.Result, metrics: LogMetrics) throws(LogError) {
        self.lockFD = lockFD
        nodeDirectory = configuration.nodeDirectory
        codec = configuration.codec
        clock = configuration.clock
        self.metrics = metrics
        compressor = try FrameCompressor(codec: configuration.codec, level: configuration.compressionLevel)
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
        if lockFD >= 0 { Glibc.close(lockFD) }
    }

    /// Compresses `ndjson` (`records` lines) into one frame, writes it with one `write` and syncs
    /// it as the durability mode requires. On failure nothing but whole frames stays in the segment.
    func commit(_ ndjson: [UInt8], records: Int) -> LogError? {
        let now = clock.now()
        let frameLength: Int
        do {
            frameLength = try buildFrame(ndjson, records: records, now: now)
        } catch {
            return error
        }
        var plan = machine.plan(frameBytes: frameLength, now: now)
        if case .diskFull = plan, refreshDiskUsage(now: now) { plan = machine.plan(frameBytes: frameLength, now: now) }
        guard case .write(let write) = plan else { return .diskFull }
        if write.rotate {
            do {
                try rotate(to: write.segment, syncFirst: write.syncBeforeSeal)
            } catch {
                machine.didFail(frameWasComplete: false, truncated: false)
                return Self.classify(error)
            }
        }
        let writeResult = frame.withUnsafeBytes { raw in
            Result { () throws(LogError) in
                try FileSystem.writeAll(fd, UnsafeRawBufferPointer(rebasing: raw[0..<frameLength]), path: path)
            }
        }
        if case .failure(let error) = writeResult {
            machine.didFail(frameWasComplete: false, truncated: truncate(to: write.offset))
            return Self.classify(error)
        }
        if write.syncAfterWrite {
            let start = ContinuousClock.now
            if fdatasync(fd) != 0 {
                let error = LogError.io(call: "fdatasync", errno: errno, path: path)
                machine.didFail(frameWasComplete: true, truncated: truncate(to: write.offset))
                return Self.classify(error)
            }
            metrics.fsyncSeconds.observe(since: start)
        }
        machine.didWrite(frameBytes: frameLength, records: records, now: now, synced: write.syncAfterWrite)
        metrics.frames.increment()
        metrics.records.increment(by: records)
        metrics.bytesWritten.increment(by: frameLength)
        metrics.uncompressedBytes.increment(by: ndjson.count)
        metrics.diskBytes.set(Double(machine.diskBytes))
        return nil
    }

    /// Syncs the open segment if interval durability says it is time (called when idle).
    func syncIfDue() {
        guard fd >= 0, machine.isSyncDue(now: clock.now()) else { return }
        let start = ContinuousClock.now
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
        guard fd >= 0, let micros = machine.microsUntilSync(now: clock.now()) else { return nil }
        return UInt64(micros) * 1000
    }

    /// Syncs and closes the open segment and releases the directory lock.
    func close() {
        if fd >= 0 {
            if machine.unsyncedSince != nil { _ = fdatasync(fd) }
            Glibc.close(fd)
            fd = -1
        }
        if lockFD >= 0 {
            Glibc.close(lockFD)
            lockFD = -1
        }
    }

    private func buildFrame(_ ndjson: [UInt8], records: Int, now: Int64) throws(LogError) -> Int {
        let prefix = SegmentFormat.prefixSize(codec)
        let needed = prefix + compressor.bound(for: ndjson.count)
        if frame.count < needed { frame = [UInt8](repeating: 0, count: needed) }
        let compressor = self.compressor
        let compressed = ndjson.withUnsafeBytes { input in
            frame.withUnsafeMutableBytes { output in
                Result { () throws(LogError) -> (length: Int, checksum: UInt32) in
                    let body = UnsafeMutableRawBufferPointer(rebasing: output[prefix..<needed])
                    let length = try compressor.compress(input, into: body)
                    return (length, checksum(UnsafeRawBufferPointer(rebasing: body[0..<length])))
                }
            }
        }
        let (bodyLength, bodyChecksum) = try compressed.get()
        let metadata = FrameMetadata(
            codec: codec, firstSequence: machine.nextSequence, recordCount: records,
            uncompressedLength: ndjson.count, bodyLength: bodyLength, committedAt: now, bodyChecksum: bodyChecksum)
        frame.withUnsafeMutableBytes { metadata.writePrefix(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<prefix])) }
        return prefix + bodyLength
    }

    private func rotate(to segment: UInt64, syncFirst: Bool) throws(LogError) {
        if fd >= 0 {
            if syncFirst { try FileSystem.syscall("fdatasync", path: path) { fdatasync(fd) } }
            Glibc.close(fd)
            fd = -1
        }
        let newPath = nodeDirectory + "/" + SegmentFormat.fileName(segment: segment)
        let newFD = try FileSystem.open(newPath, flags: O_WRONLY | O_CREAT | O_EXCL | O_APPEND)
        fd = newFD
        path = newPath
        // The new file's directory entry must be durable before any frame in it is acknowledged.
        try FileSystem.fsyncDirectory(nodeDirectory)
        _ = refreshDiskUsage(now: clock.now(), force: true)
    }

    /// Cuts the open segment back to `offset`; false when even that failed.
    private func truncate(to offset: Int64) -> Bool {
        guard fd >= 0 else { return false }
        while ftruncate(fd, off_t(offset)) != 0 {
            if errno != EINTR { return false }
        }
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

    static func classify(_ error: LogError) -> LogError {
        if case .io(_, let code, _) = error, code == ENOSPC || code == EDQUOT { return .diskFull }
        return error
    }
}
