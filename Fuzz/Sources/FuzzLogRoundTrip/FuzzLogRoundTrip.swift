// libFuzzer entry point: the event log round trip on arbitrary record contents.
// Input: byte 0 picks codec (bit 0) and frame grouping (bits 1-2); bytes 1-4 pick an offset and an
// XOR mask for one corrupted byte (mask 0: no corruption); the rest, split at 0x00, are records
// (newlines removed, as the writer requires). The records are appended with LogWriter in 1-4
// group commits, the writer is closed, one byte may be flipped, then the segment is read back.
// Invariants: uncorrupted, the reader returns exactly the records written, in order, and the
// inspector reports no damage; corrupted, nothing crashes and the reader returns a subsequence of
// whole frames (never a record that was not written).
import EventLog
import Glibc

private let base: String = {
    let path = "/dev/shm/detour-fuzz-roundtrip-\(getpid())"
    mkdir(path, 0o700)
    return path
}()
nonisolated(unsafe) private var iteration = 0  // libFuzzer calls the entry point from one thread

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogRoundTrip(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 6 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let codec: Codec = input[0] & 1 == 0 ? .zstd : .gzip
    let groups = Int((input[0] >> 1) & 3) + 1
    let offset = Int(input[1]) | Int(input[2]) << 8 | Int(input[3]) << 16
    let mask = input[4]
    var records: [[UInt8]] = []
    var current: [UInt8] = []
    for byte in input[5...] {
        if byte == 0 {
            if !current.isEmpty { records.append(current) }
            current = []
        } else if byte != 10 {
            current.append(byte)
        }
    }
    if !current.isEmpty { records.append(current) }
    guard !records.isEmpty, records.count <= 512 else { return 0 }

    iteration += 1
    let directory = base + "/\(iteration)"
    mkdir(directory, 0o700)
    defer { removeTree(directory) }
    var configuration = LogConfiguration(directory: directory)
    configuration.codec = codec
    configuration.durability = .interval(.seconds(60))
    do {
        let writer = try LogWriter(configuration: configuration)
        let step = max(1, (records.count + groups - 1) / groups)
        var index = 0
        while index < records.count {
            try writer.append(Array(records[index..<min(records.count, index + step)]))
            index += step
        }
        writer.close()
    } catch {
        preconditionFailure("appending valid records failed: \(error)")
    }
    let segment = configuration.nodeDirectory + "/" + SegmentFormat.fileName(segment: 1)
    if mask != 0 {
        let fd = open(segment, O_RDWR)
        precondition(fd >= 0)
        var stat = stat()
        fstat(fd, &stat)
        if stat.st_size > 0 {
            let at = off_t(offset % Int(stat.st_size))
            var byte: UInt8 = 0
            _ = pread(fd, &byte, 1, at)
            byte ^= mask
            _ = pwrite(fd, &byte, 1, at)
        }
        close(fd)
    }
    var read: [[UInt8]] = []
    if let reader = try? LogReader(directory: directory, node: "node-1") {
        var position: LogPosition? = nil
        for _ in 0..<1024 {
            guard let batch = try? reader.read(after: position, maxRecords: 100, maxBytes: 1 << 20) else { break }
            read += batch.records
            if batch.records.isEmpty || batch.next == position { break }
            position = batch.next
        }
    }
    let report = try? SegmentInspector.inspect(path: segment, isOpen: false)
    if mask == 0 {
        precondition(
            read == records, "the log did not give back the records written (\(read.count) of \(records.count))")
        precondition(report?.damage.isEmpty ?? false, "an intact segment is reported damaged")
    } else {
        // Every record read back was written, in order.
        var next = 0
        for record in read {
            while next < records.count && records[next] != record { next += 1 }
            precondition(next < records.count, "the reader returned a record that was never written")
            next += 1
        }
    }
    return 0
}

private func removeTree(_ path: String) {
    guard let handle = opendir(path) else { return }
    while let entry = readdir(handle) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name == "." || name == ".." { continue }
        let child = path + "/" + name
        if entry.pointee.d_type == UInt8(DT_DIR) { removeTree(child) } else { unlink(child) }
    }
    closedir(handle)
    rmdir(path)
}
