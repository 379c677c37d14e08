import Foundation

/// Each node directory's identity: a random id written once, when a writer first opens the
/// directory, to `<node>/log.id`. A checkpoint (the aggregator's `load_checkpoints.log_id`) is a
/// position in one particular log; when the data directory is replaced while the database keeps
/// its checkpoint, the id tells the aggregator that the position belongs to another log, instead
/// of resuming mid-frame in the new one and skipping acknowledged events.
package enum LogIdentity {
    static let fileName = "log.id"

    /// The node directory's id, creating it durably (temp file, fsync, rename, fsync of the
    /// directory) when absent. Called by `LogWriter` with the directory locked.
    /// - Throws: `LogError.io` when it cannot be read or written.
    static func ensure(nodeDirectory: String) throws(LogError) -> String {
        if let existing = read(nodeDirectory: nodeDirectory) { return existing }
        let id = UUID().uuidString.lowercased()
        let path = nodeDirectory + "/" + fileName
        let temporary = path + ".tmp"
        let fd = try FileSystem.open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(fd) }
        var failure: LogError?
        Array((id + "\n").utf8).withUnsafeBytes { raw in
            do throws(LogError) { try FileSystem.writeAll(fd, raw, path: temporary) } catch { failure = error }
        }
        if let failure { throw failure }
        _ = try FileSystem.syscall("fsync", path: temporary) { fsync(fd) }
        _ = try FileSystem.syscall("rename", path: path) { rename(temporary, path) }
        try FileSystem.fsyncDirectory(nodeDirectory)
        return id
    }

    /// The node directory's id, or nil when no writer has created one (logs written before ids
    /// existed, or an empty directory).
    package static func read(nodeDirectory: String) -> String? {
        guard let data = FileManager.default.contents(atPath: nodeDirectory + "/" + fileName) else { return nil }
        let id = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }
}
