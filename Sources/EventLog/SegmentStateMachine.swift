/// The writer's decisions about segments, as a value type: which segment a frame goes to, when to
/// rotate (size, age, after a truncation), when to sync, when the disk cap refuses a frame.
/// The I/O code in `LogWriter` executes the returned plans and reports back; tests drive this
/// type directly with a made-up clock.
struct SegmentStateMachine: Equatable {
    /// Limits the machine enforces.
    struct Limits: Equatable {
        var maxSegmentBytes: Int64
        var maxSegmentAgeMicros: Int64
        var maxDiskBytes: Int64?
        /// nil: sync every frame; otherwise sync at most this long after the first unsynced write.
        var syncIntervalMicros: Int64?
    }

    /// What to do with one frame.
    enum Plan: Equatable {
        /// Refuse the frame: the disk cap would be exceeded.
        case diskFull
        /// Write the frame at `offset` of `segment`.
        case write(Write)
    }

    /// The steps of one frame write.
    struct Write: Equatable {
        /// Seal the open segment first (sync it if `syncBeforeSeal`) and create `segment`.
        var rotate: Bool
        /// The previous segment has unsynced writes to flush before it is closed.
        var syncBeforeSeal: Bool
        var segment: UInt64
        var offset: Int64
        /// `fdatasync` after the write before acknowledging.
        var syncAfterWrite: Bool
    }

    let limits: Limits
    /// The segment frames go to, nil when the next frame must create a new one.
    private(set) var openSegment: UInt64?
    /// The id the next created segment gets.
    private(set) var nextSegmentID: UInt64
    /// Bytes in the open segment.
    private(set) var segmentBytes: Int64 = 0
    /// Writer clock when the open segment's first frame was written.
    private(set) var segmentStartedAt: Int64?
    /// Sequence number of the next record.
    private(set) var nextSequence: UInt64
    /// Bytes of all of this node's segments, as last measured plus what was written since.
    private(set) var diskBytes: Int64
    /// Writer clock of the first write not yet synced (interval durability).
    private(set) var unsyncedSince: Int64?

    /// A machine after recovery: the next frame always starts a new segment (see SegmentFormat).
    init(limits: Limits, nextSegmentID: UInt64, nextSequence: UInt64, diskBytes: Int64) {
        self.limits = limits
        self.nextSegmentID = nextSegmentID
        self.nextSequence = nextSequence
        self.diskBytes = diskBytes
    }

    /// Decides where a frame of `frameBytes` goes at writer time `now`.
    mutating func plan(frameBytes: Int, now: Int64) -> Plan {
        if let cap = limits.maxDiskBytes, diskBytes + Int64(frameBytes) > cap { return .diskFull }
        var rotate = openSegment == nil
        if !rotate, segmentBytes > 0 {
            let tooBig = segmentBytes + Int64(frameBytes) > limits.maxSegmentBytes
            let tooOld = segmentStartedAt.map { now - $0 >= limits.maxSegmentAgeMicros } ?? false
            rotate = tooBig || tooOld
        }
        if rotate {
            let write = Write(
                rotate: true, syncBeforeSeal: openSegment != nil && unsyncedSince != nil, segment: nextSegmentID,
                offset: 0, syncAfterWrite: syncAfterWrite(now: now))
            openSegment = nextSegmentID
            nextSegmentID += 1
            segmentBytes = 0
            segmentStartedAt = nil
            if write.syncBeforeSeal { unsyncedSince = nil }
            return .write(write)
        }
        return .write(
            Write(
                rotate: false, syncBeforeSeal: false, segment: openSegment!, offset: segmentBytes,
                syncAfterWrite: syncAfterWrite(now: now)))
    }

    private func syncAfterWrite(now: Int64) -> Bool {
        guard let interval = limits.syncIntervalMicros else { return true }
        return unsyncedSince.map { now - $0 >= interval } ?? (interval <= 0)
    }

    /// The frame was written (and synced when `synced`).
    mutating func didWrite(frameBytes: Int, records: Int, now: Int64, synced: Bool) {
        segmentBytes += Int64(frameBytes)
        diskBytes += Int64(frameBytes)
        nextSequence += UInt64(records)
        if segmentStartedAt == nil { segmentStartedAt = now }
        if synced {
            unsyncedSince = nil
        } else if unsyncedSince == nil {
            unsyncedSince = now
        }
    }

    /// Frames reported by `didWrite` were cut away again (their group failed before it was
    /// acknowledged): their sequence numbers are reused, so the log stays gap-free.
    mutating func undoWrites(records: Int, bytes: Int64) {
        nextSequence -= UInt64(records)
        segmentBytes = max(0, segmentBytes - bytes)
        diskBytes = max(0, diskBytes - bytes)
    }

    /// A write or sync failed and the segment was cut back to `offset`. When the frame had been
    /// written completely a reader may have seen it, so frames continue in a new segment.
    mutating func didFail(frameWasComplete: Bool, truncated: Bool) {
        if frameWasComplete || !truncated { openSegment = nil }
    }

    /// Interval mode: true when unsynced writes are older than the interval.
    func isSyncDue(now: Int64) -> Bool {
        guard let interval = limits.syncIntervalMicros, let since = unsyncedSince else { return false }
        return now - since >= interval
    }

    /// Microseconds until the next sync is due, nil when nothing waits for a sync.
    func microsUntilSync(now: Int64) -> Int64? {
        guard let interval = limits.syncIntervalMicros, let since = unsyncedSince else { return nil }
        return max(0, since + interval - now)
    }

    /// The open segment was synced.
    mutating func didSync() { unsyncedSince = nil }

    /// The measured size of all segments (after a directory scan; retention may have freed space).
    mutating func measuredDisk(bytes: Int64) { diskBytes = bytes }
}
