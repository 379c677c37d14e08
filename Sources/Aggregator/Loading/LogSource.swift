import EventLog
import Foundation
import Glibc

/// The ingest nodes' logs as the loader sees them: nodes are the sub-directories of
/// `<data>/segments/`, each read from a position with a bound on records and bytes.
/// This is the only file that talks to `EventLog`'s reader.
package struct LogSource {
    /// `<data>/segments`.
    let directory: String

    /// Names of the nodes with a segment directory, sorted; none when `directory` does not exist
    /// (or is not a directory).
    ///
    /// - Throws: `AggregatorError.log` when `directory` cannot be reached or listed (a data
    ///   directory made unreadable): until 2026-12-05 that read as "no log", and the aggregator
    ///   went quiet, no `load.failing` and `--once` exiting 0 with "no event log", while ingest
    ///   answered 503.
    func nodes() throws(AggregatorError) -> [String] {
        switch Self.presence(of: directory) {
        case .absent: return []
        case .unreachable(let reason):
            throw .log(node: "*", reason: "cannot read \(directory): \(reason)")
        case .present: break
        }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory).filter { name in
                var isDir: ObjCBool = false
                return !name.hasPrefix(".")
                    && FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDir)
                    && isDir.boolValue
            }.sorted()
        } catch {
            // Foundation's error reads `NSCocoaErrorDomain Code=257 "(null)"`; say what errno says.
            throw .log(node: "*", reason: "cannot list \(directory): \(systemReason(listing: directory) ?? "\(error)")")
        }
    }

    /// Whether a segments directory is there: a directory; absent (no such path, a path through a
    /// file, or a file in its place: an empty log, or a mistyped `--data-dir`); or there but not
    /// reachable (EACCES, ELOOP: the load fails, naming errno's words).
    package enum Presence: Equatable {
        case present
        case absent
        case unreachable(String)
    }

    /// The `Presence` of `directory` (one `stat`).
    package static func presence(of directory: String) -> Presence {
        var status = stat()
        guard stat(directory, &status) == 0 else {
            let code = errno
            return code == ENOENT || code == ENOTDIR ? .absent : .unreachable(String(cString: strerror(code)))
        }
        return status.st_mode & S_IFMT == S_IFDIR ? .present : .absent
    }

    /// errno's words for why `directory` cannot be listed (`Permission denied`), nil when it can.
    private func systemReason(listing directory: String) -> String? {
        guard let handle = opendir(directory) else { return String(cString: strerror(errno)) }
        closedir(handle)
        return nil
    }

    /// Each node directory's log id (`LogIdentity`), where one was written.
    func logIDs(_ nodes: [String]) -> [String: String] {
        var ids: [String: String] = [:]
        for node in nodes { ids[node] = LogIdentity.read(nodeDirectory: directory + "/" + node) }
        return ids
    }

    /// The id of `node`'s newest segment, 0 when it has none, nil when its directory cannot be read
    /// (then nothing is concluded from it). One directory read per call.
    func newestSegment(node: String) -> UInt64? {
        do {
            return try LogReader(directory: directory, node: node).newestSegmentID() ?? 0
        } catch {
            return nil
        }
    }

    /// Reads up to `maxRecords` records / about `maxBytes` bytes of `node` after `position`
    /// (nil: from the beginning). Damaged frames are skipped by the reader and returned in the batch.
    func read(node: String, after position: LogPosition?, maxRecords: Int, maxBytes: Int) throws(AggregatorError)
        -> LogBatch
    {
        do {
            return try LogReader(directory: directory, node: node)
                .read(after: position, maxRecords: maxRecords, maxBytes: maxBytes)
        } catch {
            throw .log(node: node, reason: "\(error)")
        }
    }

    /// Compressed bytes of `node`'s log after `position` (the lag metric); 0 when it cannot be
    /// measured (see `measuredBytesBehind`).
    func bytesBehind(node: String, after position: LogPosition?) -> Int64 {
        measuredBytesBehind(node: node, after: position) ?? 0
    }

    /// The same, nil when the log could not be read: where a 0 is taken as proof that the node was
    /// read to its end (`caught_up_at`), an I/O error must not pass for one.
    func measuredBytesBehind(node: String, after position: LogPosition?) -> Int64? {
        try? LogReader(directory: directory, node: node).bytesBehind(position)
    }
}
