import EventModel
import Foundation
import Testing

@testable import Ingest

/// The clock rules of docs/envelope.md as the running server applies them to its own arrival time:
/// each case posts times relative to now (hours and days off, never near a threshold) and checks
/// the stored envelope against the `received_at` stored beside it.
@Suite("Clock rules on the server's own clock")
struct ClockTests {
    static let second: Int64 = 1_000_000
    static let hour: Int64 = 3600 * second

    /// `now + offset`, formatted as the SDKs send it (UTC, milliseconds).
    static func iso(_ offset: Int64) -> String {
        Timestamp(microseconds: Timestamp.now().microseconds + offset).iso8601
    }

    static func event(_ timestamp: String, name: String = "purchase") -> String {
        #"{"event_name":"\#(name)","timestamp":"\#(timestamp)","platform":"ios","#
            + #""device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
    }

    /// Posts `body` to `path`, expects 200, and returns the answer and the stored envelopes.
    static func post(
        _ path: String, _ body: String, server: TestServer? = nil
    ) throws -> (RawHTTPClient.Response, [Envelope]) {
        let server = try server ?? TestServer(useLog: true)
        let response = try server.client().request(
            "POST", path, headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 200, "\(response.text)")
        return (response, try server.storedLines().map { try Envelope(decoding: Array($0.utf8)) })
    }

    @Test("a device clock 2 hours slow: the event keeps its age before sent_at, on the server's clock")
    func skewCorrected() throws {
        let sentAt = Self.iso(-2 * Self.hour)
        let client = try #require(Timestamp(iso8601: sentAt)).microseconds - 30 * Self.second
        let timestamp = Timestamp(microseconds: client).iso8601
        let (_, stored) = try Self.post(
            "/api/analytics/batch", #"{"sent_at":"\#(sentAt)","batch":[\#(Self.event(timestamp))]}"#)
        let envelope = try #require(stored.first)
        #expect(envelope.clock == .skewCorrected)
        #expect(envelope.time.microseconds == envelope.receivedAt.microseconds - 30 * Self.second)
        #expect(envelope.clientTimestamp?.iso8601 == timestamp)
        #expect(envelope.sentAt?.iso8601 == sentAt)
    }

    @Test(
        "an unreadable send time is ignored with a warning naming the member the client sent",
        arguments: ["sent_at", "sentAt"])
    func unreadableSentAt(member: String) throws {
        let body = #"{"\#(member)":"yesterday","batch":[\#(Self.event(Self.iso(0)))]}"#
        let (response, envelopes) = try Self.post("/api/analytics/batch", body)
        // A Segment client sending `sentAt` was told that "sent_at" was unreadable.
        #expect(
            response.json["warnings"] as? [String] == [
                "\(member) is not an ISO-8601 timestamp and was ignored; no clock correction applied"
            ])
        #expect(envelopes.first?.sentAt == nil)
    }

    @Test("a batch element's own send time corrects that element alone; an unreadable one leaves the batch's")
    func elementSentAt() throws {
        let slow = Self.iso(-2 * Self.hour)
        let age = 30 * Self.second
        let before = { (sentAt: String) in
            Timestamp(microseconds: Timestamp(iso8601: sentAt)!.microseconds - age).iso8601
        }
        // Segment and RudderStack stamp every message: no batch sent_at, one per element.
        let elements = [
            Self.event(before(slow), name: "a").dropLast() + #","sent_at":"\#(slow)"}"#,
            Self.event(before(slow), name: "b").dropLast() + #","sentAt":"\#(slow)"}"#,
            Self.event(before(slow), name: "c"),
        ]
        let (response, stored) = try Self.post(
            "/api/analytics/batch", #"{"batch":[\#(elements.joined(separator: ","))]}"#)
        #expect(response.json["warnings"] as? [String] == [])
        let byName = Dictionary(uniqueKeysWithValues: stored.map { ($0.name, $0) })
        for name in ["a", "b"] {
            let envelope = try #require(byName[name])
            #expect(envelope.clock == .skewCorrected, "\(name)")
            #expect(envelope.time.microseconds == envelope.receivedAt.microseconds - age, "\(name)")
            #expect(envelope.sentAt?.iso8601 == slow, "\(name)")
        }
        // The element without one is not shifted by its neighbours' clocks.
        #expect(byName["c"]?.clock == .ok)
        #expect(byName["c"]?.time.iso8601 == before(slow))
        #expect(byName["c"]?.sentAt == nil)

        // An element's unreadable send time is ignored with a warning; the batch's applies to it.
        let unreadable = Self.event(before(slow), name: "d").dropLast() + #","sent_at":"yesterday"}"#
        let (warned, corrected) = try Self.post(
            "/api/analytics/batch", #"{"sent_at":"\#(slow)","batch":[\#(unreadable)]}"#)
        #expect(
            warned.json["warnings"] as? [String] == [
                "event 0: sent_at is not an ISO-8601 timestamp and was ignored; the batch's sent_at applies"
            ])
        let envelope = try #require(corrected.first)
        #expect(envelope.clock == .skewCorrected)
        #expect(envelope.sentAt?.iso8601 == slow)
    }

    @Test("a sent_at close to the server's clock is network delay: the client's time is kept")
    func smallSkewKept() throws {
        let timestamp = Self.iso(-1 * Self.hour)
        let (_, stored) = try Self.post(
            "/api/analytics/batch", #"{"sent_at":"\#(Self.iso(0))","batch":[\#(Self.event(timestamp))]}"#)
        let envelope = try #require(stored.first)
        #expect(envelope.clock == .ok)
        #expect(envelope.time.iso8601 == timestamp)
    }

    @Test("a time 2 days ahead is stored at received_at with a warning, the client's time kept")
    func futureClamped() throws {
        let timestamp = Self.iso(48 * Self.hour)
        let (response, stored) = try Self.post("/api/analytics/event", Self.event(timestamp))
        let envelope = try #require(stored.first)
        #expect(envelope.clock == .futureClamped)
        #expect(envelope.time == envelope.receivedAt)
        #expect(envelope.clientTimestamp?.iso8601 == timestamp)
        #expect((response.json["warnings"] as? [String])?.count == 1)
    }

    @Test("a skew-corrected time more than a day ahead is clamped too")
    func correctedThenClamped() throws {
        let sentAt = Self.iso(-2 * Self.hour)
        let client = try #require(Timestamp(iso8601: sentAt)).microseconds + 25 * Self.hour
        let body = #"{"sent_at":"\#(sentAt)","batch":[\#(Self.event(Timestamp(microseconds: client).iso8601))]}"#
        let (response, stored) = try Self.post("/api/analytics/batch", body)
        let envelope = try #require(stored.first)
        #expect(envelope.clock == .futureClamped)
        #expect(envelope.time == envelope.receivedAt)
        #expect((response.json["warnings"] as? [String])?.count == 1)
    }

    @Test("a device whose clock reset to 1970 is stored with its time, not dropped")
    func epochClock() throws {
        let (_, stored) = try Self.post("/api/analytics/event", Self.event("1970-01-01T00:00:05.000Z"))
        let envelope = try #require(stored.first)
        #expect(envelope.clock == .ok)
        #expect(envelope.time.iso8601 == "1970-01-01T00:00:05.000Z")
    }

    @Test("a batch retried with a new sent_at gets the same hashed ids")
    func retryKeepsIDs() throws {
        let server = try TestServer(useLog: true)
        let events = [Self.event("2026-06-01T10:20:30.123Z"), Self.event("2026-06-01T10:20:31.456Z", name: "share")]
        let batch = events.joined(separator: ",")
        _ = try Self.post("/api/analytics/batch", #"{"sent_at":"\#(Self.iso(0))","batch":[\#(batch)]}"#, server: server)
        let sentLater = Self.iso(3 * Self.hour)
        let (_, stored) = try Self.post(
            "/api/analytics/batch", #"{"sent_at":"\#(sentLater)","batch":[\#(batch)]}"#, server: server)
        try #require(stored.count == 4)
        #expect(stored.allSatisfy { $0.id.hasPrefix("h:") })
        #expect(stored[0].id != stored[1].id)
        #expect(stored[2].id == stored[0].id && stored[3].id == stored[1].id)
    }
}
