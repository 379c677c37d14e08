import EventModel
import Foundation
import JSONText

/// Dead-letter records: one JSON line per refused event (or per refused request), so nothing
/// that arrived disappears without a trace. Layout:
/// `{"v":1,"received_at":"…Z","app":"…","route":"batch","index":3,"code":"…","message":"…","raw":<event JSON>}`;
/// a body that is not JSON is kept as `"raw_base64":"…"` instead of `raw`, and `index` is omitted
/// for whole-request refusals.
enum DeadLetter {
    static func record(
        receivedAt: Timestamp, app: String, route: String, index: Int?, code: String, message: String,
        raw: ArraySlice<UInt8>?, rawIsJSON: Bool
    ) -> [UInt8] {
        var writer = JSONText(capacity: 128 + (raw?.count ?? 0))
        writer.raw("{\"v\":1,\"received_at\":")
        writer.string(receivedAt.iso8601)
        writer.raw(",\"app\":")
        writer.string(app)
        writer.raw(",\"route\":")
        writer.string(route)
        if let index {
            writer.raw(",\"index\":")
            writer.int(index)
        }
        writer.raw(",\"code\":")
        writer.string(code)
        writer.raw(",\"message\":")
        writer.string(message)
        if let raw {
            if rawIsJSON {
                // Valid JSON holds CR and LF only as whitespace (inside strings they must be
                // escaped), so turning them into spaces keeps the value and the record one line.
                writer.raw(",\"raw\":")
                writer.json(raw.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 })
            } else {
                writer.raw(",\"raw_base64\":")
                writer.string(Data(raw).base64EncodedString())
            }
        }
        writer.raw("}")
        return writer.takeBytes()
    }

    /// The raw JSON of each event in a batch body, by index, when the body has a `batch` array
    /// (batch and link routes); nil when it cannot be split (then the whole body is kept).
    static func batchElements(_ body: [UInt8]) -> [ArraySlice<UInt8>]? {
        guard let document = try? JSONDocument(parsing: body), document.root.kind == .object else { return nil }
        if let batch = document.root["batch"], batch.kind == .array {
            return batch.elements.map(\.rawBytes)
        }
        // Link service shape {"clicks":[...],"matches":[...]}: clicks first, then matches.
        var elements: [ArraySlice<UInt8>] = []
        for key in ["clicks", "matches"] {
            if let list = document.root[key], list.kind == .array { elements += list.elements.map(\.rawBytes) }
        }
        return elements.isEmpty ? nil : elements
    }
}
