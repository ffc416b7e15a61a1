import CLibXML2
import FoundationEssentials
import PropertyList

/// A notification body's markup reduced to the Desktop Notifications
/// Specification's subset (SPEC section 14): `<b>`, `<i>`, `<u>` and
/// `<a href="…">` are kept; `<img alt="…">` becomes its alt text (its
/// source is never loaded), `<br>` a line break; every other element is
/// dropped and its text kept, shown as text. The result is well-formed
/// markup of those four elements only, its text escaped, which GTK's and
/// Pango's markup read as it is.
///
/// Senders write bodies as anything from plain text with a bare `&` or `<`
/// ("Tom & Jerry", "a < b") to HTML with unclosed tags, so the body is read
/// by libxml2's HTML parser, which recovers as a browser does, never by
/// patterns. It is parsed inside `<html><body><div>`, so that whitespace
/// between elements is kept; what closes those early is read on.
enum NotificationMarkup {
    /// Longest kept body, in UTF-8 bytes (SPEC section 14).
    static let longestBody = 65_536

    /// `body` reduced to the subset; at most `limit` UTF-8 bytes (cut on a
    /// character of the text, never inside an element or an escape).
    static func reduce(_ body: String, limit: Int = longestBody) -> String {
        // Text with nothing to escape and nothing to leave out is its own
        // reduction. A bare `>` is escaped too: `]]>` is not well-formed
        // in XML's text, and the same text reads the same with or without
        // a `<` elsewhere in the body.
        guard isMarkupOrRefused(body) else { return cut(body, to: limit) }
        var output = Output(limit: limit)
        let document = "<html><body><div>" + body
        LibXML2.ready()
        today_xml_quiet_thread()
        let parsed: htmlDocPtr? = document.withCString { text in
            guard let size = Int32(exactly: document.utf8.count) else { return nil }
            return parse(text, size)
        }
        guard let parsed else {
            // The parser could not start: the whole body as text.
            output.text(body)
            return output.result
        }
        defer { xmlFreeDoc(parsed) }
        output.walk(parsed.pointee.children)
        return output.result
    }

    /// The HTML document of `size` bytes of UTF-8 at `text`, as
    /// `htmlReadMemory` reads it, but read as UTF-8 with no conversion:
    /// named as its encoding, UTF-8 goes through a converter, copied in
    /// small pieces, which cost a Notify with markup more than the parse.
    /// An encoding a body names (`<meta charset>`) is ignored.
    private static func parse(_ text: UnsafePointer<CChar>, _ size: Int32) -> htmlDocPtr? {
        guard let context = htmlCreateMemoryParserCtxt(text, size) else { return nil }
        let options =
            HTML_PARSE_RECOVER.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue | HTML_PARSE_NONET.rawValue
            | HTML_PARSE_IGNORE_ENC.rawValue
        _ = htmlCtxtUseOptions(context, Int32(options))
        _ = xmlSwitchEncoding(context, XML_CHAR_ENCODING_UTF8)
        _ = htmlParseDocument(context)
        // The document is the caller's; where it shares the parser's
        // dictionary, the parser leaves it to the document, as libxml2's
        // own readers do.
        let document = context.pointee.myDoc
        context.pointee.myDoc = nil
        if let document, context.pointee.dictNames != 0, document.pointee.dict == context.pointee.dict { context.pointee.dict = nil }
        htmlFreeParserCtxt(context)
        return document
    }

    /// Cuts `text` to `limit` UTF-8 bytes, on a character, with `…`.
    static func cut(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            guard bytes + size <= limit - 3 else { break }
            result.append(character)
            bytes += size
        }
        return result + "…"
    }

    /// Whether `text` has a `<`, `&` or `>`, or a character markup cannot
    /// hold (`isRefused`): one look at each byte of its UTF-8. Every refused
    /// character is ASCII but U+FFFE and U+FFFF (EF BF BE, EF BF BF).
    static func isMarkupOrRefused(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            for (index, byte) in utf8.enumerated() {
                switch byte {
                case UInt8(ascii: "<"), UInt8(ascii: "&"), UInt8(ascii: ">"): return true
                case UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): continue
                case ..<0x20: return true
                case 0xEF where index + 2 < utf8.count && utf8[index + 1] == 0xBF && utf8[index + 2] >= 0xBE: return true
                default: continue
                }
            }
            return false
        }
    }

    /// Characters that markup cannot hold (XML 1.0, which GTK's markup
    /// follows): control characters but tab, line feed and carriage
    /// return, and U+FFFE and U+FFFF. They are left out.
    static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t" && scalar != "\n" && scalar != "\r") || scalar.value == 0xFFFE || scalar.value == 0xFFFF
    }

    /// Text escaped for markup: `&`, `<`, `>` and, in attributes, `"`;
    /// what markup cannot hold left out.
    static func escape(_ text: String, attribute: Bool = false) -> String {
        // Byte by byte: what is escaped or left out is ASCII, except U+FFFE
        // and U+FFFF (EF BF BE, EF BF BF), and every other byte of the
        // UTF-8 is copied as it is.
        var text = text
        return text.withUTF8 { utf8 in
            var escaped: [UInt8] = []
            escaped.reserveCapacity(utf8.count)
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                switch byte {
                case UInt8(ascii: "&"): escaped.append(contentsOf: "&amp;".utf8)
                case UInt8(ascii: "<"): escaped.append(contentsOf: "&lt;".utf8)
                case UInt8(ascii: ">"): escaped.append(contentsOf: "&gt;".utf8)
                case UInt8(ascii: "\"") where attribute: escaped.append(contentsOf: "&quot;".utf8)
                case UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): escaped.append(byte)
                case ..<0x20: break
                case 0xEF where index + 2 < utf8.count && utf8[index + 1] == 0xBF && utf8[index + 2] >= 0xBE:
                    index += 3
                    continue
                default: escaped.append(byte)
                }
                index += 1
            }
            return String(decoding: escaped, as: UTF8.self)
        }
    }

    /// The reduced markup as it is written: the elements open, text escaped
    /// and counted against the limit.
    private struct Output {
        let limit: Int
        var result = ""
        var full = false
        /// The elements open, innermost last, as their closing tags.
        var open: [String] = []

        init(limit: Int) {
            self.limit = limit
        }

        /// Bytes the closing tags of what is open will take.
        var closing: Int { open.reduce(0) { $0 + $1.utf8.count } }

        mutating func text(_ text: String) {
            guard !full, !text.isEmpty else { return }
            let escaped = escape(text)
            let room = limit - result.utf8.count - closing
            if escaped.utf8.count <= room {
                result += escaped
                return
            }
            // Cut on a character, with `…` (3 bytes), never within an escape.
            for character in text {
                let piece = escape(String(character))
                guard result.utf8.count + piece.utf8.count + 3 + closing <= limit else { break }
                result += piece
            }
            result += "…"
            full = true
        }

        /// Opens `name` (one of the subset) with its opening tag; false where
        /// the limit leaves no room for it and its closing.
        mutating func begin(_ name: String, tag: String) -> Bool {
            let closingTag = "</\(name)>"
            // Bold inside bold adds nothing (a link inside a link is the
            // outer one's).
            guard !open.contains(closingTag) else { return false }
            guard !full, result.utf8.count + tag.utf8.count + closingTag.utf8.count + closing + 3 <= limit else { return false }
            result += tag
            open.append(closingTag)
            return true
        }

        mutating func end() {
            if let tag = open.popLast() { result += tag }
        }

        /// Writes `first` and its siblings, depth first, without recursion
        /// (a body of 64 KiB can nest deeper than a thread's stack).
        mutating func walk(_ first: xmlNodePtr?) {
            // Each level: the next sibling to visit, and whether the element
            // that holds it was opened (its closing is written on leaving).
            var stack: [(next: xmlNodePtr?, opened: Bool)] = [(first, false)]
            while let top = stack.last {
                guard let node = top.next else {
                    stack.removeLast()
                    if top.opened { end() }
                    continue
                }
                stack[stack.count - 1].next = node.pointee.next
                switch node.pointee.type {
                case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                    text(Self.string(node.pointee.content))
                case XML_ELEMENT_NODE:
                    let name = Self.string(node.pointee.name)
                    var opened = false
                    switch name {
                    case "b", "i", "u":
                        opened = begin(name, tag: "<\(name)>")
                    case "a":
                        let href = Self.attribute(node, "href")
                        if let href, !href.isEmpty { opened = begin("a", tag: "<a href=\"\(escape(href, attribute: true))\">") }
                    case "img":
                        text(Self.attribute(node, "alt") ?? "")
                    case "br":
                        text("\n")
                    default:
                        break
                    }
                    stack.append((node.pointee.children, opened))
                default:
                    // Comments, processing instructions: not text.
                    break
                }
            }
        }

        static func string(_ pointer: UnsafePointer<xmlChar>?) -> String {
            guard let pointer else { return "" }
            return String(cString: pointer)
        }

        static func string(_ pointer: UnsafeMutablePointer<xmlChar>?) -> String {
            string(UnsafePointer(pointer))
        }

        /// The value of the attribute `name` (lowercase, as the HTML parser
        /// gives names), its text nodes joined; nil where it has none.
        static func attribute(_ node: xmlNodePtr, _ name: String) -> String? {
            var attribute = node.pointee.properties
            while let current = attribute {
                if string(current.pointee.name) == name {
                    var value = ""
                    var child = current.pointee.children
                    while let text = child {
                        value += string(text.pointee.content)
                        child = text.pointee.next
                    }
                    return value
                }
                attribute = current.pointee.next
            }
            return nil
        }
    }
}
