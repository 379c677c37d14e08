import EventLog
import EventModel
import Postgres

/// The per-node load positions stored in `load_checkpoints`, read and advanced inside the cycle's
/// transaction, so a position is durable exactly when the rows read up to it are.
enum Checkpoints {
    /// One node's stored checkpoint.
    struct Entry: Equatable {
        var position: LogPosition
        var recordsLoaded: Int64
        /// The log the position is in (`LogIdentity`); nil for checkpoints older than log ids.
        var logID: String?
    }

    /// Every node's checkpoint.
    static func read(_ connection: Connection) throws -> [String: Entry] {
        var entries: [String: Entry] = [:]
        for row in try connection.query(LoadSQL.readCheckpoints) {
            let node = try row["node", as: String.self]
            let segment = try row["segment", as: Int64.self]
            let offset = try row["frame_offset", as: Int64.self]
            let loaded = try row["loaded_events", as: Int64.self]
            entries[node] = Entry(
                position: LogPosition(segment: UInt64(segment), offset: offset), recordsLoaded: loaded,
                logID: try row["log_id", as: String?.self])
        }
        return entries
    }

    /// Stores the new positions of the nodes that moved, and for every node read to its end when
    /// that read began (`caught_up_at`). Never moves a checkpoint, or its `caught_up_at`, backwards,
    /// except the checkpoint of a node read from its start because the checkpoint was in another
    /// log or past this one's end (`restarted`).
    static func advance(
        _ connection: Connection, from old: [String: Entry], to positions: [String: LogPosition],
        records: [String: Int], newestReceivedAt: [String: Timestamp], caughtUpAt: [String: Timestamp],
        logIDs: [String: String], restarted: Set<String>
    ) throws {
        for node in positions.keys.sorted() {
            guard let position = positions[node] else { continue }
            let logID = logIDs[node]
            let isRestarted = restarted.contains(node)
            // `restarted` holds the nodes whose checkpoint is in another log too (`startPositions`).
            if let previous = old[node], previous.position >= position, !isRestarted {
                if let caughtUp = caughtUpAt[node] {
                    try connection.execute(LoadSQL.caughtUp(node: node, at: caughtUp.iso8601))
                }
                continue
            }
            let segment = Int64(position.segment)
            let offset = position.offset
            let count = Int64(records[node] ?? 0)
            let newest = newestReceivedAt[node]?.iso8601
            try connection.execute(
                LoadSQL.advanceCheckpoint(
                    node: node, segment: segment, offset: offset, records: count, newestReceivedAt: newest,
                    caughtUpAt: caughtUpAt[node]?.iso8601, logID: logID, moveBack: isRestarted))
        }
    }

    /// Whether `entry` is a position in a different log than the node directory's `logID` (the
    /// data directory was replaced while the database kept the checkpoint).
    static func isAnotherLog(_ entry: Entry, _ logID: String?) -> Bool {
        guard let stored = entry.logID, let logID else { return false }
        return stored != logID
    }
}
