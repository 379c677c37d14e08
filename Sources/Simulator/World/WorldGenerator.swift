/// Builds a `World` from `WorldParameters`: links, clicks, matches, devices, then each device's
/// timeline (`DeviceTimeline`) and the invalid events.
///
/// Each concern draws from its own random stream, so the world is a pure function of the parameters.
struct WorldGenerator {
    let parameters: WorldParameters
    private(set) var world: World
    /// Per-link conversion rates: (sign-up, purchase after sign-up).
    private var linkRates: [(signUp: Double, purchase: Double)] = []
    private var linkWeights: [Double] = []

    init(parameters: WorldParameters) {
        self.parameters = parameters
        var rng = SeededGenerator(seed: parameters.seed, stream: 1)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let hash = String((0..<10).map { _ in alphabet[rng.below(alphabet.count)] })
        world = World(
            parameters: parameters, appHash: hash, links: [], clicks: [], matches: [], devices: [], events: [],
            invalidEvents: [])
    }

    /// Generates the whole world.
    mutating func generate() -> World {
        makeLinks()
        makeDevices()
        makeTimelines()
        makeNonConvertingClicks()
        makeInvalidEvents()
        return world
    }

    private mutating func makeLinks() {
        var rng = SeededGenerator(seed: parameters.seed, stream: 2)
        let sections = ["articles", "promo", "products", "invite", "blog", "events"]
        let words = ["spring", "summer", "launch", "welcome", "deals", "guide", "recipes", "news"]
        let sources = ["news", "twitter", "facebook", "newsletter", "google"]
        let mediums = ["social", "email", "cpc", "referral"]
        let campaigns = ["spring", "launch", "retarget", "black_friday", "onboarding"]
        for index in 0..<parameters.links {
            let section = sections[index % sections.count]
            let path = section == "articles" ? "/articles/\(index + 1)" : "/\(section)/\(rng.pick(words))-\(index + 1)"
            var variants: [LinkVariant] = []
            if rng.chance(0.3) { variants.append(LinkVariant()) }
            for _ in 0..<rng.int(1...3) {
                let variant = LinkVariant(
                    source: rng.pick(sources), medium: rng.chance(0.7) ? rng.pick(mediums) : nil,
                    campaign: rng.chance(0.8) ? rng.pick(campaigns) : nil)
                if !variants.contains(variant) { variants.append(variant) }
            }
            world.links.append(Link(path: path, variants: variants))
            linkWeights.append(1 / Double(index + 1).squareRoot())
            linkRates.append((signUp: 0.25 + 0.4 * rng.unit(), purchase: 0.15 + 0.35 * rng.unit()))
        }
    }

    /// Appends a click and returns its index.
    mutating func addClick(
        link: Int, variant: Int, time: Int64, kind: Click.Kind, platform: String, rng: inout SeededGenerator
    ) -> Int32 {
        let index = world.clicks.count
        let agents = ["Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X)", "Mozilla/5.0 (Linux; Android 15)"]
        world.clicks.append(
            Click(
                id: "clk_\(rng.hex(8))\(String(index, radix: 36))", link: Int32(link), variant: Int32(variant),
                time: time, kind: kind, platform: platform,
                userAgent: kind == .web && rng.chance(0.7) ? rng.pick(agents) : nil,
                ip: rng.chance(0.5) ? "203.0.113.\(rng.int(1...254))" : nil,
                referrer: kind == .web && rng.chance(0.4)
                    ? rng.pick(["https://news.example.com/", "https://t.co/x"]) : nil))
        return Int32(index)
    }

    private mutating func makeDevices() {
        var rng = SeededGenerator(seed: parameters.seed, stream: 3)
        let start = parameters.start
        let end = world.end
        let linked = Int((Double(parameters.devices) * WorldShape.linkedShare).rounded())
        for number in 0..<parameters.devices {
            let family = SDKFamily.allCases[rng.weighted(WorldShape.sdkWeights)]
            let platform = rng.chance(0.55) ? "ios" : "android"
            var installClick: Int32?
            var install: Int64
            var skew: Int64 = 0
            if number < linked {
                let link = rng.weighted(linkWeights)
                let clickTime = start + rng.int64(0...(end - start - 2 * SimulatedTime.hour) / 1000) * 1000
                var delay: Int64
                let probabilistic = rng.chance(WorldShape.probabilisticShare)
                if probabilistic {
                    delay = rng.int64(20...840) * 1000
                } else if rng.chance(WorldShape.lateInstallShare),
                    clickTime + 10 * SimulatedTime.day < end - SimulatedTime.hour
                {
                    delay = rng.int64(8 * 86_400...10 * 86_400) * 1000
                } else {
                    delay = min(rng.exponentialSeconds(mean: 6 * 3600) + 60, 3 * 86_400) * 1000
                }
                install = min(clickTime + delay, end - SimulatedTime.hour)
                let click = addClick(
                    link: link, variant: rng.below(world.links[link].variants.count), time: clickTime, kind: .web,
                    platform: platform, rng: &rng)
                installClick = click
                world.matches.append(
                    Match(
                        click: click, time: install + rng.int64(2...20) * 1000,
                        method: probabilistic ? "probabilistic" : "deterministic",
                        score: probabilistic ? rng.int(850...999) : nil))
            } else if rng.chance(WorldShape.skewedShare) || number == parameters.devices - 1 && !hasSkewedDevice {
                // A skewed clock: organic, installs between 01:00 and 20:00 so jitter never crosses midnight.
                let day = rng.int64(0...Int64(parameters.days - 1))
                install = start + day * SimulatedTime.day + rng.int64(3600...72_000) * 1000
                let hours = rng.int64(2...6) * SimulatedTime.hour + rng.int64(0...3599) * 1000
                skew = rng.chance(0.5) ? hours : -hours
            } else {
                install = start + rng.int64(0...(end - start - SimulatedTime.hour) / 1000) * 1000
            }
            world.devices.append(
                Device(
                    id: uuid(&rng), platform: platform, sdk: family, sdkHeader: sdkHeader(family, platform, &rng),
                    clockSkew: skew, installClick: installClick,
                    usesBatches: skew != 0 || rng.chance(WorldShape.batchingShare)))
            installTimes.append(install)
        }
    }

    private var hasSkewedDevice: Bool { world.devices.contains { $0.clockSkew != 0 } }
    /// Install time of each device, by index.
    private(set) var installTimes: [Int64] = []

    private func sdkHeader(_ family: SDKFamily, _ platform: String, _ rng: inout SeededGenerator) -> String? {
        switch family {
        case .legacy: return nil
        case .current:
            if rng.chance(0.2) { return rng.pick(["react-native/1.0.3", "flutter/1.0.1"]) }
            return platform == "ios" ? "ios/1.0.2" : "android/1.0.4"
        case .newest:
            if rng.chance(0.2) { return "react-native/1.2.0" }
            return platform == "ios" ? "ios/1.2.0" : "android/1.2.0"
        }
    }

    private func uuid(_ rng: inout SeededGenerator) -> String {
        let variant = Array("89ab")[rng.below(4)]
        return "\(rng.hex(8))-\(rng.hex(4))-4\(rng.hex(3))-\(variant)\(rng.hex(3))-\(rng.hex(12))"
    }

    private mutating func makeTimelines() {
        for index in world.devices.indices {
            let rng = SeededGenerator(seed: parameters.seed, stream: 1000 + UInt64(index))
            let device = world.devices[index]
            let rates =
                device.installClick.map { linkRates[Int(world.clicks[Int($0)].link)] }
                ?? (signUp: WorldShape.organicSignUp, purchase: WorldShape.organicPurchase)
            var timeline = DeviceTimeline(
                device: Int32(index), install: installTimes[index], end: world.end, signUpRate: rates.signUp,
                purchaseRate: rates.purchase, rng: rng)
            timeline.build(in: &self)
            world.events.append(contentsOf: timeline.events)
        }
    }

    /// Draws a link by popularity (for universal-link re-engagement).
    func randomLink(_ rng: inout SeededGenerator) -> Int { rng.weighted(linkWeights) }

    private mutating func makeNonConvertingClicks() {
        var rng = SeededGenerator(seed: parameters.seed, stream: 4)
        var installsPerLink = [Int](repeating: 0, count: world.links.count)
        for match in world.matches { installsPerLink[Int(world.clicks[Int(match.click)].link)] += 1 }
        let span = (world.end - parameters.start) / 1000 - 1
        for link in world.links.indices {
            let count = Int(Double(installsPerLink[link]) * (1.5 + 2.5 * rng.unit())) + rng.int(0...3)
            for _ in 0..<count {
                let platform = ["ios", "android", "desktop", "unknown"][rng.weighted([0.4, 0.35, 0.2, 0.05])]
                _ = addClick(
                    link: link, variant: rng.below(world.links[link].variants.count),
                    time: parameters.start + rng.int64(0...span) * 1000, kind: .web, platform: platform, rng: &rng)
            }
        }
    }

    private mutating func makeInvalidEvents() {
        var rng = SeededGenerator(seed: parameters.seed, stream: 5)
        let candidates = world.devices.indices.filter { world.devices[$0].clockSkew == 0 }
        guard !candidates.isEmpty else { return }
        let count = min(200, max(4, world.events.count / 2500))
        for number in 0..<count {
            let device = candidates[rng.below(candidates.count)]
            let defect = InvalidEvent.Defect.allCases[number % InvalidEvent.Defect.allCases.count]
            world.invalidEvents.append(
                InvalidEvent(
                    device: Int32(device), defect: defect,
                    time: installTimes[device] - rng.int64(60...48 * 3600) * 1000,
                    inBatch: world.devices[device].usesBatches))
        }
    }
}
