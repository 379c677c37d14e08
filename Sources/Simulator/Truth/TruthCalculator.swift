/// Computes the `Truth` of a world by the definitions in reports.md (see docs/simulator.md).
///
/// Works on the world's facts only: true event times, the attribution each event carries, the
/// link service's clicks and matches. Nothing here knows how the facts are sent.
struct TruthCalculator {
    static let lookback: Int64 = 7 * SimulatedTime.day
    static let inactivity: Int64 = 7 * SimulatedTime.day
    static let conversionWindow: Int64 = 7 * SimulatedTime.day

    let world: World
    /// Event index ranges per device (events are grouped by device).
    private(set) var ranges: [Range<Int>] = []
    private(set) var installs: [DeviceInstall] = []

    init(world: World) {
        self.world = world
        ranges = Array(repeating: 0..<0, count: world.devices.count)
        var index = 0
        while index < world.events.count {
            let device = Int(world.events[index].device)
            let first = index
            while index < world.events.count && Int(world.events[index].device) == device { index += 1 }
            ranges[device] = first..<index
        }
        // Every generated device has at least its install `app_open` (DeviceTimeline's invariant).
        installs = world.devices.indices.map { resolveInstall(Int32($0))! }
    }

    /// Install = earliest event; attributed when any event carries the install click of a click made
    /// at most the lookback before the install (and not after it), the latest such click when
    /// several qualify (sql/069; the generator gives a device one install click, so this only
    /// matters for worlds built by hand).
    private func resolveInstall(_ device: Int32) -> DeviceInstall? {
        let events = world.events[ranges[Int(device)]]
        guard let install = events.map(\.time).min() else { return nil }
        let qualifying = events.lazy.compactMap { $0.attribution?.installClick }.map { self.world.clicks[Int($0)] }
            .filter { $0.time <= install && install - $0.time <= Self.lookback }
        let link = qualifying.max { $0.time < $1.time }?.link
        return DeviceInstall(
            device: device, install: install, link: link, isUnattributable: !events.contains { $0.attribution != nil })
    }

    func compute() -> Truth {
        let firstDay = SimulatedTime.dayIndex(world.parameters.start)
        var truth = Truth(
            appID: world.parameters.appID, firstDay: firstDay, lastDay: firstDay + Int64(world.parameters.days) - 1,
            asOf: world.end, totals: Totals(), linkDays: [], attribution: [], organicByDay: [:],
            unattributableByDay: [:], funnels: [], retention: [], devices: installs, rejected: world.invalidEvents,
            deviceIDs: world.devices.map(\.id), linkPaths: world.links.map(\.path))
        truth.totals = totals()
        truth.linkDays = linkDays()
        truth.attribution = attribution()
        for install in installs where install.link == nil {
            truth.organicByDay[SimulatedTime.dayIndex(install.install), default: 0] += 1
            if install.isUnattributable {
                truth.unattributableByDay[SimulatedTime.dayIndex(install.install), default: 0] += 1
            }
        }
        truth.funnels = funnels()
        truth.retention = retention(lastDay: truth.lastDay)
        return truth
    }

    private func totals() -> Totals {
        var totals = Totals()
        totals.clicks = world.clicks.count { $0.kind == .web }
        totals.universalLinkOpens = world.clicks.count - totals.clicks
        totals.matches = world.matches.count
        totals.devices = installs.count
        totals.attributedInstalls = installs.count { $0.link != nil }
        totals.organicInstalls = totals.devices - totals.attributedInstalls
        totals.unattributableDevices = installs.count { $0.isUnattributable }
        totals.actions = world.events.count { $0.kind == .event }
        totals.retentionEvents = world.events.count - totals.actions
        totals.rejectedEvents = world.invalidEvents.count
        return totals
    }

    /// The attributed link of a device, by device index.
    func attributedLink(_ device: Int32) -> Int32? { installs[Int(device)].link }

    /// The signed revenue of an action: purchases add, refunds subtract; nil when it has none.
    static func revenue(of event: Event) -> (currency: String, cents: Int64)? {
        guard event.kind == .event, case .revenue(let cents, let currency, _) = event.data else { return nil }
        switch event.name {
        case "purchase": return (currency, cents)
        case "refund": return (currency, -cents)
        default: return nil
        }
    }
}
