import FoundationEssentials
import PropertyList
import TodayCore
import TodayProtocol

/// One widget as `show` draws it.
struct WidgetCard {
    var id: String
    var name: String
    var hasContent: Bool
    /// Nil until the first update.
    var lastResult: UpdateResult?
    var lastFailure: String
    var lastUpdated: UInt64
    var preferredHeight: Double
    var snapshot: PlistDictionary
    /// When the content changes to the timeline's next entry, µs; 0: none.
    var nextEntryDate: UInt64 = 0


    /// The lines of the card's content, before any frame.
    func contentLines(width: Int) -> [String] {
        var lines: [String] = []
        if let title = snapshot["title"]?.string { lines += wrap(title, width) }
        if let subtitle = snapshot["subtitle"]?.string { lines += wrap(subtitle, width) }
        if let body = snapshot["body"]?.string {
            if !lines.isEmpty { lines.append("") }
            lines += wrap(body, width)
        }
        for item in snapshot["items"]?.array ?? [] {
            guard let entry = item.dictionary, let title = entry["title"]?.string else { continue }
            let subtitle = entry["subtitle"]?.string.map { " (\($0))" } ?? ""
            lines += wrap("• " + title + subtitle, width)
        }
        if let image = snapshot["image"]?.data { lines.append("[image, \(image.count) bytes]") }
        if let path = snapshot["image-path"]?.string { lines += wrap("[image: \(path)]", width) }
        if let url = snapshot["url"]?.string { lines += wrap("→ " + url, width) }
        let actions = (snapshot["actions"]?.array ?? []).compactMap { action -> String? in
            guard let id = action["id"]?.string else { return nil }
            let title = action["title"]?.string ?? id
            if action["kind"]?.string == "toggle" { return "[\(action["state"]?.bool == true ? "✓" : " ")] \(title) (\(id))" }
            return "[ \(title) ] (\(id))"
        }
        if !actions.isEmpty { lines += wrap(actions.joined(separator: "  "), width) }
        if snapshot.isEmpty { lines.append(hasContent ? "(no snapshot yet)" : "(no content)") }
        return lines
    }

    var status: String {
        var parts = [TodayCard.updated(lastUpdated, at: Date())]
        if nextEntryDate > 0 { parts.append("changes at \(localTime(nextEntryDate))") }
        if lastResult == .failed { parts.append("✗ last update failed: \(lastFailure)") }
        if !hasContent { parts.append("hidden: no content") }
        return parts.joined(separator: " · ")
    }

    /// The card framed with box-drawing characters, for a terminal.
    func framed(width: Int) -> String {
        let inner = max(20, width - 4)
        var out = "╭─ " + clip(name, inner - 2) + " " + String(repeating: "─", count: max(0, inner - 1 - displayWidth(clip(name, inner - 2)))) + "╮\n"
        for line in contentLines(width: inner) {
            out += "│ " + line + String(repeating: " ", count: max(0, inner - displayWidth(line))) + " │\n"
        }
        let status = clip(self.status, inner)
        out += "│ " + String(repeating: " ", count: inner) + " │\n"
        out += "│ " + status + String(repeating: " ", count: max(0, inner - displayWidth(status))) + " │\n"
        out += "╰" + String(repeating: "─", count: inner + 2) + "╯"
        return out
    }

    /// The card as plain text, for pipes and files.
    func plain(width: Int) -> String {
        var out = "\(name) (\(id))\n"
        for line in contentLines(width: width - 2) { out += (line.isEmpty ? "" : "  " + line) + "\n" }
        out += "  " + status
        return out
    }

    func wrap(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var current = ""
            for word in paragraph.split(separator: " ") {
                var word = String(word)
                while displayWidth(word) > width {
                    if !current.isEmpty {
                        lines.append(current)
                        current = ""
                    }
                    lines.append(String(word.prefix(width)))
                    word = String(word.dropFirst(width))
                }
                if current.isEmpty {
                    current = word
                } else if displayWidth(current) + 1 + displayWidth(word) <= width {
                    current += " " + word
                } else {
                    lines.append(current)
                    current = word
                }
            }
            lines.append(current)
        }
        return lines
    }

    func clip(_ text: String, _ width: Int) -> String {
        displayWidth(text) <= width ? text : String(text.prefix(max(0, width - 1))) + "…"
    }

    func displayWidth(_ text: String) -> Int { text.count }
}
