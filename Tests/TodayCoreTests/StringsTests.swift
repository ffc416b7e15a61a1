import Testing
@testable import DBus
@testable import PropertyList
@testable import TodayCore

/// The string and path helpers that stand in for NSString's.
@Suite struct StringsTests {
    @Test func pathsTakenApartAsNSStringDoes() {
        let parents = ["/a/b": "/a", "/a/b/": "/a", "/a": "/", "/": "/", "a": "", "a/b": "a", "/a//b": "/a", "": ""]
        for (path, parent) in parents { #expect(PathText.parent(of: path) == parent, "\(path)") }
        let last = ["/a/b": "b", "/a/b/": "b", "/": "/", "a": "a", "/a/b.plist": "b.plist", "": ""]
        for (path, component) in last { #expect(PathText.lastComponent(of: path) == component, "\(path)") }
    }

    @Test func trimming() {
        #expect(" \tName \u{A0}".trimmingSpaces() == "Name")
        #expect("\nName\n".trimmingSpaces() == "\nName\n", "newlines are not spaces")
        #expect("  ".trimmingSpaces() == "")
        #expect(" \n 12 \u{2028}".trimmingWhitespace() == "12")
        #expect(" \u{301}x ".trimmingWhitespace() == "\u{301}x", "scalar by scalar")
    }

    @Test func replacingScalarByScalar() {
        #expect("a&b".replacingScalars("&", with: "&amp;") == "a&amp;b")
        #expect("&\u{301}".replacingScalars("&", with: "&amp;") == "&amp;\u{301}", "a combining mark does not hide the &")
        #expect("o.e-x".replacingScalars(".", with: "/").replacingScalars("-", with: "_") == "o/e_x")
        #expect("aaa".replacingScalars("aa", with: "b") == "ba")
        #expect("".replacingScalars("a", with: "b") == "")
    }

    @Test func commentsHoldNoDoubleHyphen() {
        let comment = Interface.comment("a---b -- c", indent: "")
        #expect(!comment.dropFirst(4).dropLast(4).contains("--"), "\(comment)")
        #expect(comment.hasPrefix("<!-- a- - -b - - c"))
    }

    @Test func pollTimeoutsAreRoundedUp() {
        // A wait of less than a millisecond is one, not a poll() that
        // returns at once and is called again in a loop.
        #expect((ContinuousClock.now + .microseconds(300)).pollTimeout == 1)
        #expect((ContinuousClock.now - .seconds(1)).pollTimeout == 0)
        let wait = (ContinuousClock.now + .milliseconds(1500)).pollTimeout
        #expect(wait > 1490 && wait <= 1501, "\(wait)")
    }
}

