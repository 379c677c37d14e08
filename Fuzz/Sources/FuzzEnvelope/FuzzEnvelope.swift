// libFuzzer entry point: the envelope decoder (one event-log line) on arbitrary bytes.
// Invariants: a line that decodes re-encodes to one line (no newline) that decodes again, and
// that second encoding is byte-identical (encoding is a fixed point).
import EventModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    // A log line never holds a newline (the log splits records at newlines), so such input is out
    // of contract: its raw `data` could keep the newline and the re-encoded line would too.
    guard !bytes.contains(10) else { return 0 }
    guard let envelope = try? Envelope(decoding: Array(bytes)) else { return 0 }
    let line = envelope.encoded()
    precondition(!line.contains(10), "an encoded envelope holds a newline")
    do {
        let again = try Envelope(decoding: line)
        precondition(again.encoded() == line, "encoding is not a fixed point")
    } catch {
        preconditionFailure("an encoded envelope does not decode: \(error)")
    }
    return 0
}
