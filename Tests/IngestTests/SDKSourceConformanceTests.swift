import EventModel
import Foundation
import Testing

@testable import Ingest

// The requests the Detour SDKs really send, derived from their source code (read 2026-11-30, through the
// code index) rather than from docs/wire-format.md: for each SDK family and version, the URL, the headers
// its HTTP client puts on the wire and the body as its JSON serialiser writes it (member order, escapes,
// number and timestamp forms). Each case names the repository, path and commit it was read from.
// Findings and the doc's corrections: docs/ingest.md, "What the SDK sources send".
//
// Header values the SDK does not set itself are what its HTTP client adds (URLSession: Accept,
// Accept-Language, Accept-Encoding, User-Agent; OkHttp: Accept-Encoding gzip, Connection, User-Agent, and
// the body's media type, which replaces the Content-Type the SDK set; HttpURLConnection likewise). Keys,
// device ids, versions in X-SDK and data values are examples of the shape the source produces.
extension WireFormatTests {
    /// What one stored envelope must hold.
    struct Stored: Sendable {
        var kind: EventKind = .event
        var name: String
        var platform: Platform
        var device: String
        var sdk: String?
        /// The client timestamp as the envelope writes it (UTC, milliseconds).
        var clientTimestamp: String
        var attribution: Attribution?
        var clickID: String?
        /// `data` as stored: the raw bytes of the request body.
        var data: String?
        /// `metadata` as stored: the raw bytes of the request body.
        var metadata: String?

        func matches(_ envelope: Envelope) -> Bool {
            envelope.kind == kind && envelope.name == name && envelope.platform == platform
                && envelope.device == device && envelope.sdk == sdk
                && envelope.clientTimestamp?.iso8601 == clientTimestamp && envelope.time.iso8601 == clientTimestamp
                && envelope.clock == .ok && envelope.attribution == attribution && envelope.clickID == clickID
                && envelope.data == data.map { Array($0.utf8) } && envelope.metadata == metadata.map { Array($0.utf8) }
        }
    }

    static let eventPath = "/api/analytics/event"
    static let retentionPath = "/api/analytics/retention"
    static let conversionPath = "/api/analytics/conversion"
    static let rnDevice = "5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69"
    static let iosDevice = "0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a"
    static let androidDevice = "9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d"

    /// URLSession (iOS SDK, and React Native's fetch on iOS): the SDK's headers plus the session's own.
    static func urlSession(_ sdk: [(String, String)] = []) -> [(String, String)] {
        [("Content-Type", "application/json")] + auth + sdk + [
            ("Accept", "*/*"), ("Accept-Language", "en-GB,en;q=0.9"), ("Accept-Encoding", "gzip, deflate, br"),
            ("User-Agent", "DetourExampleApp/1 CFNetwork/1494.0.7 Darwin/23.4.0"), ("Connection", "keep-alive"),
        ]
    }

    /// OkHttp 4 (Android SDK): `String.toRequestBody("application/json; charset=utf-8")` replaces the
    /// SDK's own `Content-Type: application/json` (BridgeInterceptor sets the body's media type).
    static func okHttp(_ sdk: [(String, String)] = []) -> [(String, String)] {
        [("Content-Type", "application/json; charset=utf-8")] + auth + sdk + [
            ("Connection", "Keep-Alive"), ("Accept-Encoding", "gzip"), ("User-Agent", "okhttp/4.12.0"),
        ]
    }

    /// HttpURLConnection on Android (the Flutter plugin before 1.0.0): `setRequestProperty` values as set.
    static let urlConnection: [(String, String)] =
        [("Content-Type", "application/json")] + auth + [
            ("User-Agent", "Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/AP2A.240805.005)"),
            ("Connection", "Keep-Alive"), ("Accept-Encoding", "gzip"),
        ]

    static let sourceCases: [Case] = reactNativeCases + laterReactNativeCases + iosCases + androidCases + flutterCases

    // MARK: React Native (fetch + JSON.stringify: members in source order, `undefined` members left out,
    // "/" not escaped, non-ASCII as UTF-8, numbers in JavaScript's shortest form: 1e+21, 5e-7)

    static let reactNativeCases: [Case] = [
        // software-mansion-labs/react-native-detour src/analytics/api/retention.ts
        // @ f299cbda5a452aea591f3d4497c2f572500d07b2
        // (device_id added, no X-SDK, no sdk member); devicePersistence.ts @ b791aba: a lowercase v4 UUID.
        Case(
            label: "RN f299cbd: retention on Android, device_id, no SDK marker",
            path: retentionPath,
            headers: [("Content-Type", "application/json")] + auth + [
                ("Accept-Encoding", "gzip"), ("User-Agent", "okhttp/4.9.2"),
            ],
            body: #"{"event_name":"app_open","timestamp":"2026-03-14T09:26:53.589Z","platform":"android","#
                + #""device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69"}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .android, device: rnDevice,
                clientTimestamp: "2026-03-14T09:26:53.589Z"
            ).matches),
        // react-native-detour src/analytics/api/events.ts @ 1914527f42ef939ab8a2b2909bbc2b34f86eccce:
        // body member sdk:"react-native", no X-SDK header.
        Case(
            label: "RN 1914527: event with body sdk, JSON.stringify numbers and UTF-8",
            path: eventPath,
            headers: urlSession(),
            body: #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"EUR","#
                + #""items":[{"sku":"ZÜRICH-1/b","qty":2}],"big":1e+21,"tiny":5e-7,"note":"café 😀"},"#
                + #""timestamp":"2026-03-14T09:26:53.589Z","platform":"ios","#
                + #""device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","sdk":"react-native"}"#,
            check: Stored(
                name: "purchase", platform: .ios, device: rnDevice, sdk: "react-native",
                clientTimestamp: "2026-03-14T09:26:53.589Z",
                data: #"{"revenue":29.99,"currency":"EUR","items":[{"sku":"ZÜRICH-1/b","qty":2}],"#
                    + #""big":1e+21,"tiny":5e-7,"note":"café 😀"}"#
            ).matches),
        // Same commit, logEvent(name, data) with `data: any`: a string is sent as it is.
        Case(
            label: "RN 1914527: event whose data is a string",
            path: eventPath,
            headers: urlSession(),
            body: #"{"event_name":"share","data":"header_button","timestamp":"2026-03-14T09:26:53.589Z","#
                + #""platform":"ios","device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","sdk":"react-native"}"#,
            check: Stored(
                name: "share", platform: .ios, device: rnDevice, sdk: "react-native",
                clientTimestamp: "2026-03-14T09:26:53.589Z", data: #""header_button""#
            ).matches),
        // react-native-detour src/analytics/api/retention.ts @ 1914527f42ef939ab8a2b2909bbc2b34f86eccce:
        // retention also carries sdk:"react-native" (the doc shows it on events only).
        Case(
            label: "RN 1914527: retention with body sdk",
            path: retentionPath,
            headers: urlSession(),
            body: #"{"event_name":"app_open","timestamp":"2026-03-14T09:26:53.589Z","platform":"ios","#
                + #""device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","sdk":"react-native"}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .ios, device: rnDevice, sdk: "react-native",
                clientTimestamp: "2026-03-14T09:26:53.589Z"
            ).matches),
        // react-native-detour src/analytics/api/events.ts @ aa49f6608c4a2820d862993be82105eb1a55eafe and
        // src/version.ts there: X-SDK react-native/<package.json version>; data null when the app passed null.
        Case(
            label: "RN aa49f66: X-SDK header, data null",
            path: eventPath,
            headers: urlSession([("X-SDK", "react-native/1.1.0")]),
            body: #"{"event_name":"login","data":null,"timestamp":"2026-04-02T15:51:10.000Z","platform":"ios","#
                + #""device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69"}"#,
            check: Stored(
                name: "login", platform: .ios, device: rnDevice, sdk: "react-native/1.1.0",
                clientTimestamp: "2026-04-02T15:51:10.000Z"
            ).matches),
    ]

    // MARK: Later React Native sources (read 2026-12-02). The code index holds src/analytics/api/events.ts and
    // retention.ts of a later react-native-detour (double-quoted, expo-crypto device ids, expo-localization)
    // without naming their repository or commit (index file ids 66003233087, 66168906883, 65810251347,
    // 65886358333). First the identity and app fields at the top level of the body (stored in `metadata`
    // since 2026-12-02), then moved into a `metadata` object built by toMetadataFields (JSON.stringify drops
    // the undefined ones). The same
    // sources post conversions to POST /api/analytics/conversion (served since 2026-12-02, stored as
    // actions with the purchase fields in `data`): docs/ingest.md, "What the SDK sources send".

    static let laterReactNativeCases: [Case] = [
        Case(
            label: "RN later: identity and app fields at the top level are stored in metadata",
            path: eventPath,
            headers: urlSession([("X-SDK", "react-native/1.3.0")]),
            body: #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"#
                + #""timestamp":"2026-09-01T12:00:00.000Z","platform":"ios","#
                + #""device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","idfv":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","#
                + #""customer_user_id":"u-42","app_version":"2.4.0","build_number":"118","#
                + #""consent":{"analytics":true,"advertising":false},"os_version":"17.5","#
                + #""locale":[{"languageTag":"pl-PL"},{"languageTag":"en-US"}]}"#,
            check: Stored(
                name: "purchase", platform: .ios, device: rnDevice, sdk: "react-native/1.3.0",
                clientTimestamp: "2026-09-01T12:00:00.000Z", data: #"{"revenue":29.99,"currency":"USD"}"#,
                metadata:
                    #"{"idfv":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","customer_user_id":"u-42","app_version":"2.4.0","#
                    + #""build_number":"118","consent":{"analytics":true,"advertising":false},"os_version":"17.5","#
                    + #""locale":[{"languageTag":"pl-PL"},{"languageTag":"en-US"}]}"#
            ).matches),
        Case(
            label: "RN later: event with a metadata object (consent, locale list) stored byte for byte",
            path: eventPath,
            headers: urlSession([("X-SDK", "react-native/1.4.0")]),
            body: #"{"event_name":"view_item","data":{"item_id":"sku/42"},"timestamp":"2026-09-01T12:00:00.000Z","#
                + #""platform":"android","device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","#
                + #""metadata":{"aaid":"38400000-8cf0-11bd-b23e-10b96e40000d","app_version":"2.4.0","#
                + #""build_number":"118","consent":{"analytics":true,"advertising":true},"os_version":"14","#
                + #""locale":[{"languageTag":"de-DE"}],"session_id":"7c0e5d9a-2f4b-4e1a-9d3c-8b7a6f5e4d3c"}}"#,
            check: Stored(
                name: "view_item", platform: .android, device: rnDevice, sdk: "react-native/1.4.0",
                clientTimestamp: "2026-09-01T12:00:00.000Z", data: #"{"item_id":"sku/42"}"#,
                metadata: #"{"aaid":"38400000-8cf0-11bd-b23e-10b96e40000d","app_version":"2.4.0","#
                    + #""build_number":"118","consent":{"analytics":true,"advertising":true},"os_version":"14","#
                    + #""locale":[{"languageTag":"de-DE"}],"session_id":"7c0e5d9a-2f4b-4e1a-9d3c-8b7a6f5e4d3c"}"#
            ).matches),
        Case(
            label: "RN later: retention with an empty metadata object (every member undefined)",
            path: retentionPath,
            headers: urlSession([("X-SDK", "react-native/1.4.0")]),
            body: #"{"event_name":"app_open","timestamp":"2026-09-01T12:00:00.000Z","platform":"ios","#
                + #""device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","metadata":{}}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .ios, device: rnDevice, sdk: "react-native/1.4.0",
                clientTimestamp: "2026-09-01T12:00:00.000Z", metadata: "{}"
            ).matches),
        // sendConversion: the purchase fields at the top level (JSON.stringify drops undefined
        // product_id / quantity / transaction_id), metadata from toMetadataFields.
        Case(
            label: "RN later: conversion with its purchase fields stored in data",
            path: conversionPath,
            headers: urlSession([("X-SDK", "react-native/1.5.0")]),
            body: #"{"event_name":"purchase","revenue":29.99,"currency":"USD","product_id":"pro_monthly","#
                + #""quantity":1,"transaction_id":"2000000512345678","timestamp":"2026-09-01T12:00:00.000Z","#
                + #""platform":"ios","device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","#
                + #""metadata":{"app_version":"2.4.0","session_id":"7c0e5d9a"}}"#,
            check: Stored(
                name: "purchase", platform: .ios, device: rnDevice, sdk: "react-native/1.5.0",
                clientTimestamp: "2026-09-01T12:00:00.000Z",
                data: #"{"revenue":29.99,"currency":"USD","product_id":"pro_monthly","quantity":1,"#
                    + #""transaction_id":"2000000512345678"}"#,
                metadata: #"{"app_version":"2.4.0","session_id":"7c0e5d9a"}"#
            ).matches),
        Case(
            label: "RN later: conversion of a refund with only revenue and currency",
            path: conversionPath,
            headers: urlSession([("X-SDK", "react-native/1.5.0")]),
            body: #"{"event_name":"refund","revenue":4.5,"currency":"EUR","timestamp":"2026-09-01T12:00:00.000Z","#
                + #""platform":"android","device_id":"5b0c4a1e-7d2f-4c3b-9e8a-1f2d3c4b5a69","metadata":{}}"#,
            check: Stored(
                name: "refund", platform: .android, device: rnDevice, sdk: "react-native/1.5.0",
                clientTimestamp: "2026-09-01T12:00:00.000Z", data: #"{"revenue":4.5,"currency":"EUR"}"#, metadata: "{}"
            ).matches),
    ]

    // MARK: iOS (URLSession + JSONSerialization without .sortedKeys: members in dictionary order, which
    // differs from the source order; "/" escaped as "\/"; ISO8601DateFormatter with fractional seconds)

    static let iosCases: [Case] = [
        // software-mansion-labs/ios-detour Sources/DetourIOS/AnalyticsNetwork.swift
        // @ 38a558ffc95d417079776055097e896b132d7a44 (no X-SDK); device id UUID().uuidString.lowercased()
        // (Sources/Detour/AnalyticsDevicePersistence.swift @ 58a25558d7d50deb3c2812b88dc9139bb0e08032).
        Case(
            label: "iOS 38a558f: no X-SDK, dictionary member order, Int, Double and Bool data",
            path: eventPath,
            headers: urlSession(),
            body: #"{"platform":"ios","data":{"value":9.5,"currency":"USD","items":2,"gift":true},"#
                + #""device_id":"0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a","event_name":"begin_checkout","#
                + #""timestamp":"2026-05-10T18:45:02.007Z"}"#,
            check: Stored(
                name: "begin_checkout", platform: .ios, device: iosDevice, clientTimestamp: "2026-05-10T18:45:02.007Z",
                data: #"{"value":9.5,"currency":"USD","items":2,"gift":true}"#
            ).matches),
        Case(
            label: "iOS 38a558f: retention app_open",
            path: retentionPath,
            headers: urlSession(),
            body: #"{"device_id":"0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a","timestamp":"2026-05-10T18:45:02.007Z","#
                + #""event_name":"app_open","platform":"ios"}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .ios, device: iosDevice,
                clientTimestamp: "2026-05-10T18:45:02.007Z"
            ).matches),
        // ios-detour Sources/Detour/DetourConstants.swift @ e0a2c88e8a1465050a6bc5ef3dc98fd8af121702:
        // sdkHeaderField = "X-Detour-SDK" (not X-SDK), used by AnalyticsNetwork.swift at the same commit.
        Case(
            label: "iOS e0a2c88: the SDK marker in X-Detour-SDK",
            path: eventPath,
            headers: urlSession([("X-Detour-SDK", "ios/1.0.2")]),
            body: #"{"event_name":"article_read","device_id":"0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a","#
                + #""data":{"path":"\/articles\/2"},"platform":"ios","timestamp":"2026-05-10T18:45:02.007Z"}"#,
            check: Stored(
                name: "article_read", platform: .ios, device: iosDevice, sdk: "ios/1.0.2",
                clientTimestamp: "2026-05-10T18:45:02.007Z", data: #"{"path":"\/articles\/2"}"#
            ).matches),
        // Same commit, Sources/Detour/DetourSDKVersion.swift: "unknown" when no bundle has the version file.
        Case(
            label: "iOS e0a2c88: X-Detour-SDK ios/unknown on a retention",
            path: retentionPath,
            headers: urlSession([("X-Detour-SDK", "ios/unknown")]),
            body: #"{"timestamp":"2026-05-10T18:45:02.007Z","platform":"ios","event_name":"app_open","#
                + #""device_id":"0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a"}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .ios, device: iosDevice, sdk: "ios/unknown",
                clientTimestamp: "2026-05-10T18:45:02.007Z"
            ).matches),
        // ios-detour Sources/Detour/AnalyticsNetwork.swift and LinkAttribution.swift
        // @ 7690fcd0c715f7c7586467e52698d01f3400279c:
        // X-SDK, and attribution on every event with NSNull members written as null.
        Case(
            label: "iOS 7690fcd: X-SDK and attribution with explicit nulls",
            path: eventPath,
            headers: urlSession([("X-SDK", "ios/1.1.0")]),
            body: #"{"attribution":{"open_click_id":null,"open_type":"organic","install_click_id":null},"#
                + #""timestamp":"2026-07-20T08:00:00.000Z","event_name":"view_item","#
                + #""device_id":"0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a","platform":"ios","data":{"item_id":"sku\/42"}}"#,
            check: Stored(
                name: "view_item", platform: .ios, device: iosDevice, sdk: "ios/1.1.0",
                clientTimestamp: "2026-07-20T08:00:00.000Z",
                attribution: Attribution(installClickID: nil, openClickID: nil, openType: "organic"),
                data: #"{"item_id":"sku\/42"}"#
            ).matches),
        Case(
            label: "iOS 7690fcd: a deferred install's attribution",
            path: eventPath,
            headers: urlSession([("X-SDK", "ios/1.1.0")]),
            body: #"{"platform":"ios","event_name":"sign_up","timestamp":"2026-07-20T08:00:00.000Z","#
                + #""attribution":{"install_click_id":"c_8f3a","open_type":"deferred","open_click_id":"c_8f3a"},"#
                + #""device_id":"0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a"}"#,
            check: Stored(
                name: "sign_up", platform: .ios, device: iosDevice, sdk: "ios/1.1.0",
                clientTimestamp: "2026-07-20T08:00:00.000Z",
                attribution: Attribution(installClickID: "c_8f3a", openClickID: "c_8f3a", openType: "deferred")
            ).matches),
    ]

    // MARK: Android (OkHttp + Gson: LinkedHashMap order event_name, data, timestamp, platform, device_id;
    // null members dropped; HTML-safe escapes \u003d \u0026 \u003c \u003e \u0027; doubles as Double.toString:
    // 1.0, 1.0E21; SimpleDateFormat "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'" in UTC; UUID.randomUUID() lowercase)

    static let androidCases: [Case] = [
        // software-mansion-labs/android-detour detour-sdk/src/main/java/com/detour/sdk/api/AnalyticsApiClient.kt
        // @ 3eceb21860921d10bbdb1a78b7efe0231a21d7a7 (HttpClient.kt, DeviceIdProvider.kt there): no X-SDK.
        Case(
            label: "Android 3eceb21: Gson escapes and doubles, charset from OkHttp, no X-SDK",
            path: eventPath,
            headers: okHttp(),
            body: #"{"event_name":"search","data":{"query":"shoes \u0026 socks \u003cnew\u003e","#
                + #""filter":"size\u003d42","who":"Tom\u0027s","price":1.0,"huge":1.0E21,"small":1.0E-5},"#
                + #""timestamp":"2026-02-01T07:00:00.250Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d"}"#,
            check: Stored(
                name: "search", platform: .android, device: androidDevice, clientTimestamp: "2026-02-01T07:00:00.250Z",
                data: #"{"query":"shoes \u0026 socks \u003cnew\u003e","filter":"size\u003d42","who":"Tom\u0027s","#
                    + #""price":1.0,"huge":1.0E21,"small":1.0E-5}"#
            ).matches),
        // android-detour detour-sdk/src/main/java/com/swmansion/detour/api/AnalyticsApiClient.kt
        // @ 483baee98f5f409293906775f898cf5096c22422: a query string on both URLs (a Vercel bypass token; the
        // value here is a stand-in), data null dropped by Gson.
        Case(
            label: "Android 483baee: query string on the event URL, null data dropped",
            path: eventPath + "?x-vercel-protection-bypass=0123456789abcdefTOKEN",
            headers: okHttp(),
            body: #"{"event_name":"tutorial_begin","timestamp":"2026-02-01T07:00:00.250Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d"}"#,
            check: Stored(
                name: "tutorial_begin", platform: .android, device: androidDevice,
                clientTimestamp: "2026-02-01T07:00:00.250Z"
            ).matches),
        Case(
            label: "Android 483baee: query string on the retention URL",
            path: retentionPath + "?x-vercel-protection-bypass=0123456789abcdefTOKEN",
            headers: okHttp(),
            body: #"{"event_name":"app_open","timestamp":"2026-02-01T07:00:00.250Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d"}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .android, device: androidDevice,
                clientTimestamp: "2026-02-01T07:00:00.250Z"
            ).matches),
        // android-detour .../swmansion/detour/api/AnalyticsApiClient.kt @ 94b41cf505ef3ea28e3ae2de7b557d87029f65f3:
        // X-SDK BuildConfig.SDK_HEADER_VALUE = "android/$version" (detour-sdk/build.gradle.kts @ c70aa18: 1.0.1);
        // `data: Any?` may be a list.
        Case(
            label: "Android 94b41cf: X-SDK android/1.0.1, data a list",
            path: eventPath,
            headers: okHttp([("X-SDK", "android/1.0.1")]),
            body: #"{"event_name":"invite","data":["a@example.com","b@example.com"],"#
                + #""timestamp":"2026-02-01T07:00:00.250Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d"}"#,
            check: Stored(
                name: "invite", platform: .android, device: androidDevice, sdk: "android/1.0.1",
                clientTimestamp: "2026-02-01T07:00:00.250Z", data: #"["a@example.com","b@example.com"]"#
            ).matches),
        // android-detour .../swmansion/detour/api/AnalyticsApiClient.kt @ 5d5d36b9c0380d7f2af8c7c964c52cdadb3e0ea3:
        // the session's click id as a top-level click_id, last; X-SDK from FlutterSdkHeaderResolver.
        Case(
            label: "Android 5d5d36b: top-level click_id last",
            path: eventPath,
            headers: okHttp([("X-SDK", "android/1.0.1")]),
            body: #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"PLN"},"#
                + #""timestamp":"2026-02-01T07:00:00.250Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d","click_id":"VnAqasAabE-7f3c"}"#,
            check: Stored(
                name: "purchase", platform: .android, device: androidDevice, sdk: "android/1.0.1",
                clientTimestamp: "2026-02-01T07:00:00.250Z", clickID: "VnAqasAabE-7f3c",
                data: #"{"revenue":29.99,"currency":"PLN"}"#
            ).matches),
        // android-detour .../swmansion/detour/analytics/LinkAttribution.kt @ 6ec514100dcc74d995818832cc9ae90c57b64559:
        // payload() is a Map<String, String?> serialised by Gson, so null ids are dropped. (The client file at
        // that commit is not in the index; the member's place is assumed after device_id.)
        Case(
            label: "Android 6ec5141: attribution of a verified open, null install id dropped",
            path: eventPath,
            headers: okHttp([("X-SDK", "android/1.1.0")]),
            body: #"{"event_name":"add_to_cart","data":{"sku":"abc"},"timestamp":"2026-07-20T08:00:00.000Z","#
                + #""platform":"android","device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d","#
                + #""attribution":{"open_click_id":"c_91","open_type":"verified"}}"#,
            check: Stored(
                name: "add_to_cart", platform: .android, device: androidDevice, sdk: "android/1.1.0",
                clientTimestamp: "2026-07-20T08:00:00.000Z",
                attribution: Attribution(installClickID: nil, openClickID: "c_91", openType: "verified"),
                data: #"{"sku":"abc"}"#
            ).matches),
    ]

    // MARK: Flutter (no HTTP from Dart: before 1.0.0 the plugin's own Kotlin/Swift code sent the requests, from
    // 1.0.0 the native SDKs do, and from 1.1.1 with X-SDK flutter/<plugin version>)

    static let flutterCases: [Case] = [
        // software-mansion-labs/detour-flutter-plugin android/src/main/kotlin/com/swmansion/detour/DetourNetwork.kt
        // @ 06a8c9438b099c28411871410bfb59f3c21f992e: HttpURLConnection, org.json (members in insertion order,
        // data last, "/" as "\/", whole doubles as integers), Instant.now().toString() (0, 3, 6 or 9 fraction
        // digits), no X-SDK; DetourStorage.kt there: a lowercase UUID.
        Case(
            label: "Flutter 06a8c94 Android: org.json, nanosecond Instant, no X-SDK",
            path: eventPath,
            headers: urlConnection,
            body: #"{"event_name":"add_to_cart","timestamp":"2026-06-01T10:20:30.123456789Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d","#
                + #""data":{"url":"https:\/\/acme.godetour.link\/H\/p\/1","#
                + #""price":19.99,"qty":1,"coupon":null,"tags":["new","sale"]}}"#,
            check: Stored(
                name: "add_to_cart", platform: .android, device: androidDevice,
                clientTimestamp: "2026-06-01T10:20:30.123Z",
                data: #"{"url":"https:\/\/acme.godetour.link\/H\/p\/1","price":19.99,"qty":1,"coupon":null,"#
                    + #""tags":["new","sale"]}"#
            ).matches),
        Case(
            label: "Flutter 06a8c94 Android: retention with a whole-second Instant",
            path: retentionPath,
            headers: urlConnection,
            body: #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d"}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .android, device: androidDevice,
                clientTimestamp: "2026-06-01T10:20:30.000Z"
            ).matches),
        // detour-flutter-plugin ios/Classes/DetourFlutterMarker.swift @ 2960c23ce1bf33de5a6cfd93ac7c6d84c8fbc63c:
        // the native iOS SDK sends sdkHeaderValue "flutter/1.1.1" as X-SDK (CHANGELOG.md 1.1.1).
        Case(
            label: "Flutter 1.1.1 on iOS: the native SDK's request with X-SDK flutter/1.1.1",
            path: eventPath,
            headers: urlSession([("X-SDK", "flutter/1.1.1")]),
            body: #"{"device_id":"0d6f1b7e-3c2a-4e9b-a1d8-7f6e5d4c3b2a","event_name":"purchase","platform":"ios","#
                + #""data":{"revenue":29.99,"currency":"USD"},"timestamp":"2026-06-01T10:20:30.123Z"}"#,
            check: Stored(
                name: "purchase", platform: .ios, device: iosDevice, sdk: "flutter/1.1.1",
                clientTimestamp: "2026-06-01T10:20:30.123Z", data: #"{"revenue":29.99,"currency":"USD"}"#
            ).matches),
        // detour-flutter-plugin android/src/main/kotlin/com/swmansion/detour/DetourFlutterMarker.kt
        // @ 17256b19323bb5f05bd6c884d63283b163df28c2, read by android-detour FlutterSdkHeaderResolver.kt @ 6345f16.
        Case(
            label: "Flutter 1.1.1 on Android: the native SDK's request with X-SDK flutter/1.1.1",
            path: retentionPath,
            headers: okHttp([("X-SDK", "flutter/1.1.1")]),
            body: #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","#
                + #""device_id":"9b2e6d4c-1a3f-4e5b-8c7d-0e1f2a3b4c5d"}"#,
            check: Stored(
                kind: .retention, name: "app_open", platform: .android, device: androidDevice, sdk: "flutter/1.1.1",
                clientTimestamp: "2026-06-01T10:20:30.123Z"
            ).matches),
    ]

    @Test("a request as an SDK's source code writes it is accepted and stored with its fields", arguments: sourceCases)
    func sdkSource(_ testCase: Case) throws {
        try Self.expectStored(testCase)
    }

    /// software-mansion-labs/react-native-detour src/analytics/api/events.ts
    /// @ 9941585b3d2c0ab93dac0e3132111e82d3a13408 (called from src/DetourContext.tsx
    /// @ c8fbfaa5d065975c314e93e48dedb021c4143cbf): the first analytics events sent no device_id at all.
    /// Every report counts devices (sql/001_core.sql: `device_id text NOT NULL`), so such an event could
    /// be stored but never counted: it is refused (the SDK prints the 400, so the app team learns), and
    /// kept whole in the dead-letter log for a replay should a device ever be derivable (docs/ingest.md,
    /// "What the SDK sources send").
    @Test("an event of the first React Native analytics, without device_id, is refused and dead-lettered whole")
    func reactNativeWithoutDevice() throws {
        let server = try TestServer(useLog: true)
        let body =
            #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"#
            + #""timestamp":"2025-11-03T12:00:00.000Z","platform":"ios"}"#
        let response = try server.client().request(
            "POST", Self.eventPath, headers: Self.urlSession(), body: Array(body.utf8))
        #expect(response.status == 400, "\(response.text)")
        let rejected = response.json["rejected"] as? [[String: Any]] ?? []
        #expect(rejected.first?["code"] as? String == "missing_field")
        #expect(try server.storedLines().isEmpty)
        let deadLetters = try server.deadLetterLines()
        try #require(deadLetters.count == 1)
        let record = try JSONSerialization.jsonObject(with: Data(deadLetters[0].utf8)) as? [String: Any]
        let raw = record?["raw"] as? [String: Any]
        #expect(raw?["event_name"] as? String == "purchase" && raw?["platform"] as? String == "ios")
        #expect(record?["route"] as? String == "event" && record?["code"] as? String == "missing_field")
    }
}
