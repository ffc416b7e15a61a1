// libFuzzer target: bytes -> a value in D-Bus's wire format -> Notify's arguments
// -> the posting todayd makes of them (hints, image-data above all, and the
// body's markup) -> the list (NotificationBook) -> the journal's record and
// the stored form of earlier journals, and back. The bytes themselves are
// also read as a journal, which must take them or leave them, never trap.
// What is refused is refused with InvalidArgs; what is taken is kept whole,
// an image at most 256×256.
//
//   TODAY_FUZZ_SEEDS=DIR notify   writes the seed corpus to DIR and exits
import Foundation

private func notifyArguments(_ body: [Value]) -> (String, UInt32, String, String, String, [String], VariantDictionary, Int32)? {
    guard body.count == 8, case .string(let app) = body[0], case .uint32(let replaces) = body[1], case .string(let icon) = body[2],
        case .string(let summary) = body[3], case .string(let text) = body[4], case .array(.string, let items) = body[5],
        let hints = VariantDictionary(body[6]), case .int32(let timeout) = body[7]
    else { return nil }
    return (app, replaces, icon, summary, text, items.compactMap(\.string), hints, timeout)
}

/// Each seed is Notify's arguments as one structure, in D-Bus's wire format.
private func writeSeeds(to folder: String) {
    func seed(_ name: String, _ arguments: [Value]) {
        guard let bytes = try? Value.structure(arguments).wireBytes() else { return }
        _ = FileManager.default.createFile(atPath: folder + "/" + name, contents: bytes)
    }
    func notify(_ hints: [(String, Value)], body: String = "body") -> [Value] {
        [.string("App"), .uint32(0), .string(""), .string("Summary"), .string(body), .strings(["default", "Open", "reply", "Reply"]),
         VariantDictionary(hints).dbusValue, .int32(-1)]
    }
    let pixels = [UInt8](repeating: 0x7f, count: 4 * 4 * 4)
    func image(_ width: Int32, _ height: Int32, _ stride: Int32, _ alpha: Bool, _ bits: Int32, _ channels: Int32, _ data: [UInt8]) -> Value {
        .structure([.int32(width), .int32(height), .int32(stride), .boolean(alpha), .int32(bits), .int32(channels), .bytes(Data(data))])
    }
    seed("plain", notify([]))
    seed("markup", notify([], body: #"<b>bold</b> <i>it</i> <a href="https://example.org/?a=1&b=2">link</a> <img src="x" alt="pic"/> a < b & c"#))
    seed("image-data", notify([("image-data", image(4, 4, 16, true, 8, 4, pixels))]))
    seed("image-short", notify([("image-data", image(4, 4, 16, true, 8, 4, Array(pixels.prefix(10))))]))
    seed("image-large", notify([("image_data", image(512, 2, 1536, false, 8, 3, [UInt8](repeating: 9, count: 1536 * 2)))]))
    seed("hints", notify([
        ("urgency", .byte(2)), ("category", .string("im.received")), ("desktop-entry", .string("org.example.Chat")),
        ("value", .int32(40)), ("resident", .boolean(true)), ("transient", .boolean(false)),
        ("x-dunst-stack-tag", .string("volume")), ("image-path", .string("file:///tmp/x.png")),
        ("x-other", .uint16(3)),
    ]))
}

private let seeded: Void = {
    if let folder = ProcessInfo.processInfo.environment["TODAY_FUZZ_SEEDS"] {
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        writeSeeds(to: folder)
        exit(0)
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNotify(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    _ = seeded
    // A journal a crash or a stranger left: whatever it holds, it is read or left out.
    _ = NotificationStore.records(in: Data(bytes: bytes, count: count))
    guard case .structure(let arguments)? = try? Value(wireBytes: Data(bytes: bytes, count: count)),
        let (app, replaces, icon, summary, text, actions, hints, timeout) = notifyArguments(arguments)
    else { return 0 }
    let posting: NotificationBook.Posting
    do {
        posting = try NotificationService.posting(
            appName: app, replaces: replaces, appIcon: icon, summary: summary, body: text, actions: actions, hints: hints, timeout: timeout,
            caller: nil)
    } catch let error as TodayError {
        precondition(error.dbusError.name.rawValue == "org.freedesktop.DBus.Error.InvalidArgs", "refused with \(error)")
        return 0
    } catch {
        preconditionFailure("refused with \(error)")
    }
    if let image = posting.notification.image {
        precondition(image.width <= 256 && image.height <= 256, "an image of \(image.width)×\(image.height) kept")
    }
    var book = NotificationBook(lastID: 0, kept: [])
    let now = Date(timeIntervalSince1970: 1_796_083_200)
    guard let (id, _) = try? book.post(posting, at: now), let kept = book.byID[id] else { return 0 }
    let stored = kept.stored
    let again = TodayNotification(stored: stored)
    precondition(again == kept, "the stored form did not read back the same")
    let record = NotificationStore.record(.put(kept))
    precondition(NotificationStore.records(in: Data(record)).records == [.put(kept)], "the journal's record did not read back the same")
    return 0
}
