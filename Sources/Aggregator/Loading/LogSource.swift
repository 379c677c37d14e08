import EventLog
import Foundation

/// The ingest nodes' logs as the loader sees them: nodes are the sub-directories of
/// `<data>/segments/`, each read from a position with a bound on records and bytes.
/// This is the only file that talks to `EventLog`'s reader.
struct LogSource {
    /// `<data>/segments`.
    let directory: String

    /// Names of the nodes with a segment directory, sorted.
    func nodes() throws(AggregatorError) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else { return [] }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory).filter { name in
                var isDir: ObjCBool = false
                return !name.hasPrefix(".")
                    && FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDir)
                    && isDir.boolValue
            }.sorted()
        } catch {
            throw .log(node: "*", reason: "cannot list \(directory): \(error)")
        }
    }

    /// One node's records after `position` (nil: from the beginning).
    struct Chunk {
        /// The records, each one envelope line without its newline.
        var records: [[UInt8]]
        /// Where the next read continues.
        var next: LogPosition
        /// Bytes of the records.
        var bytes: Int
    }

    /// Reads up to `maxRecords` records / `maxBytes` bytes of `node` after `position`.
    func read(node: String, after position: LogPosition?, maxRecords: Int, maxBytes: Int) throws(AggregatorError)
        -> Chunk
    {
        do {
            let reader = try LogReader(directory: directory, node: node)
            let batch = try reader.read(after: position, maxRecords: maxRecords, maxBytes: maxBytes)
            let records = batch.records
            return Chunk(records: records, next: batch.next, bytes: records.reduce(0) { $0 + $1.count })
        } catch {
            throw .log(node: node, reason: "\(error)")
        }
    }
}
