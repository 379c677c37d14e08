// libFuzzer entry point: the SDK/batch/link normaliser on arbitrary request bodies.
// The first input byte picks the route (event, retention, batch, link); the rest is the body.
// Invariants: no crash; every accepted envelope encodes to one line that decodes, and encoding is
// a fixed point of the log round trip (encode -> decode -> encode gives the same bytes). In-memory
// equality is not required: timestamps carry microseconds in memory and milliseconds on the wire
// (contracts.md), so a client time with 4+ fraction digits legitimately differs after a round trip.
import EventModel
import Glibc

private let strict = getenv("DETOUR_FUZZ_STRICT") != nil

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNormalizer(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let context = RequestContext(
        appID: "fuzz-app", sdkHeader: selector & 0x10 == 0 ? nil : "ios/1.0.2",
        receivedAt: Timestamp(microseconds: 1_780_000_000_000_000))
    var limits = IngestLimits()
    limits.maxBatchEvents = 64
    let result: NormalizedRequest
    do {
        switch selector % 4 {
        case 0: result = try Normalizer.single(body: body, kind: .event, context: context, limits: limits)
        case 1: result = try Normalizer.single(body: body, kind: .retention, context: context, limits: limits)
        case 2: result = try Normalizer.batch(body: body, context: context, limits: limits)
        default: result = try Normalizer.linkEvents(body: body, context: context, limits: limits)
        }
    } catch {
        return 0
    }
    for envelope in result.accepted {
        let line = envelope.encoded()
        // Known bug (docs/reliability.md, "Findings"): raw `data`/`metadata` keep JSON whitespace,
        // so a pretty-printed body yields a line with a newline, which the event log refuses (503).
        // Fuzz/corpus/normalizer/known-bug-newline-in-data reproduces it; DETOUR_FUZZ_STRICT=1
        // turns the check back on once it is fixed.
        if line.contains(10) && !strict { continue }
        precondition(!line.contains(10), "an accepted envelope encodes with a newline")
        do {
            let decoded = try Envelope(decoding: line)
            precondition(decoded.encoded() == line, "an accepted envelope does not survive the log round trip")
        } catch {
            preconditionFailure("an accepted envelope does not decode: \(error)")
        }
    }
    return 0
}
