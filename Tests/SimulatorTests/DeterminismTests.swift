import Testing

@testable import Simulator

@Suite struct DeterminismTests {
    static let parameters = WorldParameters(
        appID: "app_test", links: 8, devices: 300, days: 30, start: SimulatedTime.parseDay("2026-06-01")!, seed: 42)

    static func requests(_ world: World) -> [SimulatedRequest] {
        Simulation.requests(for: world, appID: "app_test", publishableKey: "pk_test", secretKey: "sk_test")
    }

    @Test("the same seed gives identical requests and identical truth bytes")
    func sameSeedSameBytes() {
        let first = Simulation.world(Self.parameters)
        let second = Simulation.world(Self.parameters)
        #expect(Self.requests(first) == Self.requests(second))
        #expect(Simulation.truth(of: first).encoded() == Simulation.truth(of: second).encoded())
    }

    @Test("a different seed gives a different world")
    func differentSeedDifferentWorld() {
        var other = Self.parameters
        other.seed = 43
        let truthA = Simulation.truth(of: Simulation.world(Self.parameters)).encoded()
        let truthB = Simulation.truth(of: Simulation.world(other)).encoded()
        #expect(truthA != truthB)
    }

    @Test("the world has every kind of realism the pipeline must survive")
    func realismIsPresent() {
        let world = Simulation.world(Self.parameters)
        let requests = Self.requests(world)
        let devices = world.devices
        #expect(devices.contains { $0.clockSkew != 0 })
        #expect(Set(devices.map(\.sdk)) == Set(SDKFamily.allCases))
        #expect(world.clicks.contains { $0.kind == .universalLink })
        #expect(Set(world.matches.map(\.method)) == ["deterministic", "probabilistic"])
        #expect(world.events.contains { $0.isLate })
        #expect(world.events.contains { $0.name == "refund" })
        #expect(Set(world.events.compactMap { if case .revenue(_, let c, _) = $0.data { c } else { nil } }).count == 3)
        #expect(requests.contains { $0.headers.contains { $0.value == "gzip" } })
        #expect(requests.contains { $0.path == "/api/analytics/batch" })
        #expect(requests.contains { $0.expectation == .rejected })
        #expect(requests.contains { r in r.headers.contains { $0.value == "application/json; charset=utf-8" } })
        #expect(requests.contains { r in !r.headers.contains { $0.name == "X-SDK" } })
        let duplicates = zip(requests, requests.dropFirst()).filter { $0 == $1 }
        #expect(!duplicates.isEmpty)
    }

    @Test("every generated time is a whole second inside the period and device events are strictly ordered")
    func timesAreWholeSecondsInPeriod() {
        let world = Simulation.world(Self.parameters)
        for event in world.events {
            #expect(event.time % 1000 == 0 && event.time >= world.parameters.start && event.time < world.end)
        }
        for click in world.clicks { #expect(click.time >= world.parameters.start && click.time < world.end) }
        for (a, b) in zip(world.events, world.events.dropFirst()) where a.device == b.device {
            #expect(a.time < b.time)
        }
    }
}

@Suite struct EdgeWorldTests {
    @Test(
        "tiny and odd worlds generate, encode and compute without trouble",
        arguments: [(1, 1, 1), (1, 2, 3), (3, 50, 2), (40, 5, 60)])
    func tinyWorlds(links: Int, devices: Int, days: Int) {
        let world = Simulation.world(
            WorldParameters(
                appID: "a", links: links, devices: devices, days: days, start: SimulatedTime.parseDay("2026-02-27")!,
                seed: 11))
        let truth = Simulation.truth(of: world)
        let requests = Simulation.requests(for: world, appID: "a", publishableKey: "p", secretKey: "s")
        #expect(truth.totals.devices == world.devices.count)
        #expect(!requests.isEmpty)
        for event in world.events { #expect(event.time >= world.parameters.start && event.time < world.end) }
    }

    @Test("calendar arithmetic round-trips across leap days and years")
    func calendar() {
        for text in ["1970-01-01", "2024-02-29", "2026-12-31", "2000-03-01"] {
            let ms = SimulatedTime.parseDay(text)!
            #expect(SimulatedTime.dayString(SimulatedTime.dayIndex(ms)) == text)
            #expect(SimulatedTime.iso8601(ms + 3_723_004) == text + "T01:02:03.004Z")
        }
        #expect(SimulatedTime.parseDay("2026-02-29") == nil)
        #expect(SimulatedTime.parseDay("2026-6-1") == nil)
    }
}
