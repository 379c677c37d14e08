import Foundation
import Testing

@testable import Simulator

@Suite struct TruthTests {
    static let seeds: [UInt64] = [1, 7, 42]

    static func make(_ seed: UInt64, devices: Int = 400, days: Int = 30) -> (World, Truth) {
        let world = Simulation.world(
            WorldParameters(
                appID: "app_truth", links: 6, devices: devices, days: days,
                start: SimulatedTime.parseDay("2026-05-01")!,
                seed: seed))
        return (world, Simulation.truth(of: world))
    }

    @Test("funnel step counts never increase and medians exist exactly where devices reached a step", arguments: seeds)
    func funnelMonotone(seed: UInt64) {
        let (_, truth) = Self.make(seed)
        var reached = 0
        for funnel in truth.funnels {
            for cohort in funnel.cohorts.values {
                for step in 1..<cohort.counts.count {
                    #expect(cohort.counts[step] <= cohort.counts[step - 1])
                    #expect(cohort.durations[step].count == cohort.counts[step])
                    #expect(cohort.durations[step].allSatisfy { $0 >= 0 && $0 <= 7 * SimulatedTime.day })
                }
                reached += cohort.counts[4]
            }
        }
        #expect(reached > 0, "some clicks convert all the way to a purchase")
    }

    @Test(
        "retention is null exactly for cohorts that have not reached day N, and never exceeds the cohort",
        arguments: seeds)
    func retentionNulls(seed: UInt64) {
        let (_, truth) = Self.make(seed)
        #expect(!truth.retention.isEmpty)
        for cohort in truth.retention {
            for (slot, n) in RetentionCohort.days.enumerated() {
                let hasReached = cohort.day + Int64(n) <= truth.lastDay
                #expect((cohort.retained[slot] == nil) == !hasReached)
                if let count = cohort.retained[slot] { #expect(count <= cohort.size) }
            }
        }
        let young = truth.retention.filter { $0.day == truth.lastDay }
        #expect(young.allSatisfy { $0.retained.allSatisfy { $0 == nil } })
    }

    @Test(
        "revenue per currency equals the attributed devices' purchases minus refunds, in every view", arguments: seeds)
    func revenueAddsUp(seed: UInt64) {
        let (world, truth) = Self.make(seed)
        // Independent recomputation: attributed = carries an install click at most 7 days before the first event.
        var expected: [String: Int64] = [:]
        var firstTime: [Int32: Int64] = [:]
        for event in world.events { firstTime[event.device] = min(firstTime[event.device] ?? .max, event.time) }
        var attributed = Set<Int32>()
        for event in world.events {
            if let click = event.attribution?.installClick {
                let age = firstTime[event.device]! - world.clicks[Int(click)].time
                if age >= 0 && age <= 7 * SimulatedTime.day { attributed.insert(event.device) }
            }
        }
        for event in world.events where attributed.contains(event.device) && event.kind == .event {
            guard case .revenue(let cents, let currency, _) = event.data else { continue }
            if event.name == "purchase" { expected[currency, default: 0] += cents }
            if event.name == "refund" { expected[currency, default: 0] -= cents }
        }
        func sum(_ maps: [[String: Int64]]) -> [String: Int64] {
            maps.reduce(into: [:]) { total, map in total.merge(map, uniquingKeysWith: +) }.filter { $0.value != 0 }
        }
        let daily = sum(truth.linkDays.map(\.total.revenue))
        let byInstall = sum(truth.attribution.flatMap { $0.byInstallDay.values.map(\.revenue) })
        let byEvent = sum(truth.attribution.flatMap { $0.byEventDay.values.map(\.revenue) })
        #expect(!expected.isEmpty)
        #expect(daily == expected.filter { $0.value != 0 })
        #expect(byInstall == daily)
        #expect(byEvent == daily)
        #expect(truth.totals.attributedInstalls == attributed.count)
    }

    @Test("every install is counted once: attributed to one link or organic", arguments: seeds)
    func installsCountedOnce(seed: UInt64) {
        let (world, truth) = Self.make(seed)
        #expect(truth.devices.count == world.devices.count)
        #expect(Set(truth.devices.map(\.device)).count == truth.devices.count)
        let attributed = truth.linkDays.reduce(0) { $0 + $1.total.attributedInstalls }
        let organic = truth.organicByDay.values.reduce(0, +)
        #expect(attributed == truth.totals.attributedInstalls)
        #expect(attributed + organic == truth.totals.devices)
        #expect(truth.attribution.reduce(0) { $0 + $1.attributedInstalls } == attributed)
        #expect(truth.totals.unattributableDevices <= truth.totals.organicInstalls)
        #expect(truth.unattributableByDay.values.reduce(0, +) == truth.totals.unattributableDevices)
        let matched = truth.linkDays.reduce(0) { $0 + $1.total.matchedInstalls }
        #expect(matched == world.matches.count)
        #expect(truth.linkDays.reduce(0) { $0 + $1.total.clicks } == truth.totals.clicks)
        // Some matched installs stay organic (no attribution from their SDK, or installed past the lookback).
        #expect(truth.totals.attributedInstalls < truth.totals.matches)
    }

    @Test("platform and UTM slices add up to the link-day totals where every item has a slice", arguments: seeds)
    func slicesAddUp(seed: UInt64) {
        let (_, truth) = Self.make(seed)
        for row in truth.linkDays {
            let platforms = row.byPlatform.values
            #expect(platforms.reduce(0) { $0 + $1.attributedInstalls } == row.total.attributedInstalls)
            #expect(platforms.reduce(0) { $0 + $1.reengagements } == row.total.reengagements)
            #expect(platforms.reduce(0) { $0 + $1.matchedInstalls } == row.total.matchedInstalls)
            #expect(platforms.reduce(0) { $0 + $1.clicks } <= row.total.clicks)
            let variants = row.byVariant.values
            #expect(variants.reduce(0) { $0 + $1.clicks } == row.total.clicks)
            #expect(variants.reduce(0) { $0 + $1.universalLinkOpens } == row.total.universalLinkOpens)
            #expect(variants.reduce(0) { $0 + $1.matchedInstalls } == row.total.matchedInstalls)
            #expect(variants.reduce(0) { $0 + $1.attributedInstalls } == row.total.attributedInstalls)
            #expect(!row.total.isEmpty)
        }
    }

    @Test("re-engagements and last-touch opens come from universal-link opens", arguments: seeds)
    func reengagement(seed: UInt64) {
        let (_, truth) = Self.make(seed)
        let reengagements = truth.linkDays.reduce(0) { $0 + $1.total.reengagements }
        let lastTouch = truth.attribution.reduce(0) { $0 + $1.lastTouchOpens.values.reduce(0, +) }
        #expect(reengagements > 0)
        #expect(lastTouch >= reengagements)
    }

    @Test("the truth file is valid JSON with every section, and rejected events carry documented codes")
    func truthFileParses() throws {
        let (world, truth) = Self.make(5)
        let object = try JSONSerialization.jsonObject(with: Data(truth.encoded())) as? [String: Any]
        let keys = ["totals", "link_daily", "attribution", "funnels", "retention", "devices", "rejected", "as_of"]
        #expect(keys.allSatisfy { object?[$0] != nil })
        #expect(object?["as_of"] as? String == SimulatedTime.iso8601(world.end))
        let rejected = object?["rejected"] as? [[String: Any]] ?? []
        #expect(rejected.count == world.invalidEvents.count && rejected.count >= 4)
        let codes = Set(rejected.compactMap { $0["code"] as? String })
        #expect(codes == ["missing_field", "invalid_timestamp", "invalid_platform"])
    }

    @Test("medians are exact: the middle value, or the mean of the two middle values")
    func medians() {
        #expect(Truth.medianSeconds([]) == nil)
        #expect(Truth.medianSeconds([5000]) == "5")
        #expect(Truth.medianSeconds([1000, 2000]) == "1.5")
        #expect(Truth.medianSeconds([3000, 1000, 2000]) == "2")
        #expect(Truth.medianSeconds([0, 1000, 60_000, 120_000]) == "30.5")
    }
}
