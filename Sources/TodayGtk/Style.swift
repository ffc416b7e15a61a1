import DBus
import FoundationEssentials
import Posix

/// Light or dark: what the user asked for (`--style`), else what the
/// desktop prefers (the XDG settings portal's `color-scheme`), followed
/// live; without a portal, GTK's own setting (GTK_THEME, settings.ini).
package enum Style: String {
    case system, light, dark

    package static let portal = BusName("org.freedesktop.portal.Desktop")
    package static let portalPath = ObjectPath("/org/freedesktop/portal/desktop")
    package static let settings = InterfaceName("org.freedesktop.portal.Settings")

    /// The portal's answer: 1 prefers dark, 2 prefers light, 0 neither.
    package static func colorScheme(_ value: Value?) -> Bool? {
        var value = value
        while case .variant(let inner)? = value { value = inner }
        switch value {
        case .uint32(1)?: return true
        case .uint32(2)?: return false
        default: return nil
        }
    }

    /// Calls `apply` with the desktop's preference now and whenever it
    /// changes (true: dark); never where there is no portal. `known` is
    /// called once the first answer (or its absence) is in.
    package static func follow(on connection: Connection, _ apply: @escaping @Sendable (Bool) -> Void, known: @escaping @Sendable () -> Void) {
        Task.detached {
            let rule = MatchRule(interface: settings, member: MemberName("SettingChanged"), arg0: "org.freedesktop.appearance")
            _ = try? await connection.subscribe(rule) { message in
                guard let (_, key, value) = try? message.values(String.self, String.self, Variant.self), key == "color-scheme",
                    let dark = colorScheme(value.value)
                else { return }
                apply(dark)
            }
            // A portal that is there answers at once; a busy machine can
            // take a while, and the first picture waits for it.
            do {
                let reply = try await connection.call(
                    portal, path: portalPath, interface: settings, member: MemberName("Read"),
                    [.string("org.freedesktop.appearance"), .string("color-scheme")], timeout: .seconds(10))
                if let value = try? reply.value(Variant.self, answering: "Read"), let dark = colorScheme(value.value) { apply(dark) }
            } catch let error as DBusError where error.name == .noReply || error.name == .timeout {
                FileDescriptor.standardError.writeAll("\(programName): the settings portal did not answer within 10 s; light or dark as GTK has it\n")
            } catch {
                // No portal, or no such setting: GTK's own.
            }
            known()
        }
    }
}
