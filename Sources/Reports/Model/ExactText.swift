/// A string compared, hashed and ordered by its UTF-8 bytes, as PostgreSQL's deterministic
/// collations tell text apart. Swift's `String` takes canonically equivalent spellings (é as one
/// code point, or as e and a combining accent) for one string: grouping by it merged two links,
/// UTM values or event names that the database and its views keep apart (until 2026-12-04 the
/// per-link totals added them up as one row).
package struct ExactText: Hashable, Comparable, Sendable {
    package let text: String

    package init(_ text: String) { self.text = text }

    package static func == (left: ExactText, right: ExactText) -> Bool {
        left.text.utf8.elementsEqual(right.text.utf8)
    }

    package func hash(into hasher: inout Hasher) {
        let hashed: Void? = text.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil { Array(text.utf8).withUnsafeBytes { hasher.combine(bytes: $0) } }  // the same bytes fed
        hasher.combine(0xFF as UInt8)  // no UTF-8 byte: ends the string
    }

    /// `String`'s order, then the bytes between spellings it takes for one.
    package static func < (left: ExactText, right: ExactText) -> Bool {
        if left.text < right.text { return true }
        if right.text < left.text { return false }
        return left.text.utf8.lexicographicallyPrecedes(right.text.utf8)
    }
}
