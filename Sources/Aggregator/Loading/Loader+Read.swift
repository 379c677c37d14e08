import EventLog
import EventModel
import Foundation

extension Loader {
    /// Where each node's read starts: its checkpoint (nil: the start of its log, when it has none,
    /// or the checkpoint belongs to another log or lies past the log's end), or the replay's
    /// position; and the nodes read from their start for one of those two reasons (their checkpoint
    /// may move back: `Checkpoints.advance`).
    func startPositions(
        of nodes: [String], mode: Mode, checkpoints: [String: Checkpoints.Entry], logIDs: [String: String]
    ) -> (starts: [String: LogPosition?], restarted: Set<String>) {
        var starts: [String: LogPosition?] = [:]
        var restarted = Set<String>()
        for node in nodes {
            switch mode {
            case .checkpointed:
                if let checkpoint = checkpoints[node], Checkpoints.isAnotherLog(checkpoint, logIDs[node]) {
                    // The position belongs to another log: read this one from its start (rows
                    // already loaded are skipped by the dedup tables).
                    logger.error(
                        "checkpoint.other_log",
                        ["node": node, "checkpoint.log_id": checkpoint.logID ?? "", "log.id": logIDs[node] ?? ""])
                    starts[node] = .some(nil)
                    restarted.insert(node)
                } else if let checkpoint = checkpoints[node], let newest = source.newestSegment(node: node),
                    checkpoint.position.segment > newest
                {
                    // The same log, but it ends before the checkpoint's segment: the node's directory
                    // went back in time (restored from a backup, a snapshot rolled back). Its writer
                    // goes on in the segments after the restored ones, below the checkpoint, where a
                    // read from the checkpoint never looks: until 2026-12-04 those events were never
                    // loaded, and nothing said so. Read it from its start, like another log.
                    logger.error(
                        "checkpoint.past_end",
                        [
                            "node": node, "checkpoint.segment": "\(checkpoint.position.segment)",
                            "log.newest_segment": "\(newest)",
                        ])
                    starts[node] = .some(nil)
                    restarted.insert(node)
                } else {
                    starts[node] = checkpoints[node]?.position
                }
            case .replay(let positions): starts[node] = positions[node]
            }
        }
        return (starts, restarted)
    }

    /// Reads each node's log from `starts`, a fair share of the cycle's budget per node (a node that
    /// needs less leaves the rest to those after it), in pieces (`NodeReadPieces`), handing each
    /// piece to `body`. Records in `report` what was read, where each node's read ended, the
    /// backlog and which nodes were read to their end.
    func readShares(
        of nodes: [String], from starts: [String: LogPosition?], into report: inout Report,
        _ body: (LogBatch, String) throws -> Void
    ) throws {
        var remainingRecords = configuration.maxEventsPerCycle
        var remainingBytes = configuration.maxBytesPerCycle
        var caughtUp = Set<String>()
        var visited = Set<String>()
        for (index, node) in nodes.enumerated() where remainingRecords > 0 && remainingBytes > 0 {
            visited.insert(node)
            let share = nodes.count - index
            let startedAt = Timestamp.now()
            var records = 0
            var position = starts[node] ?? nil
            var pieces = NodeReadPieces(
                maxRecords: max(1, remainingRecords / share), maxBytes: max(4096, remainingBytes / share))
            while let bounds = pieces.next() {
                let chunk: LogBatch
                do {
                    chunk = try source.read(
                        node: node, after: position, maxRecords: bounds.records, maxBytes: bounds.bytes)
                } catch {
                    // This node stops here; the next cycle tries again from where it stopped.
                    report.unreadable[node] = error.description
                    break
                }
                pieces.record(chunk, asked: bounds)
                records += chunk.count
                remainingRecords -= chunk.count
                remainingBytes -= chunk.bytes.count
                report.records += chunk.count
                report.damaged += chunk.damaged
                position = chunk.next
                try body(chunk, node)
            }
            let readable = report.unreadable[node] == nil
            guard let end = position else {
                // Nothing in this node's log yet: caught up, with no checkpoint row to record it on.
                if readable, source.measuredBytesBehind(node: node, after: nil) == 0 { caughtUp.insert(node) }
                continue
            }
            // Backlog: this node's reads returned records and the log still extends past where
            // they stopped. (An empty read is never backlog, so a torn tail cannot cause a busy loop.)
            let measured = source.measuredBytesBehind(node: node, after: end)
            let behind = measured ?? 0
            report.bytesBehind[node] = behind
            if records > 0, behind > 0 { report.backlog = true }
            if readable, measured == 0 {
                report.caughtUpAt[node] = startedAt
                caughtUp.insert(node)
            }
            report.positions[node] = end
            if let from = starts[node] ?? nil, from.segment == end.segment {
                report.compressedBytesRead += end.offset - from.offset
            }
        }
        // A node the budget did not reach (a frame is read whole, so one node's share can take all
        // of it) is backlog when its log extends past its start: `aggregate --once` stopped with it
        // unread until 2026-11-30.
        for node in nodes where !visited.contains(node) {
            let behind = source.measuredBytesBehind(node: node, after: starts[node] ?? nil) ?? 1
            if behind > 0 { report.backlog = true }
        }
        // `loaded_through` (sql/063) is the earliest over the checkpoint rows, so a node this cycle
        // did not read to its end (its share of the budget ran out, its lag could not be measured)
        // and that has no row yet, or one that appeared while it read, would not hold it back:
        // caught_up_at is recorded only when every node was read to its end.
        let listedAfter = Set((try? source.nodes()) ?? nodes)
        if caughtUp != Set(nodes) || !listedAfter.isSubset(of: Set(nodes)) { report.caughtUpAt = [:] }
    }
}

/// The time each step of a cycle took (`Loader.Report.phases`): a lap ends where the last one did.
struct PhaseClock {
    private(set) var laps: [(String, Duration)] = []
    private var last = ContinuousClock.now

    /// Ends the step `name` now.
    mutating func lap(_ name: String) {
        let now = ContinuousClock.now
        laps.append((name, now - last))
        last = now
    }
}

/// One node's share of a cycle's read, taken in pieces of at most `pieceRecords` records, so the
/// first rows reach the streamed COPY after one piece is decompressed instead of the whole share
/// (the server waited for the whole read before: about 35 ms of each 50,000-record cycle).
/// The log reader returns whole frames, at least one (even one larger than asked): a piece is only
/// asked for while the rest of the share holds the largest frame seen, so a node reads at most one
/// frame less than its share, never more than one frame over it (as a single read could).
struct NodeReadPieces {
    /// Records per piece.
    static let pieceRecords = 4096
    private var records: Int
    private var bytes: Int
    private var largestFrameRecords = 0
    private var largestFrameBytes = 0
    private var done = false
    private var first = true

    init(maxRecords: Int, maxBytes: Int) {
        records = maxRecords
        bytes = maxBytes
    }

    /// The bounds of the next piece, or nil when the share is read (or the log's end reached).
    mutating func next() -> (records: Int, bytes: Int)? {
        guard !done, records > 0, bytes > 0 else { return nil }
        if !first, records < largestFrameRecords || bytes < largestFrameBytes { return nil }
        first = false
        return (min(records, Self.pieceRecords), bytes)
    }

    /// Accounts for a piece read with `asked` bounds.
    mutating func record(_ chunk: LogBatch, asked: (records: Int, bytes: Int)) {
        records -= chunk.count
        bytes -= chunk.bytes.count
        if chunk.frames > 0 {
            largestFrameRecords = max(largestFrameRecords, (chunk.count + chunk.frames - 1) / chunk.frames)
            largestFrameBytes = max(largestFrameBytes, (chunk.bytes.count + chunk.frames - 1) / chunk.frames)
        }
        // Nothing read (the end, a torn tail, only damaged frames), or a piece bounded by the share
        // itself that came back short (the next frame does not fit, or the end): the share is read.
        if chunk.isEmpty || (asked.records == records + chunk.count && chunk.count < asked.records) {
            done = true
        }
    }
}
