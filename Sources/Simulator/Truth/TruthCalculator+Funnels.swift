/// The default per-link funnel and retention cohorts.
extension TruthCalculator {
    /// click → install → app_open → sign_up → purchase, cohort = day of the web click.
    ///
    /// Step 2 joins the click to the device whose events carry it as `install_click_id` (install at
    /// or after the click); each later step is the device's earliest such event at or after the
    /// previous step's time; every step within the conversion window from the click. The steps'
    /// names are distinct, so each later step's event is a different event, as sql/068 requires of
    /// a funnel that repeats a name (the simulator computes only this funnel); `install` is derived
    /// (the first event), so the install's own app_open satisfies the app_open step, as in SQL.
    func funnels() -> [Funnel] {
        var deviceByClick: [Int32: Int32] = [:]
        for install in installs {
            if let click = world.events[ranges[Int(install.device)]].lazy.compactMap({ $0.attribution?.installClick })
                .first
            {
                deviceByClick[click] = install.device
            }
        }
        var funnels = world.links.map { Funnel(link: $0.path, cohorts: [:]) }
        for (index, click) in world.clicks.enumerated() where click.kind == .web {
            let day = SimulatedTime.dayIndex(click.time)
            var times = [click.time]
            if let device = deviceByClick[Int32(index)] {
                times += laterSteps(device: device, after: click.time)
            }
            var cohort = funnels[Int(click.link)].cohorts[day] ?? FunnelCohort()
            for step in times.indices {
                cohort.counts[step] += 1
                if step > 0 { cohort.durations[step].append(times[step] - times[step - 1]) }
            }
            funnels[Int(click.link)].cohorts[day] = cohort
        }
        return funnels.sorted { $0.link < $1.link }
    }

    /// Times of install, app_open, sign_up, purchase reached in order within the window.
    private func laterSteps(device: Int32, after clickTime: Int64) -> [Int64] {
        let deadline = clickTime + Self.conversionWindow
        let install = installs[Int(device)].install
        guard install >= clickTime && install <= deadline else { return [] }
        var times = [install]
        let events = world.events[ranges[Int(device)]]  // already in time order (DeviceTimeline)
        for (kind, name) in [(Event.Kind.retention, "app_open"), (.event, "sign_up"), (.event, "purchase")] {
            let previous = times.last!
            guard
                let next = events.first(where: {
                    $0.kind == kind && $0.name == name && $0.time >= previous && $0.time <= deadline
                })
            else { break }
            times.append(next.time)
        }
        return times
    }

    /// Cohorts by install day, per attributed link and organic; day N counts devices with an
    /// `app_open` on the calendar day install day + N, null when that day is after `lastDay`.
    func retention(lastDay: Int64) -> [RetentionCohort] {
        struct Key: Hashable {
            var link: Int32?
            var day: Int64
        }
        var cohorts: [Key: (size: Int, retained: [Int])] = [:]
        for install in installs {
            let installDay = SimulatedTime.dayIndex(install.install)
            let openDays = Set(
                world.events[ranges[Int(install.device)]].lazy.filter { $0.kind == .retention && $0.name == "app_open" }
                    .map { SimulatedTime.dayIndex($0.time) - installDay })
            let key = Key(link: install.link, day: installDay)
            var cohort = cohorts[key] ?? (0, Array(repeating: 0, count: RetentionCohort.days.count))
            cohort.size += 1
            for (slot, n) in RetentionCohort.days.enumerated() where openDays.contains(Int64(n)) {
                cohort.retained[slot] += 1
            }
            cohorts[key] = cohort
        }
        return cohorts.map { key, cohort in
            RetentionCohort(
                link: key.link.map { world.links[Int($0)].path }, day: key.day, size: cohort.size,
                retained: RetentionCohort.days.enumerated().map { slot, n in
                    key.day + Int64(n) <= lastDay ? cohort.retained[slot] : nil
                })
        }.sorted { ($0.link ?? "\u{10FFFF}", $0.day) < ($1.link ?? "\u{10FFFF}", $1.day) }
    }
}
