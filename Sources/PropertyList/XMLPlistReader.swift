import CLibXML2
import FoundationEssentials
import Glibc

/// libxml2, ready for any of its parsers in the process: its one-time
/// set-up (`xmlInitParser`, the nesting limit) done once, before the first
/// parse of any kind.
public enum LibXML2 {
    public static func ready() { _ = XMLPlistReader.initialize }
}

/// Reads XML property lists with libxml2's SAX2 parser: no network, no DTD
/// loading, no entity declarations or references, bounded size and depth.
/// Either the whole value or an error with line and column; never a part.
enum XMLPlistReader {
    static let initialize: Void = {
        xmlInitParser()
        // libxml2 stops at 256 nested elements unless XML_PARSE_HUGE lifts
        // every limit at once; this lifts only the depth, past
        // PlistLimits' own check (512 containers, plus <plist> and a leaf),
        // which is what bounds it.
        today_xml_set_maximum_depth(1024)
    }()

    static func read(_ data: Data, limits: PlistLimits) throws -> PlistValue {
        guard data.count <= limits.maximumSize else {
            throw PlistError("the document is \(data.count) bytes, over the limit of \(limits.maximumSize)")
        }
        guard data.count <= Int(Int32.max) else { throw PlistError("the document is too large") }
        guard !data.isEmpty else { throw PlistError("the document is empty") }
        _ = initialize
        today_xml_quiet_thread()
        let state = SAXState(maximumDepth: limits.maximumDepth)
        let parsed: Bool = data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress?.assumingMemoryBound(to: CChar.self),
                let context = xmlCreateMemoryParserCtxt(base, Int32(buffer.count))
            else { return false }
            defer {
                // libxml2 may start a document to hold declarations even for
                // a SAX parse (it does after some encoding errors); free it.
                if let document = context.pointee.myDoc { xmlFreeDoc(document) }
                xmlFreeParserCtxt(context)
            }
            context.pointee.sax.pointee = SAXState.makeHandler()
            context.pointee._private = Unmanaged.passUnretained(state).toOpaque()
            _ = xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue))
            let status = xmlParseDocument(context)
            if state.error == nil, status != 0 || context.pointee.wellFormed == 0 {
                if let last = xmlCtxtGetLastError(UnsafeMutableRawPointer(context)) {
                    let message = last.pointee.message.map { String(cString: $0) } ?? "malformed XML"
                    state.error = PlistError(
                        message.trimmingWhitespace(),
                        line: Int(last.pointee.line), column: Int(last.pointee.int2))
                } else {
                    state.error = PlistError("malformed XML")
                }
            }
            return true
        }
        guard parsed else { throw PlistError("the XML parser could not start (empty document?)") }
        if let error = state.error { throw error }
        guard let root = state.root else { throw PlistError("the document holds no property-list value") }
        return root
    }
}

/// What the SAX callbacks build. One per parse, reached through the
/// parser context's `_private` pointer. The parser calls back on one thread
/// and nothing else sees the state during a parse, so its properties skip
/// the run-time exclusivity checks, which otherwise cost a tenth of a parse.
private final class SAXState {
    enum Kind { case key, string, integer, real, date, data, boolean }

    final class Container {
        enum Shape { case plist, array, dict }
        let shape: Shape
        @exclusivity(unchecked) var values: [PlistValue] = []
        @exclusivity(unchecked) var keys: [String] = []
        @exclusivity(unchecked) var pendingKey: String?
        init(_ shape: Shape) { self.shape = shape }
    }

    let maximumDepth: Int
    @exclusivity(unchecked) var containers: [Container] = []
    @exclusivity(unchecked) var scalar: Kind?
    @exclusivity(unchecked) var booleanValue = false
    @exclusivity(unchecked) var text: [UInt8] = []
    @exclusivity(unchecked) var root: PlistValue?
    @exclusivity(unchecked) var error: PlistError?

    init(maximumDepth: Int) { self.maximumDepth = maximumDepth }

    static func from(_ context: UnsafeMutableRawPointer?) -> (SAXState, xmlParserCtxtPtr)? {
        guard let context else { return nil }
        let parser = context.assumingMemoryBound(to: xmlParserCtxt.self)
        guard let state = parser.pointee._private else { return nil }
        return (Unmanaged<SAXState>.fromOpaque(state).takeUnretainedValue(), parser)
    }

    func fail(_ message: String, _ parser: xmlParserCtxtPtr) {
        if error == nil {
            let raw = UnsafeMutableRawPointer(parser)
            error = PlistError(
                message, line: Int(xmlSAX2GetLineNumber(raw)), column: Int(xmlSAX2GetColumnNumber(raw)))
        }
        xmlStopParser(parser)
    }

    // MARK: Building values

    enum Element { case plist, array, dict, key, string, integer, real, date, data, `true`, `false` }

    /// The element a name stands for, matched on its bytes.
    static func element(_ name: UnsafePointer<xmlChar>) -> Element? {
        func equals(_ literal: StaticString) -> Bool {
            strcmp(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self),
                   UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)) == 0
        }
        switch name[0] {
        case UInt8(ascii: "k"): return equals("key") ? .key : nil
        case UInt8(ascii: "s"): return equals("string") ? .string : nil
        case UInt8(ascii: "i"): return equals("integer") ? .integer : nil
        case UInt8(ascii: "r"): return equals("real") ? .real : nil
        case UInt8(ascii: "t"): return equals("true") ? .true : nil
        case UInt8(ascii: "f"): return equals("false") ? .false : nil
        case UInt8(ascii: "a"): return equals("array") ? .array : nil
        case UInt8(ascii: "p"): return equals("plist") ? .plist : nil
        case UInt8(ascii: "d"): return equals("dict") ? .dict : equals("data") ? .data : equals("date") ? .date : nil
        default: return nil
        }
    }

    func start(_ name: UnsafePointer<xmlChar>, _ parser: xmlParserCtxtPtr) {
        if scalar != nil {
            return fail("<\(String(cString: name))> inside a <\(kindName)>, which holds only text", parser)
        }
        guard let element = Self.element(name) else {
            return fail("unknown element <\(String(cString: name))>", parser)
        }
        switch element {
        case .plist:
            guard containers.isEmpty, root == nil else { return fail("<plist> must be the root element", parser) }
            containers.append(Container(.plist))
        case .array, .dict:
            guard checkPlace(for: name, parser) else { return }
            guard containers.count <= maximumDepth else {
                return fail("nested deeper than \(maximumDepth) levels", parser)
            }
            containers.append(Container(element == .array ? .array : .dict))
        case .key:
            guard let top = containers.last, top.shape == .dict else {
                return fail("<key> outside a <dict>", parser)
            }
            guard top.pendingKey == nil else { return fail("two <key>s in a row; each needs a value", parser) }
            begin(.key)
        case .string: if checkPlace(for: name, parser) { begin(.string) }
        case .integer: if checkPlace(for: name, parser) { begin(.integer) }
        case .real: if checkPlace(for: name, parser) { begin(.real) }
        case .date: if checkPlace(for: name, parser) { begin(.date) }
        case .data: if checkPlace(for: name, parser) { begin(.data) }
        case .true, .false:
            if checkPlace(for: name, parser) {
                booleanValue = element == .true
                begin(.boolean)
            }
        }
    }

    private func begin(_ kind: Kind) {
        scalar = kind
        text.removeAll(keepingCapacity: true)
    }

    private func checkPlace(for name: UnsafePointer<xmlChar>, _ parser: xmlParserCtxtPtr) -> Bool {
        guard let top = containers.last else {
            let element = String(cString: name)
            if root != nil { fail("a second root value <\(element)>", parser); return false }
            return true
        }
        switch top.shape {
        case .plist where !top.values.isEmpty:
            fail("<plist> holds one value; found a second <\(String(cString: name))>", parser)
            return false
        case .dict where top.pendingKey == nil:
            fail("<\(String(cString: name))> in a <dict> without a <key> before it", parser)
            return false
        default:
            return true
        }
    }

    private var kindName: String {
        switch scalar {
        case .key: "key"
        case .string: "string"
        case .integer: "integer"
        case .real: "real"
        case .date: "date"
        case .data: "data"
        case .boolean: booleanValue ? "true" : "false"
        case nil: "value"
        }
    }

    func end(_ parser: xmlParserCtxtPtr) {
        if let kind = scalar {
            scalar = nil
            switch kind {
            case .key:
                containers.last?.pendingKey = String(decoding: text, as: UTF8.self)
            case .string:
                add(.string(String(decoding: text, as: UTF8.self)), parser)
            case .boolean:
                guard text.allSatisfy(Self.isSpace) else {
                    return fail("<\(booleanValue)/> must be empty", parser)
                }
                add(.boolean(booleanValue), parser)
            case .integer:
                guard let value = PlistText.integer(text) else {
                    return fail("'\(String(decoding: text, as: UTF8.self))' is not an integer in the 64-bit range", parser)
                }
                add(value, parser)
            case .real:
                guard let value = PlistText.real(text) else {
                    return fail("'\(String(decoding: text, as: UTF8.self))' is not a real number", parser)
                }
                add(.real(value), parser)
            case .date:
                guard let value = PlistText.date(text) else {
                    return fail(
                        "'\(String(decoding: text, as: UTF8.self))' is not a date of the form 2024-01-31T12:00:00Z", parser)
                }
                add(.date(value), parser)
            case .data:
                guard let value = PlistText.data(text) else { return fail("<data> is not valid base64", parser) }
                add(.data(value), parser)
            }
            return
        }
        guard let top = containers.popLast() else { return }
        switch top.shape {
        case .plist:
            guard let value = top.values.first else { return fail("<plist> holds no value", parser) }
            root = value
        case .array:
            add(.array(top.values), parser)
        case .dict:
            guard top.pendingKey == nil else { return fail("<key>\(top.pendingKey ?? "")</key> has no value", parser) }
            add(.dictionary(PlistDictionary(readingKeys: top.keys, values: top.values)), parser)
        }
    }

    private func add(_ value: PlistValue, _ parser: xmlParserCtxtPtr) {
        guard let top = containers.last else {
            root = value
            return
        }
        guard top.shape == .dict, let key = top.pendingKey else {
            top.values.append(value)
            return
        }
        top.pendingKey = nil
        top.keys.append(key)
        top.values.append(value)
    }

    func characters(_ bytes: UnsafePointer<xmlChar>, _ count: Int, _ parser: xmlParserCtxtPtr) {
        let buffer = UnsafeBufferPointer(start: bytes, count: count)
        if scalar != nil {
            text.append(contentsOf: buffer)
        } else if !buffer.allSatisfy(Self.isSpace) {
            fail("text outside a value", parser)
        }
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D }

    // MARK: The SAX handler

    static func makeHandler() -> xmlSAXHandler {
        var sax = xmlSAXHandler()
        sax.initialized = UInt32(XML_SAX2_MAGIC)
        sax.startElementNs = { context, name, _, _, _, _, _, _, _ in
            guard let (state, parser) = SAXState.from(context), let name else { return }
            state.start(name, parser)
        }
        sax.endElementNs = { context, _, _, _ in
            guard let (state, parser) = SAXState.from(context) else { return }
            state.end(parser)
        }
        sax.characters = { context, bytes, count in
            guard let (state, parser) = SAXState.from(context), let bytes else { return }
            state.characters(bytes, Int(count), parser)
        }
        sax.cdataBlock = sax.characters
        sax.internalSubset = { context, _, _, _ in
            // Called at <!DOCTYPE …>; refuse when an internal subset `[` follows.
            guard let (state, parser) = SAXState.from(context), let input = parser.pointee.input,
                var cursor = input.pointee.cur
            else { return }
            let end = input.pointee.end
            while cursor != end, SAXState.isSpace(cursor.pointee) { cursor += 1 }
            if cursor != end, cursor.pointee == UInt8(ascii: "[") {
                state.fail("a DOCTYPE with an internal subset is not allowed in a property list", parser)
            }
        }
        sax.entityDecl = { context, name, _, _, _, _ in
            guard let (state, parser) = SAXState.from(context) else { return }
            state.fail("entity declarations are not allowed (\(name.map { String(cString: $0) } ?? ""))", parser)
        }
        sax.getEntity = { context, name in
            guard let (state, parser) = SAXState.from(context) else { return nil }
            state.fail("entity references are not allowed (&\(name.map { String(cString: $0) } ?? "");)", parser)
            return nil
        }
        sax.getParameterEntity = sax.getEntity
        sax.reference = { context, name in
            guard let (state, parser) = SAXState.from(context) else { return }
            state.fail("entity references are not allowed (&\(name.map { String(cString: $0) } ?? "");)", parser)
        }
        sax.processingInstruction = { context, target, _ in
            guard let (state, parser) = SAXState.from(context) else { return }
            state.fail("processing instructions are not allowed (<?\(target.map { String(cString: $0) } ?? "")?>)", parser)
        }
        // Errors are collected from the context; nothing is printed.
        sax.serror = { _, _ in }
        return sax
    }
}
