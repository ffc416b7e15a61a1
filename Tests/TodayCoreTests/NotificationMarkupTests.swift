import Testing
@testable import TodayCore

/// Body markup reduced to the specification's subset (SPEC section 14),
/// as senders write it: plain text with bare `&` and `<`, the subset,
/// HTML, broken tags, and what tries to get out of the subset.
@Suite struct NotificationMarkupTests {
    struct Case: CustomTestStringConvertible {
        let body: String
        let reduced: String
        var testDescription: String { body.debugDescription }
    }

    static let cases: [Case] = [
        Case(body: "plain text\nover two lines", reduced: "plain text\nover two lines"),
        Case(body: "Tom & Jerry", reduced: "Tom &amp; Jerry"),
        Case(body: "a < b and c > d", reduced: "a &lt; b and c &gt; d"),
        Case(body: "c > d", reduced: "c &gt; d"),
        Case(body: "]]>", reduced: "]]&gt;"),
        Case(body: "<b>bold</b> <i>italic</i> <u>under</u>", reduced: "<b>bold</b> <i>italic</i> <u>under</u>"),
        Case(body: "<B>upper</B>", reduced: "<b>upper</b>"),
        Case(body: #"<a href="https://example.org/?a=1&amp;b=2">link</a>"#, reduced: #"<a href="https://example.org/?a=1&amp;b=2">link</a>"#),
        Case(body: #"<a href='x"y'>q</a>"#, reduced: #"<a href="x&quot;y">q</a>"#),
        Case(body: "<a>no href</a>", reduced: "no href"),
        Case(body: #"<a href="https://example.org" onclick="x()" style="color:red">l</a>"#, reduced: #"<a href="https://example.org">l</a>"#),
        Case(body: #"see <img src="/etc/passwd" alt="a picture"/>!"#, reduced: "see a picture!"),
        Case(body: #"<img src="https://tracker.example/p.gif">"#, reduced: ""),
        Case(body: "one<br>two<br/>three", reduced: "one\ntwo\nthree"),
        Case(body: "<b>unclosed", reduced: "<b>unclosed</b>"),
        Case(body: "<b><i>crossed</b></i>", reduced: "<b><i>crossed</i></b>"),
        Case(body: #"<span foreground="red">span</span> <font color="red">font</font>"#, reduced: "span font"),
        Case(body: "<script>alert(1)</script>", reduced: "alert(1)"),
        Case(body: "&lt;b&gt; is shown &amp; not bold", reduced: "&lt;b&gt; is shown &amp; not bold"),
        Case(body: "&nbsp;&copy;&#x41;&#66;", reduced: "\u{a0}©AB"),
        Case(body: "</div></body></html><b>after the wrapper</b>", reduced: "<b>after the wrapper</b>"),
        Case(body: "<!-- hidden -->shown", reduced: "shown"),
        Case(body: "<p>one</p><p>two</p>", reduced: "onetwo"),
        Case(body: "", reduced: ""),
        Case(body: "bell\u{07} and\u{1c} escape\u{1b}[31m\tend", reduced: "bell and escape[31m\tend"),
        Case(body: "<b>\u{01}x\u{FFFF}</b>", reduced: "<b>x</b>"),
        Case(body: "<i>Zoë & Jürgen</i> 東京 🚋", reduced: "<i>Zoë &amp; Jürgen</i> 東京 🚋"),
        // The body is UTF-8 whatever it says.
        Case(body: #"<meta charset="iso-8859-1">Zoë <b>é</b>"#, reduced: "Zoë <b>é</b>"),
        Case(body: #"<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">Zoë"#, reduced: "Zoë"),
    ]

    @Test(arguments: cases) func reduced(_ item: Case) {
        #expect(NotificationMarkup.reduce(item.body) == item.reduced)
    }

    /// Plain text goes past the parser: the one look at its bytes finds
    /// what the parser is needed for exactly where a look at its markup
    /// characters and at its scalars finds it, short strings and long,
    /// the bytes of U+FFFE and U+FFFF and their neighbours included.
    @Test func theLookForMarkupFindsWhatTheParserIsFor() {
        let pieces = [
            "", "a", "plain", "tab\tnew\nline\r", "\u{01}", "\u{1f}", "\u{7f}", "<", "&", ">", "é", "東京", "🚋",
            "\u{FFFD}", "\u{FFFE}", "\u{FFFF}", "\u{FEFF}", "\u{10FFFF}", "\u{EFBF}",
        ]
        func reference(_ text: String) -> Bool {
            text.utf8.contains { $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: ">") }
                || text.unicodeScalars.contains(where: NotificationMarkup.isRefused)
        }
        for first in pieces {
            for second in pieces {
                for text in [first + second, String(repeating: "long text ", count: 3) + first + second, first + second + "…"] {
                    #expect(NotificationMarkup.isMarkupOrRefused(text) == reference(text), "\(text.debugDescription)")
                }
            }
        }
    }

    @Test func aLongBodyIsCutOnACharacterOutsideAnyElement() {
        let body = "<b>" + String(repeating: "é&", count: 100) + "</b>"
        let reduced = NotificationMarkup.reduce(body, limit: 64)
        #expect(reduced.utf8.count <= 64, "\(reduced.utf8.count)")
        #expect(reduced.hasPrefix("<b>é&amp;é&amp;"))
        #expect(reduced.hasSuffix("…</b>"), "\(reduced)")
        // Plain text is cut the same way.
        #expect(NotificationMarkup.reduce(String(repeating: "x", count: 100), limit: 10) == "xxxxxxx…")
    }

    @Test func deepNestingIsReadWithoutRecursion() {
        // 20,000 levels: more than a thread's stack would take recursively.
        // An element inside one of its own name adds nothing and is not
        // repeated; libxml2 stops reading at its depth limit (1,024).
        #expect(NotificationMarkup.reduce(String(repeating: "<b>", count: 20_000) + "deep") == "<b></b>")
        #expect(NotificationMarkup.reduce(String(repeating: "<b><i>", count: 100) + "deep") == "<b><i>deep</i></b>")
    }
}
