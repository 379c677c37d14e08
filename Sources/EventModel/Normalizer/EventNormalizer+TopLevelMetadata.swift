// Identity and app members at the top level of an SDK event, stored in `metadata`.
//
// One later React Native version sends `idfv`, `aaid`, `idfa`, `customer_user_id`, `app_version`,
// `build_number`, `consent`, `os_version` and `locale` at the top level of its events; the next
// one moves them, with `att_status` and `session_id`, into a `metadata` object, which is stored
// as it is (docs/ingest.md, "What the SDK sources send"). So that analysts find an app's version
// or an install's IDFV in one place whichever of the two sent it, a top-level one is stored in
// `metadata` too: `{<the top-level members in body order>, <metadata's own members>}`. Values
// are kept byte for byte (a `null` too); a member that is in both keeps `metadata`'s value. Only
// events that send such a member pay for the merge.

extension EventField {
    /// Members that one SDK version sends at the top level and the next in `metadata`.
    static let metadataMembers: [EventField] = [
        .idfv, .aaid, .idfa, .customerUserID, .appVersion, .buildNumber, .consent, .osVersion, .locale, .attStatus,
        .sessionID,
    ]

    static let metadataMask: UInt64 = bits(metadataMembers)
}

extension EventNormalizer {
    /// The `metadata` to store for the event whose members `fields` holds, which sent at least one
    /// of `EventField.metadataMembers` at the top level; nil (the body's `metadata`, with a
    /// warning) when its `metadata` is neither an object nor `null`.
    mutating func mergedMetadata(index: Int) -> [UInt8]? {
        let own = fields[.metadata].flatMap { $0.isNull ? nil : $0 }
        let topLevel = EventField.metadataMembers.compactMap { field in fields[field].map { (field, $0) } }
            .sorted { $0.1.index < $1.1.index }
        if let own, own.kind != .object {
            let names = topLevel.map { "\"\($0.0.key)\"" }.joined(separator: ", ")
            result.warnings.append("event \(index): \(names) not stored: \"metadata\" is not an object")
            return nil
        }
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(topLevel.reduce(own?.byteRange.count ?? 2) { $0 + $1.1.byteRange.count + 20 })
        var shadowed: [String] = []
        for (field, value) in topLevel {
            if let own, own.members.contains(where: { key, _ in key.stringEquals(field.key) }) {
                shadowed.append("\"\(field.key)\"")
                continue
            }
            Normalizer.appendMember(Array("\"\(field.key)\"".utf8), value, to: &out)
        }
        if let own { for (key, value) in own.members { Normalizer.appendMember(key.rawBytes, value, to: &out) } }
        out.append(UInt8(ascii: "}"))
        if !shadowed.isEmpty {
            let list = shadowed.joined(separator: ", ")
            result.warnings.append("event \(index): \(list) also in \"metadata\"; the value in \"metadata\" was stored")
        }
        return out
    }
}
