import EventModel
import Foundation
import JSONText

/// Dead-letter records: one JSON line per refused event (or per refused request), so nothing
/// that arrived disappears without a trace. Layout:
/// `{"v":1,"received_at":"…Z","app":"…","route":"batch","index":3,"code":"…","message":"…","raw":<event JSON>}`;
/// a body that is not JSON is kept as `"raw_base64":"…"` instead of `raw` (with `"encoding":"gzip"`
/// or `"zstd"` when it is kept as received, compressed), and `index` is omitted for whole-request
/// refusals.
enum DeadLetter {
    static func record(
        receivedAt: Timestamp, app: String, route: String, index: Int?, code: String, message: String,
        raw: ArraySlice<UInt8>?, rawIsJSON: Bool, encoding: String? = nil
    ) -> [UInt8] {
        // Sized for the whole record, so a 10 MB raw event is not copied into a buffer of twice its size.
        let rawBytes = raw.map { rawIsJSON ? $0.count : ($0.count + 2) / 3 * 4 } ?? 0
        var writer = JSONText(capacity: 256 + rawBytes + 6 * (app.utf8.count + route.utf8.count + message.utf8.count))
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
                writeOneLine(raw, to: &writer)
            } else {
                writer.raw(",\"raw_base64\":")
                writer.string(Data(raw).base64EncodedString())
                if let encoding {
                    writer.raw(",\"encoding\":")
                    writer.string(encoding)
                }
            }
        }
        writer.raw("}")
        return writer.takeBytes()
    }

    /// Writes `json` with CR and LF as spaces, through a small buffer (no copy of the whole value).
    private static func writeOneLine(_ json: ArraySlice<UInt8>, to writer: inout JSONText) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { buffer in
            var start = json.startIndex
            while start < json.endIndex {
                let end = min(start + buffer.count, json.endIndex)
                var count = 0
                for byte in json[start..<end] {
                    buffer[count] = byte == 0x0A || byte == 0x0D ? 0x20 : byte
                    count += 1
                }
                writer.json(utf8: UnsafeBufferPointer(rebasing: buffer[..<count]))
                start = end
            }
        }
    }
}
