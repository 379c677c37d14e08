import EventLog
import EventModel
import Postgres

/// Decodes one cycle's records and streams them into the COPY, remembering what the rest of the
/// cycle needs: the UTC days present (partitions), per-node counts and newest `received_at`.
///
/// Duplicates inside one cycle (the same (app_id, event_id) twice, from a retried request or two
/// nodes) are dropped here, first occurrence wins; duplicates of rows loaded by earlier cycles are
/// dropped by the raw inserts' conflict handling.
struct StagingBatch {
    /// Rows written to the COPY.
    private(set) var rows = 0
    /// Records that did not decode.
    private(set) var undecodable = 0
    /// The first decoding error, for the log line.
    private(set) var firstError: String?
    /// UTC days (days since 1970-01-01) of the staged rows' event times.
    private(set) var days = Set<Int64>()
    /// Records read per node (decodable or not).
    private(set) var recordsByNode: [String: Int] = [:]
    /// Newest `received_at` per node.
    private(set) var newestReceivedAtByNode: [String: Timestamp] = [:]
    /// Newest `received_at` overall.
    private(set) var newestReceivedAt: Timestamp?

    private var seen = Set<Key>()
    private var row: [UInt8] = []

    /// The dedup key of the raw table the envelope goes to (see sql/001_core.sql): events by
    /// (app_id, event_id), clicks by (app_id, click_id), matches by (app_id, click_id).
    private struct Key: Hashable {
        var table: UInt8
        var app: String
        var id: String

        /// The key, or nil when the envelope lacks a member its table requires.
        init?(_ envelope: Envelope) {
            app = envelope.app
            switch envelope.kind {
            case .event, .retention:
                guard envelope.name != nil, envelope.device != nil else { return nil }
                table = 0
                id = envelope.id
            case .click:
                guard let click = envelope.clickID, envelope.path != nil, envelope.clickKind != nil else { return nil }
                table = 1
                id = click
            case .match:
                guard let click = envelope.clickID, envelope.method != nil else { return nil }
                table = 2
                id = click
            }
        }
    }

    /// Decodes `records` of `node` and appends their rows to `buffer`.
    mutating func add(_ batch: LogBatch, node: String, to buffer: inout CopyBuffer) {
        recordsByNode[node, default: 0] += batch.count
        row.reserveCapacity(4096)
        for index in 0..<batch.count {
            let record = batch[index]
            let envelope: Envelope
            do {
                envelope = try Envelope(decoding: record)
            } catch {
                undecodable += 1
                if firstError == nil { firstError = "\(error)" }
                continue
            }
            if newestReceivedAtByNode[node].map({ $0 < envelope.receivedAt }) ?? true {
                newestReceivedAtByNode[node] = envelope.receivedAt
            }
            if newestReceivedAt.map({ $0 < envelope.receivedAt }) ?? true {
                newestReceivedAt = envelope.receivedAt
            }
            guard let key = Key(envelope) else {
                undecodable += 1
                if firstError == nil { firstError = "envelope of kind \(envelope.kind.rawValue) lacks a required member" }
                continue
            }
            guard seen.insert(key).inserted else { continue }
            days.insert(Self.day(of: envelope.time))
            row.removeAll(keepingCapacity: true)
            StagingEncoder.append(envelope, to: &row)
            buffer.append(row)
            rows += 1
        }
    }

    /// The UTC day number of a timestamp (floor division, so times before 1970 work too).
    static func day(of time: Timestamp) -> Int64 {
        let perDay: Int64 = 86_400_000_000
        let micros = time.microseconds
        return micros >= 0 ? micros / perDay : -((-micros + perDay - 1) / perDay)
    }
}
