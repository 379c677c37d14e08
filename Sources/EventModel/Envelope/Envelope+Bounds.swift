extension Envelope {
    /// The most bytes a key column of an envelope may have for PostgreSQL to index it: a btree entry
    /// holds at most ~2,700 bytes, and the widest key (`app_id, day, path, kind, name`) takes a
    /// link path and an event name together.
    package static let maxLinkPathBytes = EventNormalizer.maxLinkPathBytes
    /// The longest event name ingest may be configured to accept (`--max-name-length`, since
    /// 2026-12-02), in characters.
    package static let maxNameCharacters = 256
    /// See `maxLinkPathBytes`: `maxNameCharacters` of up to 4 bytes each.
    package static let maxNameBytes = 4 * maxNameCharacters

    /// The deepest envelope line the loader reads (`init(decoding:)`).
    package static let maxDecodingDepth = 512
    /// The deepest event ingest may be configured to accept (`--max-depth`): an event's members
    /// sit one level deeper in its envelope (top-level metadata members move into `metadata`), so
    /// half the loader's depth leaves a wide margin. Until 2026-12-05 `--max-depth` went to 1,024,
    /// and from 511 an accepted event could be one the loader skipped as undecodable.
    package static let maxEventDepth = maxDecodingDepth / 2

    /// Why PostgreSQL could not index this envelope's keys, or nil. Ingest refuses such events
    /// (ids, device ids and link events' click ids over 128 bytes, link paths over 1,024, names over
    /// 256 characters); an envelope over them was written before a bound existed (link paths and
    /// attribution click ids until 2026-12-02) and would fail every load or rollup pass, so the
    /// aggregator skips it and counts it with the undecodable records.
    package var indexBoundViolation: String? {
        // Checked per record by the loader: no array of the fields, so nothing is allocated.
        let idLimit = EventNormalizer.maxIdentifierBytes
        func over(_ name: String, _ value: String?, _ limit: Int) -> String? {
            guard let value, value.utf8.count > limit else { return nil }
            return "\(name) of \(value.utf8.count) bytes is over \(limit), more than PostgreSQL indexes"
        }
        // An SDK event's own `click_id` is not a key (and not bounded at ingest): only a link event's.
        let linkClickID = kind == .click || kind == .match ? clickID : nil
        return over("app", app, idLimit) ?? over("id", id, idLimit) ?? over("device", device, idLimit)
            ?? over("click_id", linkClickID, idLimit)
            ?? over("attribution.install_click_id", attribution?.installClickID, idLimit)
            ?? over("attribution.open_click_id", attribution?.openClickID, idLimit)
            ?? over("link path", path, Self.maxLinkPathBytes) ?? over("name", name, Self.maxNameBytes)
    }
}
