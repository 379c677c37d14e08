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

    /// Writes `text` to `path` through a temporary file beside it.
    ///
    /// - Throws: `.io` naming `path` and the reason in errno's words ("No space left on device").
    ///   Foundation's error read `cannot write <path>.tmp-<pid>: Error Domain=NSCocoaErrorDomain
    ///   Code=640 "There isn’t enough space." UserInfo={...}` on a full disk until 2026-12-02.
    ///
    /// The temporary file is this call's own (created, never opened if it exists, and named with a
    /// random part): two jobs writing the same directory at once each rename a whole file of their
    /// own. It was `<path>.tmp-<pid>`, opened with truncation, and the compose file's one-off
    /// containers all run the binary as PID 1: one job truncated and wrote into the other's file, and
    /// one of them renamed a file holding both into place (or failed on the vanished file).
    static func write(_ text: String, to path: String) throws(ReportError) {
        var random = SystemRandomNumberGenerator()
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<8 where fd < 0 {
            temporary = path + temporaryMarker + "\(getpid())-" + String(random.next() as UInt64, radix: 36)
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            if fd < 0, errno != EEXIST { break }
        }
        guard fd >= 0 else { throw .io(path: path, message: String(cString: strerror(errno))) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: Data(text.utf8))
            try handle.synchronize()
            try handle.close()
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw .io(path: path, message: reason(error))
        }
        guard rename(temporary, path) == 0 else {
            let message = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw .io(path: path, message: message)
        }
        // The rename is durable once the directory is: without this a power loss could bring back
        // the old file (or none) after the job said it wrote the new one (until 2026-12-05).
        let directory = (path as NSString).deletingLastPathComponent
        let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// How long one of `write`'s temporary files may stay unmodified before `removeAbandoned` takes
    /// its writer for gone (killed between creating and renaming it: the file is never renamed then).
    ///
    /// Age, not the process id in the name: the compose file's one-off containers all run the binary
    /// as PID 1 and share the output directory (a bind mount), so an id says nothing across them. PID
    /// 1 is alive in every container, so a killed job's files would never go; and an id that is not
    /// alive here may be a job writing at this moment in another container. A live writer creates its
    /// file, writes it at once, flushes and renames it, within seconds; an hour leaves room for a disk
    /// that stalls and for the clocks of hosts sharing a network file system. Should a live writer's
    /// file be removed all the same, its rename fails (exit 74, the next run writes the file): the
    /// report it replaces is untouched, never half written.
    static let abandonedAfter: Duration = .seconds(3600)

    /// Removes the temporary files of `write` in `directory` that have not been modified for
    /// `abandonedAfter`. Best effort: a directory that cannot be read or a file that cannot be
    /// removed is left for the next run.
    ///
    /// - Returns: the paths removed.
    static func removeAbandoned(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed: [String] = []
        for name in names where isTemporary(name) {
            let path = directory + "/" + name
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            let modified = Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9
            let age = Date().timeIntervalSince1970 - modified
            guard .seconds(age) > abandonedAfter, unlink(path) == 0 else { continue }
            removed.append(path)
        }
        return removed.sorted()
    }

    /// What `write` puts between the file's name and its temporary part, and `isTemporary` looks for.
    private static let temporaryMarker = ".tmp-"

    /// Whether `name` is one of `write`'s temporary files: `<file>.tmp-<pid>-<random, base 36>`, or
    /// `<file>.tmp-<pid>` as binaries before 2026-12-02 named them.
    static func isTemporary(_ name: String) -> Bool {
        guard let marker = name.range(of: temporaryMarker, options: .backwards), marker.lowerBound > name.startIndex
        else {
            return false
        }
        let parts = name[marker.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
        let digits = Set("0123456789")
        let base36 = digits.union("abcdefghijklmnopqrstuvwxyz")
        guard let pid = parts.first, !pid.isEmpty, pid.allSatisfy(digits.contains) else { return false }
        guard parts.count == 2 else { return parts.count == 1 }
        return (1...13).contains(parts[1].count) && parts[1].allSatisfy(base36.contains)
    }

    /// The POSIX reason under a Foundation file error, in errno's words.
    private static func reason(_ error: any Error) -> String {
        let error = error as NSError
        let posix = error.domain == NSPOSIXErrorDomain ? error : error.userInfo[NSUnderlyingErrorKey] as? NSError
        guard let posix, posix.domain == NSPOSIXErrorDomain else { return error.localizedDescription }
        return String(cString: strerror(Int32(posix.code)))
    }
}
