// Battery: UPower's display device (the battery the desktop's own
// indicator shows) on the system bus, followed live: the provider lives on
// the session bus, reads the device once, and from then on learns of
// changes from its PropertiesChanged signals, asking todayd to reload
// only when one comes. Where there is no battery the widget says it has no
// content, and panels hide it.
import DBus
import Foundation
import PropertyList
import Synchronization
import TodayKit

/// What UPower says of a power device (its org.freedesktop.UPower.Device
/// properties), as far as the widget shows it.
public struct PowerDevice: Sendable, Equatable {
    /// UPower's device kinds, of which the widget shows one.
    public static let batteryType: UInt32 = 2

    public enum State: UInt32, Sendable {
        case unknown = 0, charging, discharging, empty, fullyCharged, pendingCharge, pendingDischarge
    }

    public var type: UInt32 = 0
    public var isPresent = false
    public var percentage = 0.0
    public var state = State.unknown
    /// Seconds; 0 when UPower does not know.
    public var timeToEmpty: Int64 = 0
    public var timeToFull: Int64 = 0
    public var iconName = ""

    public init() {}

    /// Takes in the properties UPower sent (all of them, or those that changed).
    public mutating func apply(_ properties: [String: Value]) {
        if let value = properties["Type"]?.int64, let type = UInt32(exactly: value) { self.type = type }
        if let value = properties["IsPresent"]?.bool { isPresent = value }
        if let value = properties["Percentage"]?.double { percentage = value }
        if let value = properties["State"]?.int64, let raw = UInt32(exactly: value) { state = State(rawValue: raw) ?? .unknown }
        if let value = properties["TimeToEmpty"]?.int64 { timeToEmpty = value }
        if let value = properties["TimeToFull"]?.int64 { timeToFull = value }
        if let value = properties["IconName"]?.string { iconName = value }
    }

    /// Whether there is a battery to show.
    public var hasBattery: Bool { isPresent && type == Self.batteryType }

    public var snapshot: Snapshot {
        guard hasBattery else { return Snapshot(title: "No battery", subtitle: "This computer runs on mains power") }
        let percent = "\(Int(percentage.rounded())) %"
        let status: String
        switch state {
        case .charging, .pendingCharge:
            status = timeToFull > 0 ? "Charging, full in \(Self.duration(timeToFull))" : "Charging"
        case .discharging, .pendingDischarge:
            status = timeToEmpty > 0 ? "\(Self.duration(timeToEmpty)) left" : "On battery"
        case .fullyCharged: status = "Fully charged"
        case .empty: status = "Empty"
        case .unknown: status = "Not charging"
        }
        let icon = (iconName.isEmpty ? nil : Icons.path(iconName.replacingOccurrences(of: "-symbolic", with: ""))) ?? Icons.path(fallbackIcon)
        return Snapshot(
            title: percent, subtitle: status, imagePath: icon, accessibilityLabel: "Battery \(percent), \(status.lowercased())",
            extra: ["percentage": .real(percentage), "charging": .boolean(state == .charging || state == .pendingCharge)])
    }

    /// The theme's battery icon for the level and state.
    var fallbackIcon: String {
        let level = percentage < 10 ? "caution" : percentage < 30 ? "low" : percentage < 80 ? "good" : "full"
        return "battery-\(level)" + (state == .charging || state == .pendingCharge ? "-charging" : "")
    }

    /// "1 h 5 min", "45 min".
    public static func duration(_ seconds: Int64) -> String {
        let minutes = (seconds + 30) / 60
        return minutes >= 60 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
    }
}

/// The Battery widget's provider, on the bus.
public final class BatteryProvider: BusWidgetProvider {
    public static let kind = "io.github.todayd.Essentials.Battery"
    static let upower = BusName("org.freedesktop.UPower")
    static let devicePath = ObjectPath("/org/freedesktop/UPower/devices/DisplayDevice")
    static let deviceInterface = InterfaceName("org.freedesktop.UPower.Device")

    /// Nil where there is no system bus (a container, a minimal system):
    /// then there is no UPower, and no battery to show.
    private let system: Connection?
    private let device = Mutex(PowerDevice())
    /// Whether todayd was last told there is content; nil before the first answer.
    private let shownHasContent = Mutex<Bool?>(nil)
    private let reloader = Reloader(kind: kind)

    /// Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, else the
    /// standard socket) and starts following the display device.
    public init() throws {
        let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
        do {
            system = try Connection(address: address)
        } catch {
            FileHandle.standardError.write(Data("Battery: no system bus at \(address) (\(error)): no battery is shown\n".utf8))
            system = nil
            return
        }
        guard let system else { return }
        try system.subscribeBlocking(
            MatchRule(path: Self.devicePath, interface: .properties, member: MemberName("PropertiesChanged"), arg0: Self.deviceInterface.rawValue)
        ) { [self] message in
            guard let changed = message.body.dropFirst().first?.stringDictionary else { return }
            device.withLock { $0.apply(changed) }
            changedDevice()
        }
        // UPower restarted (or started): read the device again, off the
        // connection's own thread.
        try system.subscribeBlocking(MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged, arg0: Self.upower.rawValue)) {
            [self] _ in
            Thread.detachNewThread { self.readDevice() }
        }
        readDevice()
    }

    /// Reads every property of the device; where UPower does not answer, no battery.
    func readDevice() {
        var fresh = PowerDevice()
        if let system, let reply = try? system.callBlocking(
            Self.upower, path: Self.devicePath, interface: .properties, member: MemberName("GetAll"), [.string(Self.deviceInterface.rawValue)],
            timeout: .seconds(5)), let properties = reply.body.first?.stringDictionary
        {
            fresh.apply(properties)
        }
        let differs = device.withLock { device in
            defer { device = fresh }
            return device != fresh
        }
        if differs { changedDevice() }
    }

    /// Tells todayd whether there is a battery (when that changed) and to
    /// show the device as it is now.
    private func changedDevice() {
        let hasBattery = device.withLock { $0.hasBattery }
        let tell = shownHasContent.withLock { shown in
            defer { shown = hasBattery }
            return shown != nil && shown != hasBattery
        }
        if tell {
            Thread.detachNewThread {
                WidgetController.widgetController().setHasContent(hasBattery, forWidgetWithBundleIdentifier: Self.kind)
            }
        }
        reloader.changed()
    }

    public func update(in context: ProviderContext, previous: Snapshot) -> (UpdateResult, Snapshot) {
        if context.isPreview {
            var sample = PowerDevice()
            sample.apply(["Type": .uint32(2), "IsPresent": .boolean(true), "Percentage": .double(76), "State": .uint32(2), "TimeToEmpty": .int64(11_400)])
            return (.newData, sample.snapshot)
        }
        let device = device.withLock { $0 }
        let first = shownHasContent.withLock { shown in
            defer { shown = device.hasBattery }
            return shown == nil
        }
        // The first answer says whether there is anything to show at all.
        if first {
            // Not awaited: todayd is waiting for this answer.
            Thread.detachNewThread {
                WidgetController.widgetController().setHasContent(device.hasBattery, forWidgetWithBundleIdentifier: Self.kind)
            }
        }
        let snapshot = device.snapshot
        return (snapshot == previous ? .noData : .newData, snapshot)
    }
}
