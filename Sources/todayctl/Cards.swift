import FoundationEssentials
import PropertyList
import TodayCore
import TodayProtocol

/// A widget as `show` draws it, in a terminal or as plain text.
extension TodayCard {
    /// The lines of the card's content, before any frame.
    func contentLines(width: Int) -> [String] {
        var lines: [String] = []
        if let title = snapshot.title { lines += wrap(title, width) }
        if let subtitle = snapshot.subtitle { lines += wrap(subtitle, width) }
        if let body = snapshot.body {
            if !lines.isEmpty { lines.append("") }
            lines += wrap(body, width)
        }
        for item in snapshot.items {
            lines += wrap("• " + item.title + (item.subtitle.map { " (\($0))" } ?? ""), width)
        }
        if let image = snapshot.image { lines.append("[image, \(image.count) bytes]") }
        if let path = snapshot.imagePath { lines += wrap("[image: \(path)]", width) }
        if let url { lines += wrap("→ " + url, width) }
        let actions = snapshot.actions.map { action in
            action.isToggle ? "[\(action.isOn ? "✓" : " ")] \(action.title) (\(action.id))" : "[ \(action.title) ] (\(action.id))"
        }
        if !actions.isEmpty { lines += wrap(actions.joined(separator: "  "), width) }
        if snapshot == Snapshot() { lines.append(hasContent ? "(no snapshot yet)" : "(no content)") }
        return lines
    }

    var status: String {
        var parts = [updated(at: Date())]
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
