import EventLog
import EventModel
import Foundation

/// Realistic Detour SDK events from a fixed seed: varied action names and data, a pool of devices,
/// link attribution in the newest SDKs' form (and Android's with null members dropped), client ids,
/// metadata. About 300-500 bytes per event, as the SDKs send them.
struct BenchEventGenerator {
    private var random: SplitMix64
    private let base: Timestamp
    private var counter = 0

    /// - Parameters:
    ///   - seed: the same seed gives the same events (apart from `base`).
    ///   - base: the batch `sent_at`; client timestamps fall in the minute before it.
    init(seed: UInt64, base: Timestamp) {
        random = SplitMix64(seed: seed)
        self.base = base
    }

    static let actions = [
        "purchase", "add_to_cart", "view_item", "search", "share", "sign_up", "login", "begin_checkout",
        "opened_via_universal_link", "tutorial_complete", "add_payment_info", "remove_from_cart", "invite",
        "level_complete", "ad_impression",
    ]
    static let categories = ["shoes", "outerwear", "accessories", "kitchen", "books", "toys", "beauty"]
    static let currencies = ["USD", "EUR", "GBP", "JPY", "BRL"]
    static let paths = ["/articles/2", "/p/summer-sale", "/invite/9f2k", "/products/8812", "/app", "/r/news"]
    static let sources = ["news", "instagram", "tiktok", "email", "google", "partner"]
    static let locales = ["en_US", "de_DE", "fr_FR", "pt_BR", "ja_JP", "es_ES"]

    /// A device id of the pool of 20,000 devices; Android devices sometimes send upper case.
    mutating func device() -> (id: String, android: Bool) {
        let index = random.next() % 20_000
        var seeded = SplitMix64(seed: index &* 0x9E37_79B9 &+ 17)
        let id = BenchRandom.uuid(seeded.next(), seeded.next())
        let android = index % 3 == 0
        return (android && index % 7 == 0 ? id.uppercased() : id, android)
    }

    /// One SDK event as a JSON object; `forBatch` adds `type` and a client id.
    mutating func event(forBatch: Bool) -> String {
        counter += 1
        let (device, android) = device()
        let retention = forBatch && random.next() % 10 == 0
        let name = retention ? "app_open" : Self.actions[Int(random.next() % UInt64(Self.actions.count))]
        let time = Timestamp(microseconds: base.microseconds - Int64(random.next() % 60_000_000) / 1000 * 1000)
        var fields: [String] = []
        if forBatch {
            fields.append(#""type":"\#(retention ? "retention" : "event")""#)
            let idKey = ["event_id", "event_id", "event_id", "message_id", "insert_id"][Int(random.next() % 5)]
            fields.append(#""\#(idKey)":"\#(BenchRandom.uuid(random.next(), random.next()))""#)
        }
        fields.append(#""event_name":"\#(name)""#)
        if !retention { fields.append(#""data":\#(data(name: name))"#) }
        fields.append(#""timestamp":"\#(time.iso8601)""#)
        fields.append(#""platform":"\#(android ? "android" : "ios")""#)
        fields.append(#""device_id":"\#(device)""#)
        if !retention, random.next() % 10 < 7 { fields.append(#""attribution":\#(attribution(android: android))"#) }
        if !retention, random.next() % 10 == 0 { fields.append(#""click_id":"clk_\#(token(10))""#) }
        if random.next() % 2 == 0 {
            let version = "\(3 + random.next() % 2).\(random.next() % 10).\(random.next() % 20)"
            let os = android ? "\(12 + random.next() % 3)" : "17.\(random.next() % 6)"
            let locale = Self.locales[Int(random.next() % UInt64(Self.locales.count))]
            fields.append(#""metadata":{"app_version":"\#(version)","os_version":"\#(os)","locale":"\#(locale)"}"#)
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// The action's `data`, shaped like real apps send it.
    private mutating func data(name: String) -> String {
        let sku = "sku-\(random.next() % 5000)"
        let category = Self.categories[Int(random.next() % UInt64(Self.categories.count))]
        switch name {
        case "purchase", "begin_checkout", "add_payment_info":
            let cents = 199 + random.next() % 20_000
            let currency = Self.currencies[Int(random.next() % UInt64(Self.currencies.count))]
            return
                #"{"revenue":\#(cents / 100).\#(String(format: "%02d", Int(cents % 100))),"currency":"\#(currency)","item_id":"\#(sku)","quantity":\#(1 + random.next() % 4),"category":"\#(category)","order_id":"ord_\#(token(12))"}"#
        case "add_to_cart", "view_item", "remove_from_cart":
            return
                #"{"item_id":"\#(sku)","category":"\#(category)","price":\#(random.next() % 300).99,"source_screen":"\#(["home", "search", "feed", "detail"][Int(random.next() % 4)])"}"#
        case "search":
            return
                #"{"query":"\#(category) \#(["red", "sale", "new", "kids", "gift"][Int(random.next() % 5)])","results":\#(random.next() % 120)}"#
        case "opened_via_universal_link":
            let path = Self.paths[Int(random.next() % UInt64(Self.paths.count))]
            let source = Self.sources[Int(random.next() % UInt64(Self.sources.count))]
            return
                #"{"url":"https://acme.godetour.link/VnAqasAabE\#(path)?utm_source=\#(source)&utm_medium=social&utm_campaign=spring_\#(random.next() % 12)"}"#
        case "share", "invite":
            return
                #"{"method":"\#(["sms", "whatsapp", "copy_link", "email"][Int(random.next() % 4)])","content_id":"\#(sku)","content_type":"product"}"#
        default:
            return
                #"{"screen":"\#(["onboarding", "home", "settings", "profile"][Int(random.next() % 4)])","level":\#(random.next() % 40),"duration_ms":\#(random.next() % 90_000)}"#
        }
    }

    /// Newest SDKs' attribution; Android drops null members.
    private mutating func attribution(android: Bool) -> String {
        let install: String? = random.next() % 2 == 0 ? "clk_\(token(10))" : nil
        let open: String? = random.next() % 4 == 0 ? "clk_\(token(10))" : nil
        let type = open != nil ? ["deferred", "verified", "scheme"][Int(random.next() % 3)] : "organic"
        func member(_ key: String, _ value: String?) -> String? {
            if let value { return #""\#(key)":"\#(value)""# }
            return android ? nil : #""\#(key)":null"#
        }
        let members = [member("install_click_id", install), member("open_click_id", open), member("open_type", type)]
        return "{" + members.compactMap { $0 }.joined(separator: ",") + "}"
    }

    private mutating func token(_ length: Int) -> String {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyz")
        return String((0..<length).map { _ in alphabet[Int(random.next() % 36)] })
    }

    /// One `/api/analytics/batch` body of `size` events.
    mutating func batch(size: Int) -> String {
        let events = (0..<size).map { _ in event(forBatch: true) }
        return #"{"sent_at":"\#(base.iso8601)","batch":["# + events.joined(separator: ",") + "]}"
    }
}

/// Shaping random bits for the benchmark bodies (the bits come from EventLog's `SplitMix64`).
enum BenchRandom {
    /// A version-4-shaped UUID string from 128 random bits.
    static func uuid(_ high: UInt64, _ low: UInt64) -> String {
        let hex = String(high, radix: 16).leftPadded(16) + String(low, radix: 16).leftPadded(16)
        let h = Array(hex)
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-4" + String(h[13..<16]) + "-a" + String(h[17..<20])
            + "-" + String(h[20..<32])
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension BenchCommand {
    /// `bench bodies`: request bodies for wrk and the scanner benchmark.
    static func runBodies(_ arguments: inout Arguments) throws {
        let out = try arguments.required("--out")
        let seed = UInt64(try arguments.integer("--seed", default: 42, in: 0...Int.max))
        let batches = try arguments.integer("--batches", default: 64, in: 1...100_000)
        let size = try arguments.integer("--batch-size", default: 100, in: 1...2000)
        let base = try baseTime(&arguments)
        try arguments.finish()
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        var generator = BenchEventGenerator(seed: seed, base: base)
        let single = generator.event(forBatch: false)
        try Data(single.utf8).write(to: URL(fileURLWithPath: out + "/single.json"))
        var batchBytes = 0
        for index in 0..<batches {
            let body = generator.batch(size: size)
            batchBytes += body.utf8.count
            try Data(body.utf8).write(
                to: URL(fileURLWithPath: out + "/batch-" + String(format: "%05d", index) + ".json"))
        }
        report(
            "bodies",
            [
                ("batches", String(batches)), ("batch_size", String(size)), ("single_bytes", String(single.utf8.count)),
                ("avg_batch_bytes", String(batchBytes / batches)),
                ("avg_event_bytes", String(batchBytes / batches / size)), ("seed", String(seed)),
            ])
    }

    /// `--base-time ISO` (default now, to the second): the `sent_at` of every batch.
    static func baseTime(_ arguments: inout Arguments) throws -> Timestamp {
        guard let text = try arguments.option("--base-time") else {
            return Timestamp(microseconds: Timestamp.now().microseconds / 1_000_000 * 1_000_000)
        }
        guard let time = Timestamp(iso8601: text) else { throw UsageError(description: "--base-time must be ISO-8601") }
        return time
    }
}
