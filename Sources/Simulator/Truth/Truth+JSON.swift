/// The truth file: one JSON document, keys in a fixed order and maps sorted, so the same world
/// always yields the same bytes. Field meanings are in docs/simulator.md.
extension Truth {
    /// The truth file's bytes (UTF-8 JSON, no trailing newline).
    package func encoded() -> [UInt8] {
        var json = JSONBuffer(capacity: 1 << 20)
        json.beginObject()
        json.field("format", 1)
        json.field("app_id", appID)
        json.field("time_zone", "UTC")
        json.field("first_day", SimulatedTime.dayString(firstDay))
        json.field("last_day", SimulatedTime.dayString(lastDay))
        json.field("as_of", SimulatedTime.iso8601(asOf))
        json.key("settings")
        json.beginObject()
        json.field("install_lookback_seconds", 604_800)
        json.field("reengagement_inactivity_seconds", 604_800)
        json.field("conversion_window_seconds", 604_800)
        json.endObject()
        writeTotals(&json)
        writeLinkDays(&json)
        writeAttribution(&json)
        writeFunnels(&json)
        writeRetention(&json)
        writeDevices(&json)
        writeRejected(&json)
        json.endObject()
        return json.bytes
    }

    private func writeTotals(_ json: inout JSONBuffer) {
        json.key("totals")
        json.beginObject()
        json.field("clicks", totals.clicks)
        json.field("universal_link_opens", totals.universalLinkOpens)
        json.field("matched_installs", totals.matches)
        json.field("devices", totals.devices)
        json.field("attributed_installs", totals.attributedInstalls)
        json.field("organic_installs", totals.organicInstalls)
        json.field("unattributable_devices", totals.unattributableDevices)
        json.field("actions", totals.actions)
        json.field("retention_events", totals.retentionEvents)
        json.field("rejected_events", totals.rejectedEvents)
        json.endObject()
    }

    private func writeCounts(_ counts: DayCounts, _ json: inout JSONBuffer, full: Bool = true) {
        json.beginObject()
        json.field("clicks", counts.clicks)
        json.field("universal_link_opens", counts.universalLinkOpens)
        json.field("matched_installs", counts.matchedInstalls)
        json.field("attributed_installs", counts.attributedInstalls)
        json.key("install_rate")
        if counts.clicks > 0 { json.number(ratio(counts.matchedInstalls, counts.clicks)) } else { json.null() }
        if full {
            json.field("reengagements", counts.reengagements)
            json.key("events")
            writeMap(counts.events, &json)
            json.key("retention_events")
            writeMap(counts.retentionEvents, &json)
            json.key("revenue")
            writeRevenue(counts.revenue, &json)
        }
        json.endObject()
    }

    private func writeLinkDays(_ json: inout JSONBuffer) {
        json.key("link_daily")
        json.beginArray()
        for row in linkDays {
            json.beginObject()
            json.field("link", row.link)
            json.field("day", SimulatedTime.dayString(row.day))
            json.key("total")
            writeCounts(row.total, &json)
            json.key("by_platform")
            json.beginObject()
            for platform in ["android", "ios"] {
                json.key(platform)
                writeCounts(row.byPlatform[platform] ?? DayCounts(), &json)
            }
            json.endObject()
            json.key("by_utm")
            json.beginArray()
            for (variant, counts) in row.byVariant.sorted(by: { $0.key.query < $1.key.query }) {
                json.beginObject()
                json.field("utm_source", variant.source)
                json.field("utm_medium", variant.medium)
                json.field("utm_campaign", variant.campaign)
                json.key("counts")
                writeCounts(counts, &json, full: false)
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
    }

    private func writeAttribution(_ json: inout JSONBuffer) {
        json.key("attribution")
        json.beginObject()
        json.field("organic_installs", totals.organicInstalls)
        json.field("unattributable_devices", totals.unattributableDevices)
        json.key("organic_installs_by_day")
        writeDayMap(organicByDay, &json)
        json.key("unattributable_devices_by_day")
        writeDayMap(unattributableByDay, &json)
        json.key("links")
        json.beginArray()
        for report in attribution {
            json.beginObject()
            json.field("link", report.link)
            json.field("matched_installs", report.matchedInstalls)
            json.field("attributed_installs", report.attributedInstalls)
            for (name, values) in [("by_install_date", report.byInstallDay), ("by_event_date", report.byEventDay)] {
                json.key(name)
                json.beginArray()
                for (day, value) in values.sorted(by: { $0.key < $1.key }) {
                    json.beginObject()
                    json.field("day", SimulatedTime.dayString(day))
                    if name == "by_install_date" { json.field("installs", value.installs) }
                    json.field("actions", value.actions)
                    json.key("events")
                    writeMap(value.events, &json)
                    json.key("revenue")
                    writeRevenue(value.revenue, &json)
                    json.endObject()
                }
                json.endArray()
            }
            json.key("last_touch_opens")
            writeDayMap(report.lastTouchOpens, &json)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    private func writeMap(_ map: [String: Int], _ json: inout JSONBuffer) {
        json.beginObject()
        for (name, count) in map.sorted(by: { $0.key < $1.key }) { json.field(name, count) }
        json.endObject()
    }

    private func writeDayMap(_ map: [Int64: Int], _ json: inout JSONBuffer) {
        json.beginObject()
        for (day, count) in map.sorted(by: { $0.key < $1.key }) { json.field(SimulatedTime.dayString(day), count) }
        json.endObject()
    }

    /// `{"EUR":{"cents":-899,"amount":"-8.99"}}`: exact minor units and the decimal string.
    private func writeRevenue(_ map: [String: Int64], _ json: inout JSONBuffer) {
        json.beginObject()
        for (currency, cents) in map.sorted(by: { $0.key < $1.key }) {
            json.key(currency)
            json.beginObject()
            json.field("cents", cents)
            json.field("amount", decimalLiteral(cents: cents))
            json.endObject()
        }
        json.endObject()
    }
}

/// `a / b` as a JSON number with Swift's shortest round-trip formatting.
func ratio(_ a: Int, _ b: Int) -> String { "\(Double(a) / Double(b))" }

/// An exact decimal literal for `numerator / denominator` where the denominator's only prime
/// factors are 2 and 5 (so the expansion terminates): 3000/2000 → `1.5`.
func exactDecimal(_ numerator: Int64, _ denominator: Int64) -> String {
    let sign = numerator < 0 ? "-" : ""
    var rest = numerator.magnitude % denominator.magnitude
    var text = sign + String(numerator.magnitude / denominator.magnitude)
    if rest == 0 { return text }
    text += "."
    var digits = 0
    while rest != 0 && digits < 20 {
        rest *= 10
        text += String(rest / denominator.magnitude)
        rest %= denominator.magnitude
        digits += 1
    }
    return text
}
