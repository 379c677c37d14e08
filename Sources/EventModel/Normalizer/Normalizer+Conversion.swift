// `POST /api/analytics/conversion`: the conversions of later React Native SDK sources
// (docs/ingest.md, "What the SDK sources send"). Their body is an SDK event whose purchase fields
// sit at the top level instead of in `data`:
//
//   {"event_name":"purchase","revenue":29.99,"currency":"USD","product_id":"sku_1","quantity":1,
//    "transaction_id":"T-1","timestamp":"...","platform":"ios","device_id":"...","metadata":{...}}
//
// It is stored as an ordinary action (kind `event`) whose `data` holds those fields, so the
// reports count its revenue like any `purchase` or `refund` sent to /event. The body is rewritten
// into the /event form and normalised by the same code: same checks, codes and envelope. Only this
// route pays for the rewrite.

extension Normalizer {
    /// The top-level members of a conversion moved into `data`, in this order.
    static let conversionMembers: [StaticString] = ["revenue", "currency", "product_id", "quantity", "transaction_id"]

    /// Normalises one conversion from `POST /api/analytics/conversion` into envelope lines: an
    /// action whose `data` is `{"revenue":…,"currency":…,"product_id":…,"quantity":…,
    /// "transaction_id":…}` (members as sent; absent and `null` ones left out), followed by the
    /// members of the body's own `data` object if it has one. Every other member is read as on
    /// `/event`. A rejected conversion is dead-lettered as it arrived.
    ///
    /// - Throws: `BodyError` when the body is not a JSON object.
    package static func encodedConversion(
        body: [UInt8], context: RequestContext, limits: IngestLimits = IngestLimits()
    ) throws(BodyError) -> EncodedRequest {
        let document = try parse(body, limits: limits)
        let root = document.root
        guard root.kind == .object else { throw .notAnObject }
        var warnings = document.hasLoneSurrogates ? [EventNormalizer.loneSurrogateWarning] : []
        let rewritten: [UInt8]
        do throws(Rejection) {
            // The limits hold for the conversion as it arrived: the rewrite adds `"data":{}` (9
            // bytes, fewer without the sender's whitespace) and a level to the members it moves, so
            // until 2026-12-05 a conversion within 9 bytes of the size limit, or at the depth limit
            // in a moved member, was refused although the same event was accepted on /event.
            try EventNormalizer.checkLimits(root, limits)
            rewritten = try eventBody(ofConversion: root, warnings: &warnings)
        } catch {
            let rejection = EventRejection(
                index: 0, code: error.code.rawValue, message: error.message, rawEvent: root.rawBytes)
            return EncodedRequest(rejected: [rejection], warnings: warnings)
        }
        var rewrittenLimits = limits
        rewrittenLimits.maxEventBytes += max(0, rewritten.count - root.byteRange.count)
        rewrittenLimits.maxDepth += 1
        rewrittenLimits.maxValues += 2  // `data` and its object
        var outcome = try encodedSingle(body: rewritten, kind: .event, context: context, limits: rewrittenLimits)
        for k in outcome.rejected.indices { outcome.rejected[k].rawEvent = root.rawBytes }
        outcome.warnings = warnings + outcome.warnings
        return outcome
    }

    /// The `/event` body of a conversion: its members as sent, with the conversion members moved
    /// into `data`. A member the body's own `data` has too is stored once, with the value in
    /// `data` (as /event stores a top-level metadata member also in `metadata`), and a warning says
    /// so: until 2026-12-05 both were stored, and the reports (PostgreSQL's `jsonb` keeps the last
    /// of a repeated key) counted the one in `data` while this server's own reading took the first.
    ///
    /// - Throws: `Rejection` `duplicate_key` when a moved member or `data` appears twice,
    ///   `invalid_type` when `data` is neither an object nor `null`.
    static func eventBody(ofConversion root: JSONValue, warnings: inout [String]) throws(Rejection) -> [UInt8] {
        // Each conversion member as given (a null one too: given twice is still a duplicate).
        var given: [JSONValue?] = Array(repeating: nil, count: conversionMembers.count)
        var data: JSONValue?
        var out: [UInt8] = []
        out.reserveCapacity(root.byteRange.count + 16)
        out.append(UInt8(ascii: "{"))
        for (key, value) in root.members {
            if let slot = conversionMembers.firstIndex(where: { key.stringEquals($0) }) {
                guard given[slot] == nil else {
                    throw Rejection(.duplicateKey, "the member \"\(conversionMembers[slot])\" appears more than once")
                }
                given[slot] = value
            } else if key.stringEquals("data") {
                guard data == nil else { throw Rejection(.duplicateKey, "the member \"data\" appears more than once") }
                data = value
            } else {
                appendMember(key.rawBytes, value, to: &out)
            }
        }
        if let data, !data.isNull, data.kind != .object {
            throw Rejection(.invalidType, "\"data\" must be an object or null on /api/analytics/conversion")
        }
        let own = data.flatMap { $0.isNull ? nil : $0 }
        var moved = given.enumerated().compactMap { slot, value in value.flatMap { $0.isNull ? nil : (slot, $0) } }
        if let own {
            let also = moved.filter { slot, _ in
                own.members.contains { key, _ in key.stringEquals(conversionMembers[slot]) }
            }
            if !also.isEmpty {
                let names = also.map { "\"\(conversionMembers[$0.0])\"" }.joined(separator: ", ")
                warnings.append("event 0: \(names) also in \"data\"; the value in \"data\" was stored")
                moved.removeAll { slot, _ in also.contains { $0.0 == slot } }
            }
        }
        if own != nil || !moved.isEmpty {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out += Array(#""data":{"#.utf8)
            for (slot, value) in moved { appendMember(Array("\"\(conversionMembers[slot])\"".utf8), value, to: &out) }
            if let own { for (key, value) in own.members { appendMember(key.rawBytes, value, to: &out) } }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Appends `key:value` (the key quoted as it is) to the object being written in `out`, after a
    /// comma unless it is the object's first member (`out` then ends with its `{`).
    static func appendMember(_ key: some Collection<UInt8>, _ value: JSONValue, to out: inout [UInt8]) {
        if out.last != UInt8(ascii: "{") { out.append(UInt8(ascii: ",")) }
        out += key
        out.append(UInt8(ascii: ":"))
        out += value.rawBytes
    }
}
