import EventLog
import EventModel
import Postgres

/// Decodes one cycle's records into COPY rows for the raw tables and the slim staging table, and
/// remembers what the rest of the cycle needs: per row the facts that devices, links and the rollup
/// queue are derived from, the UTC days that get a partition (those inside the `PartitionWindow` of
/// a row's `received_at`), per-node counts and newest `received_at`.
///
/// Event rows can be streamed to a COPY while they are decoded (`add(_:node:streamEvent:)`), so
/// PostgreSQL ingests them while this process decodes the rest; a batch made with
/// `keepsEventRows: false` then does not keep them (memory: the cycle keeps the log chunks instead,
/// and decodes them again in the rare cycle that has to send the rows a second time).
///
/// Duplicates inside one cycle (the same (app_id, event_id) twice, from a retried request or two
/// nodes) are dropped here, first occurrence wins; duplicates of rows loaded by earlier cycles are
/// found by the dedup tables' keys (`Loader`).
struct StagingBatch {
    /// Rows decoded (all tables).
    private(set) var rows = 0
    /// Records that did not decode.
    private(set) var undecodable = 0
    /// The first decoding error, for the log line.
    private(set) var firstError: String?
    /// UTC days (days since 1970-01-01) of the rows' times, of the rows whose day is inside the
    /// partition window of their `received_at` (the days whose partitions the cycle ensures).
    private(set) var days = Set<Int64>()
    /// Records read per node (decodable or not).
    private(set) var recordsByNode: [String: Int] = [:]
    /// Newest `received_at` per node.
    private(set) var newestReceivedAtByNode: [String: Timestamp] = [:]
    /// Newest `received_at` overall.
    private(set) var newestReceivedAt: Timestamp?

    /// `events` rows (kinds event and retention), in decode order (empty unless `keepsEventRows`).
    private(set) var events = Rows()
    /// Event rows decoded (kept or not).
    private(set) var eventCount = 0
    /// `clicks` rows.
    private(set) var clicks = Rows()
    /// `matches` rows.
    private(set) var matches = Rows()
    /// `pg_temp.load_staging` rows: every row of the cycle, all kinds; in a batch that derives all
    /// (the optimistic load) only the click rows (sql/060 queues them; the keys go straight into
    /// the dedup tables from `keyRows`).
    private(set) var staged: [UInt8] = []
    /// The optimistic load's dedup-key rows per raw table (`LoadSQL.Table` order), COPY binary
    /// format without header: empty unless the batch derives all.
    private var keyRows: [[UInt8]] = [[], [], []]

    /// What the derived tables need of each event row (same index as `events`). Not kept when the
    /// batch accumulates `derivedAll` instead (memory: the optimistic load needs only that).
    private(set) var eventFacts: [EventFacts] = []
    /// What links and the rollup queue need of each click row (same index as `clicks`).
    private(set) var clickFacts: [RowFacts] = []
    /// What the rollup queue needs of each match row (same index as `matches`).
    private(set) var matchFacts: [RowFacts] = []

    private var seen = Set<Key>()
    private var row: [UInt8] = []
    private let keepsEventRows: Bool
    /// Which rows' days get a partition.
    private let window: PartitionWindow
    /// Event rows in COPY binary format (`LoadSQL.copyEvents`) instead of text (the safe-cast table).
    let binaryEvents: Bool
    /// The derived rows of every row of the batch, accumulated while decoding (optimistic load).
    private(set) var derivedAll: DerivedRows.Builder?

    /// - Parameters:
    ///   - keepsEventRows: keep the encoded event rows (false when they are streamed).
    ///   - derivesAll: accumulate the derived rows of every row while decoding (`derivedAll`), for a
    ///     load that expects every row to go in: that client work then overlaps the server's COPY.
    ///   - binaryEvents: encode event rows for `COPY events ... (FORMAT binary)`; false for the
    ///     safe-cast fallback's text table.
    ///   - window: which rows' days go into `days`.
    init(window: PartitionWindow, keepsEventRows: Bool = true, derivesAll: Bool = false, binaryEvents: Bool = true) {
        self.window = window
        self.keepsEventRows = keepsEventRows
        self.binaryEvents = binaryEvents
        derivedAll = derivesAll ? DerivedRows.Builder() : nil
    }

    /// The COPY rows of one table, one after another; `ends[i]` is where row `i` ends.
    struct Rows {
        /// The rows' bytes.
        private(set) var bytes: [UInt8] = []
        /// End offset of each row.
        private(set) var ends: [Int] = []
        /// Rows held.
        var count: Int { ends.count }

        mutating func append(_ row: [UInt8]) {
            bytes.append(contentsOf: row)
            ends.append(bytes.count)
        }

        /// Row `index`.
        subscript(index: Int) -> ArraySlice<UInt8> { bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]] }
    }

    /// An inserted row's dedup key and time (clicks: also the link path).
    struct RowFacts {
        var app: String
        /// event_id (events) or click_id (clicks, matches): the dedup table's key with `app`.
        var id: String
        var time: Timestamp
        var path: String?
        /// The row's day is inside the partition window of its `received_at` (false: it is left in the
        /// default partition unless its day has a partition anyway).
        var isInPartitionWindow = true
    }

    /// What the devices upsert needs of an event row.
    struct EventFacts {
        var key: RowFacts
        var device: String
        var platform: String?
        var sdk: String?
        var installClickID: String?
    }

    /// The dedup key of the raw table the envelope goes to (see sql/001_core.sql): events by
    /// (app_id, event_id), clicks by (app_id, click_id), matches by (app_id, click_id).
    /// Compared by UTF-8 bytes, as the dedup tables' primary keys compare (`UTF8Key`).
    private struct Key: Hashable {
        var table: UInt8
        var row: RowKey

        /// The key, or nil when the envelope lacks a member its table requires.
        init?(_ envelope: Envelope) {
            let id: String
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
            row = RowKey(app: envelope.app, id: id)
        }
    }

    /// A row's dedup key (app, id) within its table, compared by UTF-8 bytes (`UTF8Key`).
    struct RowKey: Hashable {
        var app: UTF8Key
        var id: UTF8Key

        init(app: String, id: String) {
            self.app = UTF8Key(app)
            self.id = UTF8Key(id)
        }
    }

    /// Decodes `batch` of `node`. Event rows are also passed to `streamEvent` as they are encoded.
    mutating func add(_ batch: LogBatch, node: String, streamEvent: ([UInt8]) -> Void = { _ in }) {
        recordsByNode[node, default: 0] += batch.count
        row.reserveCapacity(4096)
        // About 120 bytes per staged row: reserved once, instead of doubling past it.
        if derivedAll == nil { staged.reserveCapacity(staged.count + batch.count * 128) }
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
            if let reason = envelope.indexBoundViolation {
                // Written before ingest bounded the key (a 6 KB link path failed every cycle): kept in
                // the log, skipped and counted here, so it cannot block the records after it.
                undecodable += 1
                if firstError == nil { firstError = "envelope \(envelope.id.prefix(64)): \(reason)" }
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
                if firstError == nil {
                    firstError = "envelope of kind \(envelope.kind.rawValue) lacks a required member"
                }
                continue
            }
            guard seen.insert(key).inserted else { continue }
            let day = Self.day(of: envelope.time)
            let isInWindow = window.contains(day: day, receivedDay: Self.day(of: envelope.receivedAt))
            if isInWindow { days.insert(day) }
            row.removeAll(keepingCapacity: true)
            let facts = RowFacts(
                app: key.row.app.value, id: key.row.id.value, time: envelope.time, path: envelope.path,
                isInPartitionWindow: isInWindow)
            switch envelope.kind {
            case .event, .retention:
                if binaryEvents {
                    StagingEncoder.appendEventBinary(envelope, to: &row)
                } else {
                    StagingEncoder.appendEvent(envelope, to: &row)
                }
                if keepsEventRows { events.append(row) }
                eventCount += 1
                streamEvent(row)
                let event = EventFacts(
                    key: facts, device: envelope.device ?? "", platform: envelope.platform?.rawValue,
                    sdk: envelope.sdk, installClickID: envelope.attribution?.installClickID)
                if derivedAll != nil { derivedAll?.addEvent(event) } else { eventFacts.append(event) }
            case .click:
                StagingEncoder.appendClick(envelope, to: &row)
                clicks.append(row)
                if derivedAll != nil { derivedAll?.addClick(facts) } else { clickFacts.append(facts) }
            case .match:
                StagingEncoder.appendMatch(envelope, to: &row)
                matches.append(row)
                if derivedAll != nil { derivedAll?.addMatch(facts) } else { matchFacts.append(facts) }
            }
            if derivedAll == nil || envelope.kind == .click {
                StagingEncoder.appendStaged(envelope, to: &staged)
            }
            if derivedAll != nil {
                StagingEncoder.appendKeyBinary(
                    app: key.row.app.value, id: key.row.id.value, time: envelope.time, to: &keyRows[Int(key.table)])
            }
            rows += 1
        }
    }

    /// The dedup-key rows of one raw table, COPY binary format without header (batches that derive all).
    func keys(_ table: LoadSQL.Table) -> [UInt8] {
        switch table {
        case .events: keyRows[0]
        case .clicks: keyRows[1]
        case .matches: keyRows[2]
        }
    }

    /// Rows of one raw table.
    func count(_ table: LoadSQL.Table) -> Int {
        switch table {
        case .events: eventCount
        case .clicks: clicks.count
        case .matches: matches.count
        }
    }

    /// The UTC day number of a timestamp (floor division, so times before 1970 work too).
    static func day(of time: Timestamp) -> Int64 {
        let perDay: Int64 = 86_400_000_000
        let micros = time.microseconds
        return micros >= 0 ? micros / perDay : -((-micros + perDay - 1) / perDay)
    }
}
