// The JSON answers of the ingest routes (issue 3), built here because this module owns JSON
// writing: 200/400 `{"accepted":n,"rejected":[{"index":i,"code":"…","message":"…"}],"warnings":[…]}`
// and, for body errors, `{"error":{"code":"…","message":"…"}}`.

extension NormalizedRequest {
    /// `{"accepted":n,"rejected":[{"index":i,"code":"…","message":"…"}],"warnings":["…"]}`.
    ///
    /// Raw rejected events are not echoed back to the client.
    package func encodedResponse() -> [UInt8] {
        encodedResponse(acceptedCount: accepted.count)
    }

    func encodedResponse(acceptedCount: Int) -> [UInt8] {
        var bound = 64 + warnings.reduce(0) { $0 + JSONWriter.bound(of: $1) + 1 }
        for rejection in rejected {
            bound += 64 + JSONWriter.bound(of: rejection.code) + JSONWriter.bound(of: rejection.message)
        }
        return [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
            var w = JSONWriter(buffer.baseAddress!)
            w.raw(#"{"accepted":"#)
            w.raw(Array(String(acceptedCount).utf8))
            w.raw(#","rejected":["#)
            for (k, rejection) in rejected.enumerated() {
                if k > 0 { w.byte(UInt8(ascii: ",")) }
                w.raw(#"{"index":"#)
                w.raw(Array(String(rejection.index).utf8))
                w.raw(#","code":"#)
                w.string(rejection.code)
                w.raw(#","message":"#)
                w.string(rejection.message)
                w.byte(UInt8(ascii: "}"))
            }
            w.raw(#"],"warnings":["#)
            for (k, warning) in warnings.enumerated() {
                if k > 0 { w.byte(UInt8(ascii: ",")) }
                w.string(warning)
            }
            w.raw("]}")
            count = w.cursor - buffer.baseAddress!
            precondition(count <= bound, "response length bound exceeded")
        }
    }
}

extension BodyError {
    /// `{"error":{"code":"…","message":"…"}}`.
    package func encodedResponse() -> [UInt8] {
        JSONOutput.errorBody(code: code, message: description)
    }
}

/// JSON helpers for other modules' small responses.
package enum JSONOutput {
    /// `{"error":{"code":"…","message":"…"}}` with both strings JSON-escaped.
    package static func errorBody(code: String, message: String) -> [UInt8] {
        let bound = 40 + JSONWriter.bound(of: code) + JSONWriter.bound(of: message)
        return [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
            var w = JSONWriter(buffer.baseAddress!)
            w.raw(#"{"error":{"code":"#)
            w.string(code)
            w.raw(#","message":"#)
            w.string(message)
            w.raw("}}")
            count = w.cursor - buffer.baseAddress!
        }
    }

    /// Appends `text` as a quoted, escaped JSON string.
    package static func appendString(_ text: String, to buffer: inout [UInt8]) {
        let bound = JSONWriter.bound(of: text)
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: bound))
        let written = buffer.withUnsafeMutableBufferPointer { all in
            var w = JSONWriter(all.baseAddress! + start)
            w.string(text)
            return w.cursor - (all.baseAddress! + start)
        }
        buffer.removeLast(bound - written)
    }
}
