internal import CLibPQ

/// Owns one libpq `PGresult` and frees it with `PQclear`.
///
/// `@unchecked Sendable`: the result is never mutated after the query returns, and libpq's
/// read-only accessors on a `PGresult` are safe from any thread.
final class ResultHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let columnNames: [String]
    let columnIndex: [String: Int]

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
        let count = Int(PQnfields(pointer))
        var names: [String] = []
        var index: [String: Int] = [:]
        for column in 0..<count {
            // COPY results report a column count without names: PQfname is NULL there.
            let name = PQfname(pointer, Int32(column)).map { String(cString: $0) } ?? ""
            names.append(name)
            if index[name] == nil { index[name] = column }
        }
        self.columnNames = names
        self.columnIndex = index
    }

    deinit { PQclear(pointer) }
}

/// The rows a query returned, decoded lazily column by column.
///
/// ```swift
/// for row in try connection.query("select id, name from apps") {
///     let id = try row["id", as: String.self]
///     let name = try row[1, as: String?.self]
/// }
/// ```
package struct QueryResult: RandomAccessCollection, Sendable {
    let handle: ResultHandle

    /// The number of rows a command affected (`INSERT`, `UPDATE`, `DELETE`, `COPY`, ...), 0 if none.
    package let affectedRows: Int

    init(handle: ResultHandle) {
        self.handle = handle
        self.affectedRows = Int(String(cString: PQcmdTuples(handle.pointer))) ?? 0
        self.endIndex = Int(PQntuples(handle.pointer))
    }

    /// The result's column names, in order.
    package var columns: [String] { handle.columnNames }

    package var startIndex: Int { 0 }
    package let endIndex: Int

    package subscript(position: Int) -> Row { Row(handle: handle, index: position) }
}

/// One result row; values are decoded on access into the requested type.
package struct Row: Sendable {
    let handle: ResultHandle
    let index: Int

    /// The value of the named column decoded as `T` (use an optional type to accept NULL).
    ///
    /// - Throws: `PostgresError.decoding` for an unknown column, NULL into a non-optional type,
    ///   or text that is not a valid `T`.
    package subscript<T: PostgresDecodable>(column: String, as type: T.Type) -> T {
        get throws(PostgresError) {
            guard let position = handle.columnIndex[column] else {
                throw .decoding(column: column, message: "no such column in the result")
            }
            return try decode(position, as: type)
        }
    }

    /// The value of the column at `position` (0-based) decoded as `T`.
    package subscript<T: PostgresDecodable>(position: Int, as type: T.Type) -> T {
        get throws(PostgresError) {
            guard position >= 0, position < handle.columnNames.count else {
                throw .decoding(column: "#\(position)", message: "column index out of range")
            }
            return try decode(position, as: type)
        }
    }

    /// Runs `body` with the text of the column at `position` (0-based) as the result's own bytes
    /// (no copy, no UTF-8 validation; empty for NULL), valid only during the call: for decoders of
    /// long values, such as the report summaries' packed lines, where making a `String` of each
    /// (a length scan, a validation and a copy of tens of megabytes) cost a large share of the read.
    ///
    /// - Throws: `PostgresError.decoding` for a position out of range; rethrows `body`'s errors.
    package func withBytes<Result>(
        _ position: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result
    ) throws -> Result {
        guard position >= 0, position < handle.columnNames.count else {
            throw PostgresError.decoding(column: "#\(position)", message: "column index out of range")
        }
        let row = Int32(index)
        let column = Int32(position)
        let length = Int(PQgetlength(handle.pointer, row, column))
        guard let value = PQgetvalue(handle.pointer, row, column) else {
            return try body(UnsafeBufferPointer(start: nil, count: 0))
        }
        return try value.withMemoryRebound(to: UInt8.self, capacity: max(length, 1)) {
            try body(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// True when the named column is SQL NULL in this row.
    package func isNull(_ column: String) -> Bool {
        guard let position = handle.columnIndex[column] else { return true }
        return PQgetisnull(handle.pointer, Int32(index), Int32(position)) == 1
    }

    private func decode<T: PostgresDecodable>(_ position: Int, as type: T.Type) throws(PostgresError) -> T {
        let row = Int32(index)
        let column = Int32(position)
        if PQgetisnull(handle.pointer, row, column) == 1 {
            guard let null = T.decodeNull() else {
                throw .decoding(column: handle.columnNames[position], message: "NULL cannot be decoded as \(T.self)")
            }
            return null
        }
        let text = String(cString: PQgetvalue(handle.pointer, row, column))
        guard let value = T(postgresText: text) else {
            let oid = PQftype(handle.pointer, column)
            // The value itself stays out of the message: it may be personal data.
            throw .decoding(
                column: handle.columnNames[position],
                message: "value of server type oid \(oid) is not a valid \(T.self)")
        }
        return value
    }
}
