// libFuzzer target: bytes -> a notification body -> NotificationMarkup.reduce.
// Whatever a sender writes, the result is at most the limit, and it is
// well-formed markup (libxml2's XML parser reads it inside a root element)
// of <b>, <i>, <u> and <a href> only, the last with no other attribute.
import CLibXML2
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNotificationMarkup(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let body = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    let limit = 4096
    let reduced = NotificationMarkup.reduce(body, limit: limit)
    precondition(reduced.utf8.count <= limit, "\(reduced.utf8.count) bytes, over the limit of \(limit)")
    let document = "<r>" + reduced + "</r>"
    let parsed = document.withCString { xmlReadMemory($0, Int32(document.utf8.count), nil, "UTF-8", Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)) }
    guard let parsed else { preconditionFailure("not well-formed: \(reduced.debugDescription)") }
    defer { xmlFreeDoc(parsed) }
    var stack: [xmlNodePtr?] = [xmlDocGetRootElement(parsed)?.pointee.children]
    while let top = stack.popLast() {
        guard let node = top else { continue }
        stack.append(node.pointee.next)
        guard node.pointee.type == XML_ELEMENT_NODE else { continue }
        let name = String(cString: node.pointee.name)
        precondition(["b", "i", "u", "a"].contains(name), "element <\(name)> in \(reduced.debugDescription)")
        var attribute = node.pointee.properties
        while let current = attribute {
            precondition(name == "a" && String(cString: current.pointee.name) == "href", "attribute on <\(name)> in \(reduced.debugDescription)")
            attribute = current.pointee.next
        }
        stack.append(node.pointee.children)
    }
    return 0
}
