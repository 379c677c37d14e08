/// The daily report as one self-contained HTML page: inline CSS, inline SVG charts (installs and
/// clicks per link, the default funnel, the retention curve) and the tables. No scripts, no
/// external resources, so it renders the same offline, in a mail client, or in headless Chromium.
struct DailyReportHTML {
    let content: DailyReportContent

    func render() -> String {
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>Detour daily report: \(escape(content.app)), \(content.date)</title>
            <style>
            body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; color: #1d2430; background: #ffffff; }
            h1 { font-size: 22px; margin: 0 0 4px; }
            h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde6; padding-bottom: 4px; }
            p.meta { color: #5a6577; margin: 0 0 12px; font-size: 13px; }
            p.partial { background: #fff3cd; border: 1px solid #e0b400; padding: 8px 12px; font-weight: 600; }
            div.wide { overflow-x: auto; max-width: 100%; }
            table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
            th, td { border: 1px solid #d8dde6; padding: 3px 8px; text-align: right; white-space: nowrap; }
            th { background: #f1f4f9; }
            td.text, th.text { text-align: left; }
            svg { display: block; margin: 8px 0; }
            svg text { font-size: 11px; fill: #1d2430; }
            .legend rect { stroke: none; }
            </style>
            </head>
            <body>
            <h1>Detour daily report: \(escape(content.app)), \(content.date)</h1>
            <p class="meta">Load watermark: \(escape(content.watermark ?? "none (nothing loaded)")); every node's log loaded through \(escape(content.loadedThrough ?? "not yet")) (retention days end there). Days are calendar days in the app's reporting time zone.</p>

            """
        if !content.isComplete {
            html += """
                <p class="partial">Partial report: \(content.date) is not complete yet (not every log is loaded through \
                \(escape(content.requiredWatermark)), or rollup work for it was still queued). Numbers will still change.</p>

                """
        }
        html += "<h2>Installs and clicks per link</h2>\n" + SVGChart.linkBars(linkBars()) + "\n"
        html += "<h2>Link funnel (click → install → app_open → sign_up → purchase)</h2>\n"
        html += SVGChart.funnel(funnelSteps()) + "\n"
        html += "<h2>Retention (install cohorts of the last \(DailyReport.retentionDays) days)</h2>\n"
        html += SVGChart.retentionCurve(retentionPoints()) + "\n"
        for report in content.reports {
            for table in report.tables {
                html += "<h2>" + escape(table.name.replacingAll("_", with: " ")) + "</h2>\n" + htmlTable(table)
            }
        }
        return html + "</body>\n</html>\n"
    }

    /// Links by clicks + installs, the top ones.
    private func linkBars() -> [SVGChart.LinkBar] {
        content.links.rows.map {
            SVGChart.LinkBar(
                label: $0.path, clicks: $0.clicks, installs: $0.attributedInstalls, matched: $0.matchedInstalls)
        }
        .sorted { ($0.clicks + $0.installs, $1.label) > ($1.clicks + $1.installs, $0.label) }
    }

    /// The default funnel summed over links (medians are per link, so not shown here).
    private func funnelSteps() -> [SVGChart.FunnelStep] {
        var steps: [Int: SVGChart.FunnelStep] = [:]
        for row in content.funnel.rows where row.funnelID == "default" {
            steps[row.step, default: SVGChart.FunnelStep(name: row.stepName, devices: 0)].devices += row.devices
        }
        return steps.keys.sorted().map { steps[$0]! }
    }

    /// Share of all cohorts (that reached day N) with an app_open on day N; day 0 is 100%.
    private func retentionPoints() -> [SVGChart.RetentionPoint] {
        var points = [SVGChart.RetentionPoint(day: 0, rate: content.retention.rows.isEmpty ? nil : 1)]
        for (index, n) in RetentionRow.days.enumerated() {
            var size = 0
            var retained = 0
            for row in content.retention.rows {
                guard let count = row.retained[index] else { continue }
                size += row.cohortSize
                retained += count
            }
            points.append(SVGChart.RetentionPoint(day: n, rate: size > 0 ? Double(retained) / Double(size) : nil))
        }
        return points
    }

    private func htmlTable(_ table: ReportTable) -> String {
        guard !table.rows.isEmpty else { return "<p class=\"meta\">No rows.</p>\n" }
        // A wide table (the links table has 30-odd columns) scrolls inside its box, not the page.
        var html = "<div class=\"wide\"><table>\n<tr>"
        for column in table.columns { html += "<th class=\"text\">" + escape(column) + "</th>" }
        html += "</tr>\n"
        for row in table.rows {
            html += "<tr>"
            for value in row {
                switch value {
                case .int, .decimal: html += "<td>" + escape(value.plainText) + "</td>"
                default: html += "<td class=\"text\">" + escape(value.plainText) + "</td>"
                }
            }
            html += "</tr>\n"
        }
        return html + "</table></div>\n"
    }
}

/// Escapes text for HTML element content and attribute values.
///
/// By Unicode scalar, not by `Character`: a grapheme cluster that holds `<` is not equal to "<"
/// (U+0600 ARABIC NUMBER SIGN is a prepended mark, so "\u{0600}<" is one Character), yet the
/// browser reads its `<`. Until 2026-12-02 an event name or UTM value such as
/// `\u{0600}<img src=x onerror=... \u{0600}>`, which anyone with an app's publishable key or a link
/// can send, ran as script in report.html.
func escape(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
