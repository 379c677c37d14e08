import EventLog
import EventModel

/// Which rows of a batch a cycle inserted: all of them (the optimistic load met no duplicate), or
/// those whose key the dedup table accepted.
struct InsertedRows {
    /// Fresh keys (app, id) per table, compared by UTF-8 bytes; nil: every row of that table.
    var events: Set<StagingBatch.RowKey>?
    var clicks: Set<StagingBatch.RowKey>?
    var matches: Set<StagingBatch.RowKey>?

    /// Every row.
    static let all = InsertedRows()

    /// True when every row of `batch` went in (no duplicate of an earlier cycle).
    func isEverything(of batch: StagingBatch) -> Bool {
        (events?.count ?? batch.eventCount) == batch.eventCount
            && (clicks?.count ?? batch.clicks.count) == batch.clicks.count
            && (matches?.count ?? batch.matches.count) == batch.matches.count
    }

    static func contains(_ fresh: Set<StagingBatch.RowKey>?, _ facts: StagingBatch.RowFacts) -> Bool {
        fresh?.contains(StagingBatch.RowKey(app: facts.app, id: facts.id)) ?? true
    }
}

/// The derived rows of what a cycle inserted, computed from the batch (small sets: one row per
/// device, link and (app, UTC day) touched), for the devices and links upserts and the rollup queue.
struct DerivedRows {
    /// `pg_temp.load_devices` COPY rows (`LoadSQL.copyDevices`; these three in binary format, without header).
    var devices: [UInt8] = []
    /// `pg_temp.load_links` COPY rows.
    var links: [UInt8] = []
    /// `pg_temp.load_touched` COPY rows: per (app, UTC day) the earliest and latest row time and the
    /// latest event time (sql/060's contract).
    var touched: [UInt8] = []
    /// Rows inserted per raw table.
    var counts = Loader.RowCounts()
    /// Rows inserted whose day is outside the partition window of their `received_at`.
    var outsidePartitionWindow = 0

    /// The rows of `batch` that `inserted` holds.
    init(_ batch: StagingBatch, inserted: InsertedRows) {
        var builder = Builder()
        for facts in batch.eventFacts where InsertedRows.contains(inserted.events, facts.key) {
            builder.addEvent(facts)
        }
        for facts in batch.clickFacts where InsertedRows.contains(inserted.clicks, facts) { builder.addClick(facts) }
        for facts in batch.matchFacts where InsertedRows.contains(inserted.matches, facts) { builder.addMatch(facts) }
        self = builder.rows()
    }

    init() {}

    /// Accumulates rows one by one (also while a batch is decoded, when every row is expected to go in).
    struct Builder {
        /// (app, device id) or (app, link path), compared by UTF-8 bytes as `devices` and `links`
        /// compare their keys (`UTF8Key`).
        private struct DeviceKey: Hashable {
            var app: UTF8Key
            var device: UTF8Key

            init(app: String, device: String) {
                self.app = UTF8Key(app)
                self.device = UTF8Key(device)
            }
        }

        private struct DayKey: Hashable {
            var app: UTF8Key
            var day: Int64
        }

        /// Per device: the earliest event (first seen, its platform and SDK) and the earliest event
        /// carrying an install click; ties on time go to the smaller event id (as the SQL it replaced).
        private struct Device {
            var first: StagingBatch.EventFacts
            var clicked: StagingBatch.EventFacts?
        }

        private var devices: [DeviceKey: Device] = [:]
        private var deviceOrder: [DeviceKey] = []
        private var links: [DeviceKey: Timestamp] = [:]  // (app, path)
        private var linkOrder: [DeviceKey] = []
        /// Per touched (app, UTC day): the earliest and latest row time, the latest event time.
        private struct Span {
            var first: Timestamp
            var last: Timestamp
            var lastEvent: Timestamp?
        }

        private var touched: [DayKey: Span] = [:]
        private var touchedOrder: [DayKey] = []
        private var counts = Loader.RowCounts()
        private var outsidePartitionWindow = 0

        private static func earlier(_ a: StagingBatch.EventFacts, than b: StagingBatch.EventFacts) -> Bool {
            a.key.time < b.key.time
                || (a.key.time == b.key.time && a.key.id.utf8.lexicographicallyPrecedes(b.key.id.utf8))
        }

        /// Records an inserted row's (app, UTC day) and whether its day is outside the partition window
        /// (once per row, whatever its table).
        private mutating func touch(_ facts: StagingBatch.RowFacts, event: Bool = false) {
            if !facts.isInPartitionWindow { outsidePartitionWindow += 1 }
            let time = facts.time
            let key = DayKey(app: UTF8Key(facts.app), day: StagingBatch.day(of: time))
            guard var span = touched[key] else {
                touched[key] = Span(first: time, last: time, lastEvent: event ? time : nil)
                touchedOrder.append(key)
                return
            }
            let lastEvent = event && (span.lastEvent.map { $0 < time } ?? true)
            guard time < span.first || span.last < time || lastEvent else { return }
            if time < span.first { span.first = time }
            if span.last < time { span.last = time }
            if lastEvent { span.lastEvent = time }
            touched[key] = span
        }

        mutating func addEvent(_ facts: StagingBatch.EventFacts) {
            counts.events += 1
            touch(facts.key, event: true)
            let key = DeviceKey(app: facts.key.app, device: facts.device)
            guard var device = devices[key] else {
                devices[key] = Device(first: facts, clicked: facts.installClickID == nil ? nil : facts)
                deviceOrder.append(key)
                return
            }
            var changed = false
            if Self.earlier(facts, than: device.first) {
                device.first = facts
                changed = true
            }
            if facts.installClickID != nil, device.clicked.map({ Self.earlier(facts, than: $0) }) ?? true {
                device.clicked = facts
                changed = true
            }
            if changed { devices[key] = device }
        }

        mutating func addClick(_ facts: StagingBatch.RowFacts) {
            counts.clicks += 1
            touch(facts)
            let key = DeviceKey(app: facts.app, device: facts.path ?? "")
            if let first = links[key] {
                if facts.time < first { links[key] = facts.time }
            } else {
                links[key] = facts.time
                linkOrder.append(key)
            }
        }

        mutating func addMatch(_ facts: StagingBatch.RowFacts) {
            counts.matches += 1
            touch(facts)
        }

        /// The COPY rows.
        func rows() -> DerivedRows {
            var rows = DerivedRows()
            rows.counts = counts
            rows.outsidePartitionWindow = outsidePartitionWindow
            for key in deviceOrder {
                let device = devices[key]!
                StagingEncoder.appendRowBinary(
                    [
                        .text(key.app.value), .text(key.device.value), .timestamp(device.first.key.time),
                        .text(device.first.platform), .text(device.first.sdk), .text(device.clicked?.installClickID),
                        .timestamp(device.clicked?.key.time),
                    ], to: &rows.devices)
            }
            for key in linkOrder {
                StagingEncoder.appendRowBinary(
                    [.text(key.app.value), .text(key.device.value), .timestamp(links[key])], to: &rows.links)
            }
            for key in touchedOrder {
                let span = touched[key]!
                StagingEncoder.appendRowBinary(
                    [
                        .text(key.app.value), .date(key.day), .timestamp(span.first), .timestamp(span.last),
                        .timestamp(span.lastEvent),
                    ], to: &rows.touched)
            }
            return rows
        }
    }
}
