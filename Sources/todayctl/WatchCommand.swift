import DBus
import FoundationEssentials
import Posix
import Glibc
import PropertyList
import TodayCore
import TodayProtocol

// MARK: Watching

func watch(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.isEmpty else { throw Failure.usage("watch takes no arguments") }
    let events = AsyncStream<Message>.makeStream()
    let connection = client.connection
    try await client.subscribeToTodayd([
        MatchRule(interface: .properties, member: .propertiesChanged),
        MatchRule(interface: Today.widget.name, member: Today.Widget.updated.name),
        MatchRule(interface: .objectManager),
    ]) { events.continuation.yield($0) }
    // Watching starts only with todayd running: without it, GetNameOwner
    // fails and the user is told to start it.
    _ = try await Client.attempt { try await connection.callBus(.getNameOwner, [.string(Today.busName.rawValue)]) }
    _ = try await Client.attempt {
        try await connection.subscribe(
            MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged, arg0: Today.busName.rawValue)
        ) { events.continuation.yield($0) }
    }
    connection.onDisconnect { events.continuation.finish() }
    // Every subscription is confirmed by now: what happens after this line is reported.
    if json {
        Out.json(.dictionary(["event": .string("watching")]), compact: true)
    } else {
        Out.line("watching todayd (Ctrl-C to stop)")
    }
    var seen = Set<String>()
    for await message in events.stream {
        guard seen.insert("\(message.sender ?? "") \(message.serial)").inserted else { continue }
        let path = message.path?.rawValue ?? ""
        let object = path.split(separator: "/").last.flatMap { ObjectPath.unescape(String($0)) } ?? path
        switch message.member {
        case MemberName.propertiesChanged.rawValue:
            let changed = message.body.count > 1 ? message.body[1].stringDictionary ?? [:] : [:]
            let values = (try? ValueMapping.plist(.vardict(changed.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))) ?? .dictionary([:])
            if json {
                Out.json(.dictionary(["event": .string("changed"), "object": .string(object), "properties": values]), compact: true)
            } else {
                let text = (values.dictionary ?? [:]).map { key, value in
                    switch (key, value) {
                    case (Today.Widget.snapshot.name, _): "Snapshot=\(snapshotSummary(value))"
                    // A widget's `t` of 0: never updated, nothing scheduled, no next entry.
                    case (_, .date(let date)) where date.timeIntervalSince1970 == 0: "\(key)=none"
                    default: "\(key)=\(describe(value))"
                    }
                }
                Out.line("\(timestamp()) \(object): " + text.joined(separator: " "))
            }
        case Today.Widget.updated.name.rawValue:
            let result = (try? message.value(String.self)) ?? ""
            if json {
                Out.json(.dictionary(["event": .string("updated"), "object": .string(object), "result": .string(result)]), compact: true)
            } else {
                Out.line("\(timestamp()) \(object): updated: \(result)")
            }
        case MemberName.nameOwnerChanged.rawValue:
            let owner = (try? message.values(String.self, String.self, String.self))?.2 ?? ""
            let event = owner.isEmpty ? "todayd-stopped" : "todayd-started"
            if json {
                Out.json(.dictionary(["event": .string(event)]), compact: true)
            } else {
                Out.line("\(timestamp()) todayd \(owner.isEmpty ? "stopped" : "started")")
            }
        case MemberName.interfacesAdded.rawValue, MemberName.interfacesRemoved.rawValue:
            let target = message.body.first.flatMap { try? ObjectPath(dbusValue: $0).rawValue } ?? ""
            let id = target.split(separator: "/").last.flatMap { ObjectPath.unescape(String($0)) } ?? target
            let event = message.member == MemberName.interfacesAdded.rawValue ? "added" : "removed"
            if json {
                Out.json(.dictionary(["event": .string(event), "object": .string(id)]), compact: true)
            } else {
                Out.line("\(timestamp()) \(id): \(event)")
            }
        default: continue
        }
    }
    throw Failure.refused("the connection to the bus was lost")
}

/// A byte as two lowercase hexadecimal digits.
func hex(_ byte: UInt8) -> String { (byte < 16 ? "0" : "") + String(byte, radix: 16) }

/// The local time of day now, HH:MM:SS.
func timestamp() -> String { localTime(nowMicroseconds()) }
