/// A string that is equal to another only when their UTF-8 bytes are, hashed by those bytes: the
/// identity PostgreSQL gives `text` in the dedup tables' and `devices`' keys.
///
/// Swift's `String ==` is Unicode-canonical (`"é" == "e\u{301}"`, NFC against NFD), so a set of
/// ids keyed by `String` took two ids PostgreSQL keeps apart for one: the second event of such a pair
/// in one cycle was dropped as an in-batch duplicate (and the checkpoint moved past it), and two such
/// device ids made one `devices` row. Every id, device id and link path the loader uses as an
/// identity goes through this type.
struct UTF8Key: Hashable {
    /// The string, bytes as received.
    let value: String

    init(_ value: String) {
        self.value = value
    }

    static func == (lhs: UTF8Key, rhs: UTF8Key) -> Bool {
        lhs.value.utf8.count == rhs.value.utf8.count && lhs.value.utf8.elementsEqual(rhs.value.utf8)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(value.utf8.count)
        let hashed: Void? = value.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil {
            for byte in value.utf8 { hasher.combine(byte) }
        }
    }
}
