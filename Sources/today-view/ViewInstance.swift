import DBus
import FoundationEssentials

/// One Today view per session (SPEC section 15): the running view owns
/// `io.github.todayd.TodayView`; `today-view --toggle` shows or hides it,
/// a second `today-view` brings it forward. A view that takes pictures
/// (`--screenshot`) stands alone.
enum ViewInstance {
    static let name = BusName("io.github.todayd.TodayView")
    static let path = ObjectPath("/io/github/todayd/TodayView")

    static let toggle = MethodDeclaration(MemberName("Toggle"), doc: "Shows the view, or hides it where it is shown.")
    static let present = MethodDeclaration(MemberName("Present"), doc: "Shows the view and brings it forward.")
    static let interface = Interface(
        InterfaceName("io.github.todayd.TodayView"), methods: [toggle, present],
        doc: "io.github.todayd.TodayView: the running Today view, shown or hidden.")

    /// What became of the name.
    enum Claim {
        /// This view serves it.
        case ours
        /// Another view serves it, and was asked to toggle or present itself.
        case handedOver
        /// Neither: no answer from the bus, or from the other view.
        case failed(String)
    }

    /// Serves the interface (its calls run `toggled` and `presented`), then
    /// asks for the name; where another view has it, asks that one to
    /// toggle (or present) itself instead. Blocks: called before GTK runs.
    static func claim(_ connection: Connection, toggling: Bool, toggled: @escaping @Sendable () -> Void, presented: @escaping @Sendable () -> Void)
        -> Claim
    {
        connection.objects.export(
            path,
            [
                ExportedInterface(
                    interface,
                    bindings: [
                        toggle.immediate { _ in
                            toggled()
                            return []
                        },
                        present.immediate { _ in
                            presented()
                            return []
                        },
                    ])
            ])
        do {
            let reply = try connection.callBlocking(
                .bus, path: ObjectPath("/org/freedesktop/DBus"), interface: .bus, member: MemberName("RequestName"),
                [.string(name.rawValue), .uint32(Connection.RequestNameFlags.doNotQueue.rawValue)])
            let answer = try reply.value(UInt32.self, answering: "RequestName")
            guard answer == Connection.RequestNameReply.exists.rawValue else { return .ours }
            connection.objects.unexport(path)
            try connection.callBlocking(name, path: path, interface: interface.name, toggling ? toggle : present)
            return .handedOver
        } catch {
            return .failed("\(error)")
        }
    }
}
