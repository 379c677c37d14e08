/// The per-link daily report and the attribution report.
extension TruthCalculator {
    private struct Key: Hashable {
        var link: Int32
        var day: Int64
    }

    private struct Row {
        var total = DayCounts()
        var byPlatform: [String: DayCounts] = [:]
        var byVariant: [LinkVariant: DayCounts] = [:]

        mutating func update(platform: String?, variant: LinkVariant?, _ change: (inout DayCounts) -> Void) {
            change(&total)
            if let platform, platform == "ios" || platform == "android" {
                change(&byPlatform[platform, default: DayCounts()])
            }
            if let variant { change(&byVariant[variant, default: DayCounts()]) }
        }
    }

    func linkDays() -> [LinkDay] {
        var rows: [Key: Row] = [:]
        func variant(_ click: Click) -> LinkVariant { world.links[Int(click.link)].variants[Int(click.variant)] }
        for click in world.clicks {
            let key = Key(link: click.link, day: SimulatedTime.dayIndex(click.time))
            rows[key, default: Row()].update(platform: click.platform, variant: variant(click)) {
                if click.kind == .web { $0.clicks += 1 } else { $0.universalLinkOpens += 1 }
            }
        }
        for match in world.matches {
            let click = world.clicks[Int(match.click)]
            let key = Key(link: click.link, day: SimulatedTime.dayIndex(match.time))
            rows[key, default: Row()].update(platform: click.platform, variant: variant(click)) {
                $0.matchedInstalls += 1
            }
        }
        for install in installs {
            guard let link = install.link else { continue }
            let device = world.devices[Int(install.device)]
            let click = world.events[ranges[Int(install.device)]].lazy.compactMap { $0.attribution?.installClick }
                .first!
            let key = Key(link: link, day: SimulatedTime.dayIndex(install.install))
            rows[key, default: Row()].update(platform: device.platform, variant: variant(world.clicks[Int(click)])) {
                $0.attributedInstalls += 1
            }
        }
        var reengaged = Set<[Int64]>()  // [link, day, device]
        for event in world.events {
            let device = world.devices[Int(event.device)]
            let day = SimulatedTime.dayIndex(event.time)
            if event.kind == .event, let open = event.attribution?.openClick,
                event.time - installs[Int(event.device)].install >= Self.inactivity
            {
                let link = world.clicks[Int(open)].link
                if reengaged.insert([Int64(link), day, Int64(event.device)]).inserted {
                    rows[Key(link: link, day: day), default: Row()].update(platform: device.platform, variant: nil) {
                        $0.reengagements += 1
                    }
                }
            }
            guard let link = attributedLink(event.device) else { continue }
            rows[Key(link: link, day: day), default: Row()].update(platform: device.platform, variant: nil) {
                if event.kind == .event {
                    $0.events[event.name, default: 0] += 1
                } else {
                    $0.retentionEvents[event.name, default: 0] += 1
                }
                if let revenue = Self.revenue(of: event) { $0.revenue[revenue.currency, default: 0] += revenue.cents }
            }
        }
        return rows.map { key, row in
            LinkDay(
                link: world.links[Int(key.link)].path, day: key.day, total: row.total, byPlatform: row.byPlatform,
                byVariant: row.byVariant)
        }.sorted { ($0.link, $0.day) < ($1.link, $1.day) }
    }

    func attribution() -> [LinkAttribution] {
        var reports = world.links.map {
            LinkAttribution(
                link: $0.path, matchedInstalls: 0, attributedInstalls: 0, byInstallDay: [:], byEventDay: [:],
                lastTouchOpens: [:])
        }
        for match in world.matches { reports[Int(world.clicks[Int(match.click)].link)].matchedInstalls += 1 }
        for install in installs {
            guard let link = install.link else { continue }
            reports[Int(link)].attributedInstalls += 1
            reports[Int(link)].byInstallDay[SimulatedTime.dayIndex(install.install), default: CohortValue()].installs +=
                1
        }
        for event in world.events where event.kind == .event {
            let day = SimulatedTime.dayIndex(event.time)
            if let open = event.attribution?.openClick {
                reports[Int(world.clicks[Int(open)].link)].lastTouchOpens[day, default: 0] += 1
            }
            guard let link = attributedLink(event.device) else { continue }
            let installDay = SimulatedTime.dayIndex(installs[Int(event.device)].install)
            let revenue = Self.revenue(of: event)
            for (dayKey, isCohort) in [(installDay, true), (day, false)] {
                func add(_ value: inout CohortValue) {
                    value.actions += 1
                    value.events[event.name, default: 0] += 1
                    if let revenue { value.revenue[revenue.currency, default: 0] += revenue.cents }
                }
                if isCohort {
                    add(&reports[Int(link)].byInstallDay[dayKey, default: CohortValue()])
                } else {
                    add(&reports[Int(link)].byEventDay[dayKey, default: CohortValue()])
                }
            }
        }
        return reports.sorted { $0.link < $1.link }
    }
}
