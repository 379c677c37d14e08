/// JSON bodies: SDK events as each SDK family writes them, invalid events, link-service posts.
extension RequestEncoder {
    func writeEvent(_ event: Event, type: Bool, upper: Bool, _ json: inout JSONBuffer) {
        let device = world.devices[Int(event.device)]
        json.beginObject()
        if type { json.field("type", event.kind.rawValue) }
        json.field("event_name", event.name)
        writeData(event.data, &json)
        json.field("timestamp", SimulatedTime.iso8601(event.time + device.clockSkew))
        json.field("platform", device.platform)
        json.field("device_id", upper ? device.id.uppercased() : device.id)
        if let attribution = event.attribution {
            let dropNulls = device.platform == "android"  // Android drops null members
            json.key("attribution")
            json.beginObject()
            for (name, click) in [
                ("install_click_id", attribution.installClick), ("open_click_id", attribution.openClick),
            ] {
                if let click { json.field(name, world.clicks[Int(click)].id) } else if !dropNulls { json.null(name) }
            }
            json.field("open_type", attribution.openType)
            json.endObject()
        }
        if device.sdk == .legacy && event.device % 3 == 0 { json.field("sdk", "react-native") }
        json.endObject()
    }

    private func writeData(_ data: EventData, _ json: inout JSONBuffer) {
        switch data {
        case .none: return
        case .revenue(let cents, let currency, let key):
            json.key("data")
            json.beginObject()
            json.key(key)
            json.number(decimalLiteral(cents: cents))
            json.field("currency", currency)
            json.endObject()
        case .sku(let sku):
            json.key("data")
            json.beginObject()
            json.field("sku", sku)
            json.endObject()
        case .query(let query):
            json.key("data")
            json.beginObject()
            json.field("query", query)
            json.endObject()
        case .url(let click):
            json.key("data")
            json.beginObject()
            json.field("url", world.url(of: world.clicks[Int(click)]))
            json.endObject()
        }
    }

    func writeInvalid(_ invalid: InvalidEvent, type: Bool, _ json: inout JSONBuffer) {
        let device = world.devices[Int(invalid.device)]
        json.beginObject()
        if type { json.field("type", "event") }
        if invalid.defect != .missingEventName { json.field("event_name", "view_item") }
        json.field(
            "timestamp", invalid.defect == .badTimestamp ? "yesterday at noon" : SimulatedTime.iso8601(invalid.time))
        json.field("platform", invalid.defect == .badPlatform ? "windows" : device.platform)
        if invalid.defect != .missingDeviceID { json.field("device_id", device.id) }
        json.endObject()
    }

    func linkBody(clicks: [Int32], matches: [Int32], batchForm: Bool) -> [UInt8] {
        var json = JSONBuffer(capacity: 200 * (clicks.count + matches.count) + 32)
        json.beginObject()
        if batchForm {
            json.key("batch")
            json.beginArray()
            for index in clicks { writeClick(world.clicks[Int(index)], type: true, &json) }
            for index in matches { writeMatch(world.matches[Int(index)], type: true, &json) }
            json.endArray()
        } else {
            json.key("clicks")
            json.beginArray()
            for index in clicks { writeClick(world.clicks[Int(index)], type: false, &json) }
            json.endArray()
            json.key("matches")
            json.beginArray()
            for index in matches { writeMatch(world.matches[Int(index)], type: false, &json) }
            json.endArray()
        }
        json.endObject()
        return json.bytes
    }

    private func writeClick(_ click: Click, type: Bool, _ json: inout JSONBuffer) {
        json.beginObject()
        if type { json.field("type", "click") }
        json.field("click_id", click.id)
        json.field("url", world.url(of: click))
        json.field("timestamp", SimulatedTime.iso8601(click.time))
        json.field("platform", click.platform)
        json.field("kind", click.kind.rawValue)
        if let agent = click.userAgent { json.field("user_agent", agent) }
        if let ip = click.ip { json.field("ip", ip) }
        if let referrer = click.referrer { json.field("referrer", referrer) }
        json.endObject()
    }

    private func writeMatch(_ match: Match, type: Bool, _ json: inout JSONBuffer) {
        json.beginObject()
        if type { json.field("type", "match") }
        json.field("click_id", world.clicks[Int(match.click)].id)
        json.field("timestamp", SimulatedTime.iso8601(match.time))
        json.field("method", match.method)
        if let score = match.score { json.field("score", score) }
        json.endObject()
    }
}
