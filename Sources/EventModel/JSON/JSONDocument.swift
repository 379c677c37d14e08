// A validated JSON document and its tape.
//
// The scanner (JSONScanner.swift) reads the bytes once and records one `Token` per value, in
// document order: an object's token is followed by its members' tokens (key string, value,
// key, value, ...), an array's by its elements' tokens. Each token knows its byte range and the
// tape index just after its subtree (`next`), so skipping a value is O(1) and member lookup walks
// only the keys of one object. Values are never materialised unless asked for: strings are
// unescaped on demand (with a fast path when the scanner saw no backslash), and any value's raw
// bytes are available as a slice, which is how `data` and `metadata` reach the envelope
// byte for byte.
//
// Duplicate keys: the scanner accepts them (RFC 8259 says names SHOULD be unique); lookup by key
// returns the first occurrence. The normaliser rejects an event that repeats one of its known
// top-level fields (code `duplicate_key`); see docs/envelope.md.

/// The JSON type of a value.
package enum JSONKind: UInt8, Sendable {
    /// `{...}`
    case object
    /// `[...]`
    case array
    /// `"..."`
    case string
    /// A number.
    case number
    /// `true` or `false`.
    case bool
    /// `null`.
    case null
}

/// One value on the tape: 16 bytes.
struct Token: Sendable {
    /// First byte of the value; for strings the byte after the opening quote.
    var start: UInt32
    /// One past the last byte; for strings the closing quote's offset.
    var end: UInt32
    /// The tape index just after this value's subtree.
    var next: UInt32
    /// A `JSONKind` raw value.
    var kind: UInt8
    /// For strings: `Token.hasEscapes`; for numbers: `Token.isInteger`.
    var flags: UInt8
    /// Containers enclosing this value (the root has depth 0).
    var depth: UInt16

    static let hasEscapes: UInt8 = 1
    static let isInteger: UInt8 = 2
}

/// A validated JSON document: its bytes plus the tape the scanner built.
///
/// A class (immutable, so `Sendable` as a value would be): every `JSONValue` holds its document,
/// and a normalised event holds a dozen values, so copying one costs a single reference count
/// instead of one per array (the bytes and the tape). Fewer counts, not a rate the machine
/// resolves: docs/ingest-performance.md, "what reference counting costs".
package final class JSONDocument: Sendable {
    /// The document's bytes.
    package let bytes: [UInt8]
    let tape: [Token]
    /// Whether the text had a lone UTF-16 surrogate escape: `bytes` then has `\ufffd` in its place
    /// (EscapeRepairs.swift).
    package let hasLoneSurrogates: Bool

    /// Scans and validates `bytes` as one RFC 8259 JSON text.
    ///
    /// - Parameters:
    ///   - bytes: the document.
    ///   - maxDepth: the deepest nesting of objects and arrays allowed (the root container is 1).
    ///   - maxValues: the most values in the text, object keys included (each is one 16-byte
    ///     token on the tape); more is `.tooManyValues`.
    /// - Throws: `JSONError` with the offset of the first offending byte.
    package init(parsing bytes: [UInt8], maxDepth: Int = 512, maxValues: Int = Int(UInt32.max)) throws(JSONError) {
        do throws(JSONError) {
            tape = try JSONScanner.scan(bytes, maxDepth: maxDepth, maxValues: maxValues)
            self.bytes = bytes
            hasLoneSurrogates = false
        } catch  where error.reason == .loneSurrogate {
            // Rare, so the strict scan stays as fast as it was: scan a copy with `\ufffd` for each
            // lone surrogate escape (the same length, so any other error keeps its offset).
            let repaired = repairingEscapes(bytes, .loneSurrogates) ?? bytes
            do throws(JSONError) {
                tape = try JSONScanner.scan(repaired, maxDepth: maxDepth, maxValues: maxValues)
            } catch {
                throw error.reason == .loneSurrogate ? JSONError(.invalidEscape, at: error.byteOffset) : error
            }
            self.bytes = repaired
            hasLoneSurrogates = true
        }
    }

    /// The top-level value.
    package var root: JSONValue { JSONValue(document: self, index: 0) }
}
