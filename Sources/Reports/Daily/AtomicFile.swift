import Foundation

/// Replaces a file atomically: the text goes to a temporary file in the same directory, is
/// flushed to disk, and is renamed over the target (rename(2) is atomic within a file system).
enum AtomicFile {
    static func write(_ text: String, to path: String) throws(ReportError) {
        let temporary = path + ".tmp-\(getpid())"
        let data = Data(text.utf8)
        guard FileManager.default.createFile(atPath: temporary, contents: nil) else {
            throw .io(path: temporary, message: "cannot create")
        }
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
            defer { try? handle.close() }
            try handle.write(contentsOf: data)
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw .io(path: temporary, message: "\(error)")
        }
        guard rename(temporary, path) == 0 else {
            let message = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw .io(path: path, message: message)
        }
    }
}
