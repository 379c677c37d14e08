/// One device's life: sessions (install, daily returns, universal-link opens) and the events in each.
///
/// Invariants the truth relies on: the first session starts at the install time; every event of
/// the device has a distinct, whole-second time, strictly increasing in emission order (so no two
/// events can share a content hash); every event is before the end of the period.
struct DeviceTimeline {
    let device: Int32
    let install: Int64
    let end: Int64
    let signUpRate: Double
    let purchaseRate: Double
    var rng: SeededGenerator
    private(set) var events: [Event] = []

    private var cursor: Int64 = 0
    private var attribution: EventAttribution?
    private var isNewest = false
    private var signedUp = false
    private var purchased = false
    private var pendingRefunds: [(due: Int64, data: EventData)] = []

    init(device: Int32, install: Int64, end: Int64, signUpRate: Double, purchaseRate: Double, rng: SeededGenerator) {
        self.device = device
        self.install = install
        self.end = end
        self.signUpRate = signUpRate
        self.purchaseRate = purchaseRate
        self.rng = rng
    }

    /// Generates the events; universal-link clicks are added to the generator's world.
    mutating func build(in generator: inout WorldGenerator) {
        let info = generator.world.devices[Int(device)]
        isNewest = info.sdk == .newest
        let starts = sessionStarts(skewed: info.clockSkew != 0)
        let signsUp = rng.chance(signUpRate)
        let signUpSession = rng.chance(0.75) ? 0 : rng.int(1...2)
        let buys = signsUp && rng.chance(purchaseRate)
        let purchaseGap = rng.chance(0.4) ? 0 : rng.int(1...2)
        let currency = ["USD", "EUR", "GBP"][rng.weighted([0.6, 0.25, 0.15])]
        // Some attributed installs send their first action (the first install_click_id) days later.
        let quietUntil =
            isNewest && info.installClick != nil && rng.chance(0.1)
            ? install + rng.int64(2...4) * SimulatedTime.day : install
        var signUpIndex = Int.max
        cursor = install - 60 * SimulatedTime.second
        var sessionRanges: [Range<Int>] = []
        for (index, planned) in starts.enumerated() {
            var start = max(planned.time, cursor + SimulatedTime.minute)
            guard start < end - 30 * SimulatedTime.minute else { break }
            var openClick: Int32?
            var openType = "organic"
            if planned.universal {
                let ownLink = info.installClick.map { Int(generator.world.clicks[Int($0)].link) }
                let link = ownLink.flatMap { rng.chance(0.5) ? $0 : nil } ?? generator.randomLink(&rng)
                openClick = generator.addClick(
                    link: link, variant: rng.below(generator.world.links[link].variants.count), time: start,
                    kind: .universalLink, platform: info.platform, rng: &rng)
                openType = "verified"
                start += 2 * SimulatedTime.second
            } else if index == 0, let click = info.installClick {
                openClick = click
                openType = "deferred"
            }
            attribution = EventAttribution(installClick: info.installClick, openClick: openClick, openType: openType)
            cursor = start
            let first = events.count
            let quiet = start < quietUntil
            openSession(first: index == 0, universalClick: planned.universal ? openClick : nil, quiet: quiet)
            if quiet {
                sessionRanges.append(first..<events.count)
                continue
            }
            commonActions(returning: index > 0)
            if signsUp && !signedUp && index >= signUpSession {  // (quiet sessions never get here)
                action("sign_up")
                signedUp = true
                signUpIndex = index
            }
            if buys && signedUp && !purchased && index >= signUpIndex + purchaseGap {
                if rng.chance(0.5) { action("begin_checkout") }
                purchase(currency)
                purchased = true
            } else if purchased && rng.chance(0.08) {
                purchase(currency)
            }
            refunds(before: start)
            sessionRanges.append(first..<events.count)
        }
        if !info.usesBatches && rng.chance(WorldShape.lateSessionShare), !sessionRanges.isEmpty {
            for index in sessionRanges[rng.below(sessionRanges.count)] { events[index].isLate = true }
        }
    }

    /// The install session, one possible return per later day, and perhaps a universal-link open.
    private mutating func sessionStarts(skewed: Bool) -> [(time: Int64, universal: Bool)] {
        var starts: [(time: Int64, universal: Bool)] = [(install, false)]
        let installDay = SimulatedTime.dayIndex(install)
        let lastDay = SimulatedTime.dayIndex(end - 1)
        // Skewed devices live between 01:00 and 20:00 so sub-second correction jitter never moves a day.
        let hours: ClosedRange<Int64> = skewed ? 3600...72_000 : 0...82_800
        if installDay < lastDay {
            for day in (installDay + 1)...lastDay
            where rng.chance(WorldShape.returnProbability(day: Int(day - installDay))) {
                let time = day * SimulatedTime.day + rng.int64(hours) * 1000
                if time < end - SimulatedTime.hour { starts.append((time, false)) }
            }
        }
        if !skewed && rng.chance(WorldShape.universalLinkShare) {
            let late = rng.chance(0.8)
            let low = install + (late ? 7 * SimulatedTime.day + SimulatedTime.hour : SimulatedTime.day)
            // Early opens stay within 5 days, so "at least 7 days" reads the same in elapsed time and in calendar days.
            let high = late ? end - SimulatedTime.hour : min(install + 5 * SimulatedTime.day, end - SimulatedTime.hour)
            if low < high { starts.append((low + rng.int64(0...(high - low) / 1000) * 1000, true)) }
        }
        return starts.sorted { $0.time < $1.time }
    }

    private mutating func openSession(first: Bool, universalClick: Int32?, quiet: Bool) {
        if quiet {
            emit(.retention, "app_open", .none)
            return
        }
        let tutorialFirst = first && rng.chance(0.05)
        if tutorialFirst { action("tutorial_begin") }
        emit(.retention, "app_open", .none)
        if first && !tutorialFirst && rng.chance(0.6) {
            action("tutorial_begin")
            if rng.chance(0.6) { action("tutorial_complete") }
        }
        if let click = universalClick, !isNewest { action("opened_via_universal_link", .url(click: click)) }
        if rng.chance(0.05) { emit(.retention, "daily_reward_claimed", .none) }
    }

    private mutating func commonActions(returning: Bool) {
        if returning && rng.chance(0.1) { action("login") }
        if rng.chance(0.03) { action("opened_from_push_notification") }
        if rng.chance(0.5) { action("view_item", .sku("sku-\(rng.int(100...999))")) }
        if rng.chance(0.3) { action("search", .query(rng.pick(["shoes", "coffee", "travel", "books"]))) }
        if rng.chance(0.2) { action("add_to_cart", .sku("sku-\(rng.int(100...999))")) }
        if rng.chance(0.05) { action("share") }
        if rng.chance(0.3) { action("article_read") }
        if rng.chance(0.1) { action("level_up") }
        if rng.chance(0.05) { action("bookmark_added") }
    }

    private mutating func purchase(_ currency: String) {
        let prices: [String: [Int64]] = [
            "USD": [99, 499, 999, 2999, 4900], "EUR": [899, 1999, 4999], "GBP": [799, 2450, 1000],
        ]
        let cents = rng.pick(prices[currency]!)
        let data = EventData.revenue(cents: cents, currency: currency, key: rng.chance(0.9) ? "revenue" : "value")
        action("purchase", data)
        if rng.chance(WorldShape.refundShare) {
            pendingRefunds.append(
                (cursor + SimulatedTime.day, .revenue(cents: cents, currency: currency, key: "revenue")))
        }
    }

    private mutating func refunds(before start: Int64) {
        let due = pendingRefunds.filter { $0.due <= start }
        pendingRefunds.removeAll { $0.due <= start }
        for refund in due { action("refund", refund.data) }
    }

    private mutating func action(_ name: String, _ data: EventData = .none) { emit(.event, name, data) }

    private mutating func emit(_ kind: Event.Kind, _ name: String, _ data: EventData) {
        guard cursor < end else { return }  // a long last session is cut at the end of the period
        events.append(
            Event(
                device: device, kind: kind, name: name, time: cursor,
                attribution: kind == .event && isNewest ? attribution : nil, data: data))
        cursor += rng.int64(10...120) * SimulatedTime.second
    }
}
