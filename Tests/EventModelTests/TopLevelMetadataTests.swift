import Testing

@testable import EventModel

/// Identity and app members sent at the top level of an SDK event are stored in `metadata`
/// (EventNormalizer+TopLevelMetadata.swift).
@Suite struct TopLevelMetadataTests {
    static let received: Timestamp = Timestamp(iso8601: "2026-09-01T12:00:01.000Z")!
    static let context = RequestContext(appID: "app_1", sdkHeader: "react-native/1.3.0", receivedAt: received)
    static let head =
        #""event_name":"purchase","timestamp":"2026-09-01T12:00:00.000Z","platform":"ios","device_id":"D1""#

    func stored(_ members: String, batch: Bool = false) throws -> (metadata: String?, outcome: EncodedRequest) {
        let body = "{\(Self.head),\(members)}"
        let outcome =
            batch
            ? try Normalizer.encodedBatch(body: Array(#"{"batch":[\#(body)]}"#.utf8), context: Self.context)
            : try Normalizer.encodedSingle(body: Array(body.utf8), kind: .event, context: Self.context)
        guard outcome.records.count == 1 else { return (nil, outcome) }
        let envelope = try Envelope(decoding: outcome.records[0])
        return (envelope.metadata.map { String(decoding: $0, as: UTF8.self) }, outcome)
    }

    @Test("the intermediate React Native body: its top-level members stored in metadata, in body order, as sent")
    func reactNativeBody() throws {
        let (metadata, outcome) = try stored(
            #""idfv":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","customer_user_id":"u-42","app_version":"2.4.0","#
                + #""build_number":"118","consent":{"analytics":true,"advertising":false},"os_version":"17.5","#
                + #""locale":[{"languageTag":"pl-PL"},{"languageTag":"en-US"}],"data":{"revenue":29.99}"#)
        #expect(outcome.rejected.isEmpty && outcome.warnings.isEmpty)
        #expect(
            metadata
                == #"{"idfv":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","customer_user_id":"u-42","app_version":"2.4.0","#
                + #""build_number":"118","consent":{"analytics":true,"advertising":false},"os_version":"17.5","#
                + #""locale":[{"languageTag":"pl-PL"},{"languageTag":"en-US"}]}"#)
    }

    @Test(
        "merged with a metadata object: top-level members first, the object's after, its value kept for a name in both",
        arguments: [
            (#""session_id":"s1","metadata":{"att_status":3}"#, #"{"session_id":"s1","att_status":3}"#, false),
            (
                #""metadata":{"app_version":"new","k":[1]},"app_version":"old","idfa":null"#,
                #"{"idfa":null,"app_version":"new","k":[1]}"#, true
            ),
            (#""app_version":"2","metadata":null"#, #"{"app_version":"2"}"#, false),
            (#""app_version":"2","metadata":{}"#, #"{"app_version":"2"}"#, false),
            (#""app_v\u0065rsion":"2","metadata":{"app_versio\u006e":"3"}"#, #"{"app_versio\u006e":"3"}"#, true),
        ])
    func merge(members: String, expected: String, warned: Bool) throws {
        for batch in [false, true] {
            let (metadata, outcome) = try stored(members, batch: batch)
            #expect(outcome.rejected.isEmpty)
            #expect(metadata == expected)
            #expect(outcome.warnings.contains { $0.contains("also in \"metadata\"") } == warned)
        }
    }

    @Test("a metadata that is not an object is stored as it is; the top-level members are not, with a warning")
    func metadataNotAnObject() throws {
        let (metadata, outcome) = try stored(#""app_version":"2","metadata":"m""#)
        #expect(metadata == #""m""#)
        #expect(outcome.warnings == [#"event 0: "app_version" not stored: "metadata" is not an object"#])
    }

    @Test("events without those members keep their metadata byte for byte, and pay nothing")
    func untouched() throws {
        let (metadata, outcome) = try stored(#""metadata":{ "a" : 1 },"unknown":2"#)
        #expect(metadata == #"{ "a" : 1 }"#)
        #expect(outcome.warnings.isEmpty)
        #expect(try stored(#""other":1"#).metadata == nil)
    }

    @Test("the member sent twice at the top level is ambiguous: duplicate_key, as for the other known members")
    func twice() throws {
        let (_, outcome) = try stored(#""app_version":"1","app_version":"2""#)
        #expect(outcome.rejected.map(\.code) == ["duplicate_key"])
    }

    @Test("the hashed event id does not change: metadata is not part of it")
    func sameID() throws {
        let with = try stored(#""app_version":"2""#).outcome.records[0]
        let without = try stored(#""unknown":"2""#).outcome.records[0]
        #expect(try Envelope(decoding: with).id == Envelope(decoding: without).id)
    }
}
