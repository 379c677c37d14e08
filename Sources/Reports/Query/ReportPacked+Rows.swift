import Postgres

// Reading a query's packed lines row by row with a `ReportPacked` cursor each, in the result's
// order or in (path, day) order.

extension ReportPacked {
    /// Decodes each line of `result`'s first column with `body`.
    static func forEachLine(
        _ result: QueryResult, what: String, _ body: (inout ReportPacked) throws -> Void
    ) throws {
        for row in result {
            try row.withBytes(0) { bytes in
                var cursor = ReportPacked(bytes, what: what)
                try body(&cursor)
            }
        }
    }

    /// Decodes the lines of `result`'s first column that start with a counted path and a day (the
    /// per-link, attribution and retention lines) in (path, day) order, a nil path (the organic
    /// "link", counted as `-1,`) last: `body` gets the path, the day and the cursor after them, and
    /// must read the rest of the line. Ordering the keys first lets the caller build its rows in their
    /// final order, instead of decoding them and then copying every row (and its dictionaries) into
    /// place.
    static func forEachLineByPathAndDay(
        _ result: QueryResult, what: String, _ body: (inout ReportPacked, String?, ReportDay) throws -> Void
    ) throws {
        try forEachLineByPathAndDay(result, what: what, second: false) { line, _, path, day in
            try body(&line, path, day)
        }
    }

    /// `forEachLineByPathAndDay` for rows with a second packed column (the per-link lines and their
    /// platform splits, sql/066): `body` gets a cursor on each, and must read both to their ends.
    static func forEachLinePairByPathAndDay(
        _ result: QueryResult, what: String,
        _ body: (inout ReportPacked, inout ReportPacked, String, ReportDay) throws -> Void
    ) throws {
        try forEachLineByPathAndDay(result, what: what, second: true) { line, second, path, day in
            guard let path else { throw line.malformed() }
            try body(&line, &second, path, day)
        }
    }

    /// The common part: with `second`, the row's second column is decoded beside the first.
    private static func forEachLineByPathAndDay(
        _ result: QueryResult, what: String, second: Bool,
        _ body: (inout ReportPacked, inout ReportPacked, String?, ReportDay) throws -> Void
    ) throws {
        // The lines are read where libpq holds them (`Row.withBytes`), twice: for the keys, then
        // in key order for the rest.
        var keys: [(path: String?, day: ReportDay)] = []
        var starts: [Int] = []
        keys.reserveCapacity(result.count)
        starts.reserveCapacity(result.count)
        for row in result {
            try row.withBytes(0) { bytes in
                var cursor = ReportPacked(bytes, what: what)
                keys.append((try cursor.optionalCounted(), try cursor.day()))
                starts.append(cursor.index)
            }
        }
        let none = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        for position in pathDayOrder(keys) {
            let row = result[position]
            try row.withBytes(0) { bytes in
                var cursor = ReportPacked(bytes, at: starts[position], what: what)
                if second {
                    try row.withBytes(1) { otherBytes in
                        var other = ReportPacked(otherBytes, what: what)
                        try body(&cursor, &other, keys[position].path, keys[position].day)
                        try other.end()
                    }
                } else {
                    var other = ReportPacked(none, what: what)
                    try body(&cursor, &other, keys[position].path, keys[position].day)
                }
                try cursor.end()
            }
        }
    }

    /// `forEachLineByPathAndDay` for lines whose path is never nil (per-link and attribution).
    static func forEachLineByPathAndDay(
        _ result: QueryResult, what: String, _ body: (inout ReportPacked, String, ReportDay) throws -> Void
    ) throws {
        try forEachLineByPathAndDay(result, what: what) { (line: inout ReportPacked, path: String?, day) in
            guard let path else { throw line.malformed() }
            try body(&line, path, day)
        }
    }

    /// The positions of `keys` sorted by path (nil last), then day: the distinct paths (~1,000) are
    /// sorted once and each key compared as (path rank, day), instead of comparing paths ~15 times
    /// per row.
    /// Paths are told apart by their bytes (`ExactText`): two spellings of one path `String` takes
    /// for equal are two links in the database, and each link's rows must stay together.
    static func pathDayOrder(_ keys: [(path: String?, day: ReportDay)]) -> [Int] {
        var ranks: [ExactText: Int] = [:]
        for key in keys { if let path = key.path { ranks[ExactText(path)] = 0 } }
        for (rank, path) in ranks.keys.sorted().enumerated() { ranks[path] = rank }
        let last = ranks.count
        var ranked = keys.enumerated().map { position, key in
            (key.path.map { ranks[ExactText($0), default: last] } ?? last, key.day.daysSinceEpoch, position)
        }
        ranked.sort { $0 < $1 }
        return ranked.map { $0.2 }
    }
}
