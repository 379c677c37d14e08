/// Turns planned requests into bytes: routes, headers per SDK family, bodies, gzip.
///
/// `sendTime` is the wall-clock time of sending (milliseconds); it only feeds batch `sent_at`
/// (plus the device's clock skew), so the pipeline's skew correction sees the real delay.
struct RequestEncoder: Sendable {
    let world: World
    let appID: String
    let publishableKey: String
    let secretKey: String

    func encode(_ item: RequestPlan.Item, sendTime: Int64) -> SimulatedRequest {
        var request: SimulatedRequest
        switch item.content {
        case .link(let clicks, let matches, let batchForm):
            request = SimulatedRequest(
                path: "/api/link/events", headers: linkHeaders(),
                body: linkBody(clicks: clicks, matches: matches, batchForm: batchForm),
                eventCount: clicks.count + matches.count,
                expectation: .accepted)
        case .single(let index):
            let event = world.events[Int(index)]
            var json = JSONBuffer()
            writeEvent(event, type: false, upper: item.uppercaseDevice, &json)
            request = SimulatedRequest(
                path: event.kind == .event ? "/api/analytics/event" : "/api/analytics/retention",
                headers: sdkHeaders(event.device), body: json.bytes, eventCount: 1, expectation: .accepted)
        case .batch(let device, let events, let invalid, let hasSentAt):
            var json = JSONBuffer(capacity: 256 * (events.count + invalid.count))
            json.beginObject()
            if hasSentAt {
                json.field("sent_at", SimulatedTime.iso8601(sendTime + world.devices[Int(device)].clockSkew))
            }
            json.key("batch")
            json.beginArray()
            let half = events.count / 2
            for (position, index) in events.enumerated() {
                if position == half {
                    for bad in invalid { writeInvalid(world.invalidEvents[Int(bad)], type: true, &json) }
                }
                writeEvent(world.events[Int(index)], type: true, upper: item.uppercaseDevice, &json)
            }
            if events.isEmpty { for bad in invalid { writeInvalid(world.invalidEvents[Int(bad)], type: true, &json) } }
            json.endArray()
            json.endObject()
            request = SimulatedRequest(
                path: "/api/analytics/batch", headers: sdkHeaders(device), body: json.bytes,
                eventCount: events.count + invalid.count, expectation: .accepted)
        case .invalidSingle(let index):
            let invalid = world.invalidEvents[Int(index)]
            var json = JSONBuffer()
            writeInvalid(invalid, type: false, &json)
            request = SimulatedRequest(
                path: "/api/analytics/event", headers: sdkHeaders(invalid.device), body: json.bytes, eventCount: 1,
                expectation: .rejected)
        case .malformed(let device):
            request = SimulatedRequest(
                path: "/api/analytics/event", headers: sdkHeaders(device),
                body: Array(#"{"event_name":"purchase","timestamp":"#.utf8), eventCount: 0, expectation: .rejected)
        }
        if item.gzip {
            request.body = Gzip.compress(request.body)
            request.headers.append(.init(name: "Content-Encoding", value: "gzip"))
        }
        return request
    }

    private func sdkHeaders(_ device: Int32) -> [SimulatedRequest.Header] {
        let info = world.devices[Int(device)]
        var headers: [SimulatedRequest.Header] = [
            .init(
                name: "Content-Type",
                value: info.platform == "android" ? "application/json; charset=utf-8" : "application/json"),
            .init(name: "Authorization", value: "Bearer \(publishableKey)"),
            .init(name: "X-App-ID", value: appID),
        ]
        if let sdk = info.sdkHeader { headers.append(.init(name: "X-SDK", value: sdk)) }
        return headers
    }

    private func linkHeaders() -> [SimulatedRequest.Header] {
        [
            .init(name: "Content-Type", value: "application/json"),
            .init(name: "Authorization", value: "Bearer \(secretKey)"),
            .init(name: "X-App-ID", value: appID),
        ]
    }
}
