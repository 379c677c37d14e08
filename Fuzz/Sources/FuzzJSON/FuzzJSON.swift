// libFuzzer entry point: the validating JSON scanner on arbitrary bytes.
// Invariants checked: no crash; a document that scans has a root whose byte range lies inside
// the input; walking every value (members, elements, strings, numbers) never traps; a too-deep
// document is refused at a small depth limit rather than recursing.
import EventModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for depth in [4, 512] {
        guard let document = try? JSONDocument(parsing: bytes, maxDepth: depth) else { continue }
        let root = document.root
        precondition(root.byteRange.lowerBound >= 0 && root.byteRange.upperBound <= bytes.count)
        var budget = 10_000
        walk(root, budget: &budget)
    }
    return 0
}

private func walk(_ value: JSONValue, budget: inout Int) {
    budget -= 1
    guard budget > 0 else { return }
    precondition(value.byteRange.upperBound <= value.document.bytes.count)
    switch value.kind {
    case .object:
        var seen = 0
        for (key, member) in value.members {
            _ = key.string
            walk(member, budget: &budget)
            seen += 1
        }
        precondition(seen == value.count)
        if let first = value.members.first(where: { _ in true }), let name = first.key.string {
            precondition(value[name] != nil, "lookup of an existing key failed")
        }
    case .array:
        var seen = 0
        for element in value.elements {
            walk(element, budget: &budget)
            seen += 1
        }
        precondition(seen == value.count)
    case .string:
        _ = value.string
        _ = value.stringBytes
    case .number:
        _ = value.double
        _ = value.int64
    case .bool:
        precondition(value.bool != nil)
    case .null:
        precondition(value.isNull)
    }
}
