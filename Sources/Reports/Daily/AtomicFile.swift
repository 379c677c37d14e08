import Foundation

/// Replaces a file atomically: the text goes to a temporary file in the same directory, is
/// flushed to disk, and is renamed over the target (rename(2) is atomic within a file system).
enum AtomicFile {
    /// Creates `path` and its missing parents (mode 0755), like `mkdir -p`, failing with errno's
    /// words: Foundation's `createDirectory` said `NSCocoaErrorDomain Code=512 "(null)"` when a
    /// file stood where a directory was wanted (`--out` under a file).
    static func makeDirectories(_ path: String) throws(ReportError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, 0o755) == 0 { continue }
            let code = errno
            var status = stat()
            guard code == EEXIST, stat(prefix, &status) == 0 else {
                throw .io(path: prefix, message: String(cString: strerror(code)))
            }
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw .io(path: prefix, message: "it is a file, not a directory")
            }
        }
    }

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
