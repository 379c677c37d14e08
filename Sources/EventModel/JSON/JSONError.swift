/// Why the scanner refused a document, and where.
package struct JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Reason: String, Sendable {
        /// The document ended inside a value.
        case unexpectedEnd = "unexpected end of input"
        /// A byte that cannot start or continue a value here.
        case unexpectedByte = "unexpected byte"
        /// Bytes after the top-level value.
        case trailingGarbage = "unexpected data after the JSON value"
        /// A string holds bytes that are not UTF-8.
        case invalidUTF8 = "invalid UTF-8 in string"
        /// A string holds an unknown escape.
        case invalidEscape = "invalid escape in string"
        /// A string holds a surrogate escape without its other half. `JSONDocument` reads the text
        /// again with U+FFFD for it (EscapeRepairs.swift), so callers never see this reason.
        case loneSurrogate = "lone surrogate escape in string"
        /// A string holds a raw control character.
        case controlCharacter = "control character in string"
        /// A number that RFC 8259 does not allow (leading zero, missing digits).
        case invalidNumber = "invalid number"
        /// Nesting beyond the configured depth.
        case tooDeep = "nesting too deep"
        /// An input too large to index (over 4 GiB).
        case tooLarge = "document too large"
        /// More values (keys included) than the caller allows; the offset is the first one over.
        case tooManyValues = "too many JSON values"
    }

    /// What went wrong.
    package var reason: Reason
    /// Offset of the first offending byte.
    package var byteOffset: Int

    /// Creates an error.
    package init(_ reason: Reason, at byteOffset: Int) {
        self.reason = reason
        self.byteOffset = byteOffset
    }

    /// `"<reason> at byte N"`.
    package var description: String { "\(reason.rawValue) at byte \(byteOffset)" }
}
