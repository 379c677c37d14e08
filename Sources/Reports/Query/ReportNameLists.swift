import Foundation
import JSONText

/// The name arrays (event names, currencies) already decoded by one report read, each as its
/// unique names in ascending order with the position each value is read from: rows repeat a few name
/// lists thousands of times, so a row's breakdown is its values in that order beside the list's
/// shared names and JSON keys (`NamedValues`), with no name hashed, sorted or encoded per row. The
/// lists are found by their bytes in the line (a hash, open addressing, `memcmp`), so a known list
/// costs no allocation. At most `limit` lists are kept.
struct ReportNameLists {
    /// A list's length, its unique names in ascending order with the position each is read from
    /// (`order`, nil when that is the list's own order: PostgreSQL sorted the names as Swift does and
    /// none repeats), and those names as JSON keys. A class, not a tuple of its values: a lookup
    /// hands out one reference, not one per value (a per-link line looks up three lists, and the
    /// tuple's retains and releases showed in its profile).
    final class List: Sendable {
        let count: Int
        let names: [String]
        let order: [Int]?
        let keys: JSONKeys
        /// How many bytes its array takes in a line, braces included (`skip(_:)` passes over it).
        let byteCount: Int

        init(
            count: Int, names: [String], order: [Int]?, keys: JSONKeys, byteCount: Int
        ) {
            self.count = count
            self.names = names
            self.order = order
            self.keys = keys
            self.byteCount = byteCount
        }
    }
    private var keys: [[UInt8]] = []
    private var lists: [List] = []
    /// Open addressing over `keys`: -1 = empty; twice `limit` entries, so probes stay short.
    private var slots = [Int32](repeating: -1, count: 8192)
    private let limit = 4096

    /// The next array of `line` (a `text[]` of names) as its list (a repeated name is read from its
    /// last position, as a dictionary built in order would keep), remembered for the lines after it.
    mutating func next(_ line: inout ReportPacked) throws -> List {
        let bytes = try line.arrayBytes()
        if bytes.count == 2 { return Self.empty }  // {}
        let (known, slot) = find(bytes)
        if let known { return known }
        // A malformed array fails as its line does, naming the line's source (until 2026-12-03 the
        // error said only "names: malformed packed row at byte N", N counted in the array).
        guard let list = try? Self.decode(bytes) else { throw line.malformed() }
        if keys.count < limit {
            slots[slot] = Int32(keys.count)
            keys.append(Array(bytes))
            lists.append(list)
        }
        return list
    }

    private static let empty = List(count: 0, names: [], order: nil, keys: .none, byteCount: 2)

    /// The list remembered for these bytes, else nil and the free slot where it would go.
    private func find(_ bytes: UnsafeBufferPointer<UInt8>) -> (list: List?, slot: Int) {
        let mask = slots.count - 1
        var slot = Self.hash(bytes) & mask
        while slots[slot] >= 0 {
            let known = Int(slots[slot])
            let same = keys[known].withUnsafeBufferPointer { key in
                key.count == bytes.count && memcmp(key.baseAddress!, bytes.baseAddress!, bytes.count) == 0
            }
            if same { return (lists[known], slot) }
            slot = (slot + 1) & mask
        }
        return (nil, slot)
    }

    /// Decodes a name array's bytes (braces included) into its list.
    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws -> List {
        var names: [String] = []
        var cursor = ReportPacked(bytes, what: "names")
        try cursor.strings(into: &names)
        // Names told apart by their bytes, as `jsonb` keys are (until 2026-12-04 two spellings of
        // one name that Swift's `String` takes for equal were read as one, the first's count lost).
        var positions: [ExactText: Int] = [:]
        positions.reserveCapacity(names.count)
        for (position, name) in names.enumerated() { positions[ExactText(name)] = position }
        // PostgreSQL sorted the names by the database's collation, which may differ from Swift's
        // order (case, punctuation): then the values are read in Swift's order.
        let sorted = positions.sorted { $0.key < $1.key }
        let order = sorted.map(\.value)
        let identity = order.count == names.count && order.enumerated().allSatisfy { $0.offset == $0.element }
        let sortedNames = sorted.map(\.key.text)
        return List(
            count: names.count, names: sortedNames, order: identity ? nil : order,
            keys: JSONKeys(sortedNames), byteCount: bytes.count)
    }

    /// A multiplicative hash of the bytes, eight at a time (lists are found by comparing bytes).
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let raw = UnsafeRawBufferPointer(bytes)
        var hash = UInt64(truncatingIfNeeded: bytes.count) &* 0x9E37_79B9_7F4A_7C15
        var offset = 0
        while offset + 8 <= raw.count {
            hash = (hash ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x100_0000_01b3
            hash ^= hash >> 29
            offset += 8
        }
        while offset < raw.count {
            hash = (hash ^ UInt64(raw[offset])) &* 0x100_0000_01b3
            offset += 1
        }
        return Int(truncatingIfNeeded: hash ^ (hash >> 32))
    }
}

/// An element type of a packed array (`ReportPacked.ints(into:)`, `strings(into:)`), so a reader can
/// be written once for counts and amounts.
protocol PackedElement: Equatable, Sendable {
    /// Appends the next packed array's elements to `values`.
    static func read(_ line: inout ReportPacked, into values: inout [Self]) throws
}

extension Int: PackedElement {
    static func read(_ line: inout ReportPacked, into values: inout [Int]) throws { try line.ints(into: &values) }
}

extension String: PackedElement {
    static func read(_ line: inout ReportPacked, into values: inout [String]) throws {
        try line.strings(into: &values)
    }
}
