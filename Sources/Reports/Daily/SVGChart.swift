/// Inline SVG charts for the daily HTML report: plain shapes and text, fixed sizes, no scripts.
enum SVGChart {
    struct LinkBar {
        var label: String
        var clicks: Int
        var installs: Int
        var matched: Int
    }

    struct FunnelStep {
        var name: String
        var devices: Int
    }

    struct RetentionPoint {
        var day: Int
        /// Share in 0...1, nil when no cohort has reached the day.
        var rate: Double?
    }

    static let clickColor = "#4c78a8"
    static let installColor = "#f58518"
    static let funnelColor = "#54a24b"
    static let retentionColor = "#b279a2"
    /// At most this many links are drawn (the busiest).
    static let maxLinks = 15

    /// Horizontal grouped bars: clicks and attributed installs per link.
    static func linkBars(_ bars: [LinkBar]) -> String {
        let shown = Array(bars.prefix(maxLinks))
        let labelWidth = 180.0
        let plotWidth = 460.0
        let rowHeight = 30.0
        let top = 28.0
        let height = top + rowHeight * Double(max(shown.count, 1)) + 10
        let maximum = Double(max(1, shown.map { max($0.clicks, $0.installs) }.max() ?? 1))
        var svg = open(
            id: "chart-links", width: labelWidth + plotWidth + 70, height: height,
            title: "Clicks and attributed installs per link")
        svg += legend(x: labelWidth, y: 10, items: [("clicks", clickColor), ("attributed installs", installColor)])
        if shown.isEmpty {
            svg += text(x: labelWidth, y: top + 16, "No link activity on this day.")
        }
        for (index, bar) in shown.enumerated() {
            let y = top + rowHeight * Double(index)
            svg += text(x: labelWidth - 6, y: y + 16, fitted(bar.label, width: labelWidth - 10), anchor: "end")
            let clickWidth = plotWidth * Double(bar.clicks) / maximum
            let installWidth = plotWidth * Double(bar.installs) / maximum
            svg += rect(x: labelWidth, y: y + 3, width: clickWidth, height: 11, fill: clickColor, cls: "bar-clicks")
            svg += text(x: labelWidth + clickWidth + 4, y: y + 12, String(bar.clicks))
            svg += rect(
                x: labelWidth, y: y + 15, width: installWidth, height: 11, fill: installColor, cls: "bar-installs")
            svg += text(x: labelWidth + installWidth + 4, y: y + 24, String(bar.installs))
        }
        return svg + "</svg>"
    }

    /// Funnel: one bar per step, width by devices, with the share of step 1.
    static func funnel(_ steps: [FunnelStep]) -> String {
        let labelWidth = 110.0
        let plotWidth = 480.0
        let rowHeight = 34.0
        let height = 10 + rowHeight * Double(max(steps.count, 1))
        let first = Double(max(1, steps.first?.devices ?? 1))
        var svg = open(id: "chart-funnel", width: labelWidth + plotWidth + 120, height: height, title: "Link funnel")
        if steps.isEmpty {
            svg += text(x: labelWidth, y: 24, "No clicks on this day.")
        }
        for (index, step) in steps.enumerated() {
            let y = 5 + rowHeight * Double(index)
            let width = plotWidth * Double(step.devices) / first
            let x = labelWidth + (plotWidth - width) / 2
            svg += text(x: labelWidth - 6, y: y + 19, fitted(step.name, width: labelWidth - 10), anchor: "end")
            svg += rect(x: x, y: y + 4, width: width, height: 24, fill: funnelColor, cls: "funnel-step")
            let share = Double(step.devices) / first * 100
            svg += text(x: labelWidth + plotWidth + 6, y: y + 19, "\(step.devices) (\(format(share, digits: 1))%)")
        }
        return svg + "</svg>"
    }

    /// Retention curve: share of the cohorts with an app_open on day N, N = 0, 1, 3, 7, 14, 30.
    static func retentionCurve(_ points: [RetentionPoint]) -> String {
        let left = 50.0
        let top = 15.0
        let plotWidth = 540.0
        let plotHeight = 180.0
        let maxDay = 30.0
        var svg = open(
            id: "chart-retention", width: left + plotWidth + 30, height: top + plotHeight + 40,
            title: "Retention curve")
        // Axes and grid.
        for percent in stride(from: 0, through: 100, by: 25) {
            let y = top + plotHeight * (1 - Double(percent) / 100)
            svg +=
                "<line x1=\"\(format(left))\" y1=\"\(format(y))\" x2=\"\(format(left + plotWidth))\" y2=\"\(format(y))\" stroke=\"#e3e7ee\"/>"
            svg += text(x: left - 6, y: y + 4, "\(percent)%", anchor: "end")
        }
        for point in points {
            let x = left + plotWidth * Double(point.day) / maxDay
            svg += text(x: x, y: top + plotHeight + 16, "D\(point.day)", anchor: "middle")
        }
        let known = points.compactMap { point in point.rate.map { (point.day, $0) } }
        let coordinates = known.map { day, rate in
            (left + plotWidth * Double(day) / maxDay, top + plotHeight * (1 - rate))
        }
        if coordinates.count > 1 {
            let list = coordinates.map { "\(format($0.0)),\(format($0.1))" }.joined(separator: " ")
            svg +=
                "<polyline class=\"retention-curve\" points=\"\(list)\" fill=\"none\" stroke=\"\(retentionColor)\" stroke-width=\"2.5\"/>"
        }
        for ((x, y), (_, rate)) in zip(coordinates, known) {
            svg += "<circle cx=\"\(format(x))\" cy=\"\(format(y))\" r=\"4\" fill=\"\(retentionColor)\"/>"
            svg += text(x: x + 6, y: y - 6, "\(format(rate * 100, digits: 1))%")
        }
        if known.isEmpty {
            svg += text(x: left + 10, y: top + 20, "No install cohorts yet.")
        }
        return svg + "</svg>"
    }

    // MARK: - Primitives

    private static func open(id: String, width: Double, height: Double, title: String) -> String {
        "<svg id=\"\(id)\" width=\"\(format(width))\" height=\"\(format(height))\" "
            + "viewBox=\"0 0 \(format(width)) \(format(height))\" role=\"img\"><title>\(escape(title))</title>"
    }

    private static func rect(x: Double, y: Double, width: Double, height: Double, fill: String, cls: String) -> String {
        "<rect class=\"\(cls)\" x=\"\(format(x))\" y=\"\(format(y))\" width=\"\(format(max(width, 0.5)))\" "
            + "height=\"\(format(height))\" fill=\"\(fill)\"/>"
    }

    private static func text(x: Double, y: Double, _ content: String, anchor: String = "start") -> String {
        "<text x=\"\(format(x))\" y=\"\(format(y))\" text-anchor=\"\(anchor)\">\(escape(content))</text>"
    }

    private static func legend(x: Double, y: Double, items: [(String, String)]) -> String {
        var svg = "<g class=\"legend\">"
        var offset = x
        for (label, color) in items {
            svg += "<rect x=\"\(format(offset))\" y=\"\(format(y - 8))\" width=\"10\" height=\"10\" fill=\"\(color)\"/>"
            svg += text(x: offset + 14, y: y + 1, label)
            offset += 24 + Double(label.count) * 6.5
        }
        return svg + "</g>"
    }

    /// `text` as a label right-aligned in `width` pixels of the charts' 11 px sans-serif: whole
    /// when it fits, else its start with "…", by an estimate of each character's width kept on the
    /// wide side (no font metrics here). Until 2026-12-05 a link's label was cut at 28 characters,
    /// which at 11 px are up to ~290 px of capitals or ~310 of CJK, so a long path showed its end
    /// with its start cut off at the chart's left edge; a funnel step's name was not cut at all.
    static func fitted(_ text: String, width: Double) -> String {
        let ellipsis = 11.0
        var used = 0.0
        var end = text.startIndex
        for index in text.indices {
            let next = used + labelWidth(of: text[index])
            if next > width - ellipsis {
                // Would the rest fit without the ellipsis's room? Only if this is the last one.
                let rest = text[index...].reduce(used) { $0 + labelWidth(of: $1) }
                return rest <= width ? text : String(text[..<end]) + "…"
            }
            used = next
            end = text.index(after: index)
        }
        return text
    }

    /// A character's width at 11 px, estimated high: East Asian wide and emoji the font size,
    /// capitals and `m`/`w` 9 px (`M`, `W` 11), marks 0, narrow letters and punctuation 4, others 7.
    static func labelWidth(of character: Character) -> Double {
        guard let scalar = character.unicodeScalars.first else { return 0 }
        switch scalar.value {
        case 0x0300...0x036F, 0x200B...0x200F: return 0
        case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
            0xFFE0...0xFFE6, 0x1F300...0x1FAFF, 0x20000...0x3FFFD:
            return 11
        case 0x4D, 0x57: return 11  // M W
        case 0x41...0x5A, 0x6D, 0x77: return 9  // other capitals, m, w
        case 0x20, 0x21, 0x27, 0x28, 0x29, 0x2C, 0x2E, 0x2F, 0x3A, 0x3B, 0x49, 0x5B, 0x5D, 0x66, 0x69, 0x6A, 0x6C,
            0x72, 0x74, 0x7C:
            return 4  // space ! ' ( ) , . / : ; I [ ] f i j l r t |
        default: return 7
        }
    }

    /// Fixed-point formatting without Foundation's locale-dependent formatters.
    static func format(_ value: Double, digits: Int = 1) -> String {
        let scale = digits == 0 ? 1.0 : (0..<digits).reduce(1.0) { result, _ in result * 10 }
        let scaled = (value * scale).rounded()
        let negative = scaled < 0
        let magnitude = Int(abs(scaled))
        let whole = magnitude / Int(scale)
        let fraction = magnitude % Int(scale)
        var text = (negative ? "-" : "") + String(whole)
        if digits > 0 {
            let fractionText = String(fraction)
            text += "." + String(repeating: "0", count: digits - fractionText.count) + fractionText
        }
        return text
    }
}
