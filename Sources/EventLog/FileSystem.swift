import Glibc

/// Checked system calls: retry `EINTR`, keep `errno` and the call's name (NIO's `syscall` helper).
enum FileSystem {
    /// Runs `body` until it does not fail with EINTR; throws `.io` with the call name on failure.
    @discardableResult
    static func syscall<T: FixedWidthInteger>(_ call: String, path: String, _ body: () -> T) throws(LogError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw .io(call: call, errno: code, path: path)
        }
    }

    /// Opens `path` with `flags` (close-on-exec added). A file it creates is the owner's only (0600):
    /// segments hold every event, dead letters the raw bodies of refused requests.
    static func open(_ path: String, flags: Int32, mode: mode_t = 0o600) throws(LogError) -> Int32 {
        try syscall("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    /// Writes all of `bytes` at the current offset, continuing after short writes.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(LogError) {
        var done = 0
        while done < bytes.count {
            let written = try syscall("write", path: path) {
                Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            }
            done += written
        }
    }

    /// Writes all of `bytes` at `offset` (`pwrite`), continuing after short writes.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws(LogError)
    {
        var done = 0
        while done < bytes.count {
            let written = try syscall("pwrite", path: path) {
                pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            done += written
        }
    }

    /// Reads up to `count` bytes at `offset` into `buffer` (resized); returns the bytes read (short at EOF).
    static func read(_ fd: Int32, at offset: Int64, count: Int, into buffer: inout [UInt8], path: String)
        throws(LogError) -> Int
    {
        if buffer.count < count { buffer.append(contentsOf: repeatElement(0, count: count - buffer.count)) }
        var done = 0
        while done < count {
            let got = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(LogError) -> Int in
                    try syscall("pread", path: path) {
                        pread(fd, raw.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                    }
                }
            }.get()
            if got == 0 { break }
            done += got
        }
        return done
    }

    /// The size of the open file `fd`.
    static func size(_ fd: Int32, path: String) throws(LogError) -> Int64 {
        var info = Glibc.stat()
        try syscall("fstat", path: path) { fstat(fd, &info) }
        return Int64(info.st_size)
    }

    /// Size and modification time (µs since the epoch) of `path`, or nil if it does not exist.
    static func status(_ path: String) throws(LogError) -> (size: Int64, modified: Int64)? {
        var info = Glibc.stat()
        if lstat(path, &info) != 0 {
            if errno == ENOENT { return nil }
            throw .io(call: "stat", errno: errno, path: path)
        }
        let modified = Int64(info.st_mtim.tv_sec) * 1_000_000 + Int64(info.st_mtim.tv_nsec) / 1000
        return (Int64(info.st_size), modified)
    }

    /// Flushes the directory entry table of `path` (after creating or deleting a file in it).
    static func fsyncDirectory(_ path: String) throws(LogError) {
        let fd = try open(path, flags: O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try syscall("fsync", path: path) { fsync(fd) }
    }

    /// Creates `path` and missing parents (the owner's only, 0700), syncing each parent whose entries changed.
    static func makeDirectories(_ path: String) throws(LogError) {
        var isDirectory = Glibc.stat()
        if lstat(path, &isDirectory) == 0 { return }
        let parent = parentDirectory(path)
        if parent != path { try makeDirectories(parent) }
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw .io(call: "mkdir", errno: errno, path: path) }
        try fsyncDirectory(parent)
    }

    static func parentDirectory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Names in directory `path` (nil if it does not exist or is not a directory).
    static func list(_ path: String) throws(LogError) -> [String]? {
        guard let dir = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw .io(call: "opendir", errno: errno, path: path)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            // In place (`&`): a copy of `d_name` would read all 256 bytes, past the end of a short
            // last record in readdir's buffer.
            let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Segment ids in a node directory, ascending (empty if the directory does not exist).
    static func segmentIDs(in nodeDirectory: String) throws(LogError) -> [UInt64] {
        (try list(nodeDirectory) ?? []).compactMap(SegmentFormat.segmentID(fileName:)).sorted()
    }

    /// Total bytes of the segments in a node directory.
    static func diskUsage(of nodeDirectory: String) throws(LogError) -> Int64 {
        var total: Int64 = 0
        for id in try segmentIDs(in: nodeDirectory) {
            total += try status(nodeDirectory + "/" + SegmentFormat.fileName(segment: id))?.size ?? 0
        }
        return total
    }
}
