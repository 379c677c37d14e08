// libFuzzer entry point: the segment reader (frame scanner, decompression, recovery scan) on
// arbitrary bytes written as a segment file. Invariants: no crash, no hang; the reader never
// returns more records than the inspector counts as good.
import EventLog
import Glibc

private let directory: String = {
    let base = "/dev/shm/detour-fuzz-segment-\(getpid())"
    mkdir(base, 0o700)
    mkdir(base + "/node-1", 0o700)
    return base
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSegment(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let path = directory + "/node-1/00000000000000000001.seg"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0)
    var written = 0
    while written < size {
        let n = write(fd, data + written, size - written)
        precondition(n > 0)
        written += n
    }
    close(fd)
    let report = try? SegmentInspector.inspect(path: path, isOpen: false)
    if let reader = try? LogReader(directory: directory, node: "node-1") {
        var position: LogPosition? = nil
        var total = 0
        for _ in 0..<64 {
            guard let batch = try? reader.read(after: position, maxRecords: 1000, maxBytes: 1 << 20) else { break }
            total += batch.records.count
            if batch.next == position || batch.records.isEmpty { break }
            position = batch.next
        }
        if let report { precondition(total <= report.records, "reader returned records the inspector calls damaged") }
    }
    return 0
}
