/// Builds the `RequestPlan` of a world (its own random stream: the plan never shifts the world).
struct RequestPlanner {
    let world: World
    private var rng: SeededGenerator
    private var linkPhase: [RequestPlan.Item] = []
    private var sdkPhase: [(anchor: Int64, item: RequestPlan.Item)] = []
    private var latePhase: [RequestPlan.Item] = []

    static let linkChunk = 500
    static let batchChunk = 500

    init(world: World) {
        self.world = world
        rng = SeededGenerator(seed: world.parameters.seed, stream: 6)
    }

    mutating func plan() -> RequestPlan {
        planLinkService()
        planDevices()
        planInvalid()
        // Stable sort by anchor time: ties keep planning order, so duplicates stay adjacent.
        let sdk = sdkPhase.enumerated().sorted { ($0.element.anchor, $0.offset) < ($1.element.anchor, $1.offset) }
            .map(\.element.item)
        return RequestPlan(phases: [linkPhase, sdk, latePhase])
    }

    private mutating func planLinkService() {
        let byTime = world.clicks.indices.sorted { (world.clicks[$0].time, $0) < (world.clicks[$1].time, $1) }
        var clicks: [Int32] = []
        var lateClicks: [Int32] = []
        for index in byTime {
            if rng.chance(0.02) { lateClicks.append(Int32(index)) } else { clicks.append(Int32(index)) }
        }
        let matchesByTime = world.matches.indices.sorted { (world.matches[$0].time, $0) < (world.matches[$1].time, $1) }
        var early: [Int32] = []
        var matches: [Int32] = []
        for index in matchesByTime {
            if rng.chance(0.03) { early.append(Int32(index)) } else { matches.append(Int32(index)) }
        }
        if !early.isEmpty { linkPhase.append(linkItem(clicks: [], matches: early)) }
        for chunk in chunks(clicks, Self.linkChunk) { linkPhase.append(linkItem(clicks: chunk, matches: [])) }
        for chunk in chunks(matches, Self.linkChunk) { linkPhase.append(linkItem(clicks: [], matches: chunk)) }
        if let first = linkPhase.first { linkPhase.insert(first, at: 1) }  // the same post, twice
        for chunk in chunks(lateClicks, Self.linkChunk) { latePhase.append(linkItem(clicks: chunk, matches: [])) }
    }

    private mutating func linkItem(clicks: [Int32], matches: [Int32]) -> RequestPlan.Item {
        RequestPlan.Item(
            content: .link(clicks: clicks, matches: matches, batchForm: rng.chance(0.2)), gzip: rng.chance(0.5),
            uppercaseDevice: false)
    }

    private mutating func planDevices() {
        var index = 0
        let events = world.events
        while index < events.count {
            let device = events[index].device
            let first = index
            while index < events.count && events[index].device == device { index += 1 }
            planDevice(device, Int32(first)..<Int32(index))
        }
    }

    private mutating func planDevice(_ device: Int32, _ range: Range<Int32>) {
        let info = world.devices[Int(device)]
        let android = info.platform == "android"
        if info.clockSkew != 0 {
            // Skewed clock: everything in one batch (split only past the batch limit), sent_at from the same clock.
            for chunk in chunks(Array(range), Self.batchChunk) {
                addBatch(device, chunk, anchor: world.events[Int(chunk.last!)].time, sentAt: true, duplicate: false)
            }
            return
        }
        if info.usesBatches {
            var day = Int64.min
            var pending: [Int32] = []
            for event in range {
                let eventDay = SimulatedTime.dayIndex(world.events[Int(event)].time)
                if eventDay != day && !pending.isEmpty {
                    addBatch(
                        device, pending, anchor: world.events[Int(pending.last!)].time, sentAt: rng.chance(0.7),
                        duplicate: rng.chance(0.03))
                    pending = []
                }
                day = eventDay
                pending.append(event)
            }
            if !pending.isEmpty {
                addBatch(
                    device, pending, anchor: world.events[Int(pending.last!)].time, sentAt: rng.chance(0.7),
                    duplicate: rng.chance(0.03))
            }
            return
        }
        var late: [Int32] = []
        for event in range {
            if world.events[Int(event)].isLate {
                late.append(event)
                continue
            }
            let item = RequestPlan.Item(
                content: .single(event: event), gzip: rng.chance(0.15), uppercaseDevice: android && rng.chance(0.2))
            sdkPhase.append((world.events[Int(event)].time, item))
            if rng.chance(0.015) { sdkPhase.append((world.events[Int(event)].time, item)) }
        }
        if !late.isEmpty {
            latePhase.append(
                RequestPlan.Item(
                    content: .batch(device: device, events: late, invalid: [], hasSentAt: true), gzip: rng.chance(0.4),
                    uppercaseDevice: android && rng.chance(0.2)))
        }
    }

    private mutating func addBatch(_ device: Int32, _ events: [Int32], anchor: Int64, sentAt: Bool, duplicate: Bool) {
        let item = RequestPlan.Item(
            content: .batch(device: device, events: events, invalid: [], hasSentAt: sentAt), gzip: rng.chance(0.4),
            uppercaseDevice: world.devices[Int(device)].platform == "android" && rng.chance(0.2))
        sdkPhase.append((anchor, item))
        if duplicate { sdkPhase.append((anchor, item)) }
    }

    /// Invalid events ride in a batch of their device when it uses batches, otherwise alone;
    /// one malformed body completes the set.
    private mutating func planInvalid() {
        var firstEvent: [Int32: Int32] = [:]
        for (index, event) in world.events.enumerated().reversed() { firstEvent[event.device] = Int32(index) }
        for (index, invalid) in world.invalidEvents.enumerated() {
            let item: RequestPlan.Item
            if invalid.inBatch {
                // With the device's first event again: a valid duplicate the pipeline must count once.
                let valid = firstEvent[invalid.device].map { [$0] } ?? []
                item = RequestPlan.Item(
                    content: .batch(device: invalid.device, events: valid, invalid: [Int32(index)], hasSentAt: false),
                    gzip: false, uppercaseDevice: false)
            } else {
                item = RequestPlan.Item(
                    content: .invalidSingle(Int32(index)), gzip: rng.chance(0.2), uppercaseDevice: false)
            }
            sdkPhase.append((invalid.time, item))
        }
        if let device = world.devices.indices.first {
            sdkPhase.append(
                (
                    world.parameters.start + SimulatedTime.day / 2,
                    RequestPlan.Item(content: .malformed(device: Int32(device)), gzip: false, uppercaseDevice: false)
                ))
        }
    }

    private func chunks(_ items: [Int32], _ size: Int) -> [[Int32]] {
        stride(from: 0, to: items.count, by: size).map { Array(items[$0..<min($0 + size, items.count)]) }
    }
}
