import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Notification sounds (SPEC section 14's `sound-file`, `sound-name` and
/// `suppress-sound`): names looked up in sound themes as the XDG Sound
/// Theme Specification says, and played by a real player (mpv, writing
/// what it decodes to a file) that todayd starts for a notify-send.
@Suite struct NotificationSoundTests {
    /// A WAV file of `seconds` of a 440 Hz tone, 16-bit mono at 8 kHz.
    static func tone(seconds: Double = 0.3) -> Data {
        let rate = 8000
        let samples = Int(Double(rate) * seconds)
        var data = Data()
        func put(_ value: UInt32, _ bytes: Int) {
            for index in 0..<bytes { data.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(index)))) }
        }
        data.append(contentsOf: Array("RIFF".utf8))
        put(UInt32(36 + samples * 2), 4)
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        put(16, 4)
        put(1, 2)  // PCM
        put(1, 2)  // mono
        put(UInt32(rate), 4)
        put(UInt32(rate * 2), 4)
        put(2, 2)
        put(16, 2)
        data.append(contentsOf: Array("data".utf8))
        put(UInt32(samples * 2), 4)
        for index in 0..<samples {
            let sample = Int16(sin(Double(index) * 2 * .pi * 440 / Double(rate)) * 12_000)
            put(UInt32(UInt16(bitPattern: sample)), 2)
        }
        return data
    }

    static func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func touch(_ path: String) throws { try write("", to: path) }

    @Test func namesAreLookedUpThroughTheThemesTheyInherit() throws {
        let root = try temporaryDirectory("sound-themes")
        defer { try? FileManager.default.removeItem(at: root) }
        let user = root.path + "/user/sounds"
        let system = root.path + "/system/sounds"
        let themes = SoundThemes(folders: [user, system])
        // Ocean inherits Sea, which has a stereo folder and a surround one.
        try Self.write("[Sound Theme]\nName=Ocean\nInherits=Sea\nDirectories=stereo\n\n[stereo]\nOutputProfile=stereo\n", to: system + "/Ocean/index.theme")
        try Self.write(
            "[Sound Theme]\nName=Sea\nDirectories=loud;calm\n\n[loud]\nOutputProfile=5.1\n\n[calm]\nOutputProfile=stereo\n", to: system + "/Sea/index.theme")
        try Self.touch(system + "/Sea/loud/bell.oga")
        try Self.touch(system + "/Sea/calm/bell.ogg")
        try Self.touch(system + "/Ocean/stereo/message-new-email.oga")
        try Self.touch(system + "/freedesktop/stereo/message.oga")
        try Self.touch(system + "/freedesktop/stereo/complete.oga")
        try Self.touch(system + "/freedesktop/stereo/dialog-warning.oga")
        try Self.touch(system + "/Ocean/stereo/complete.disabled")

        #expect(themes.chain(from: "Ocean") == ["Ocean", "Sea", "freedesktop"])
        #expect(themes.look(up: "message-new-email", theme: "Ocean") == .file(system + "/Ocean/stereo/message-new-email.oga"))
        #expect(themes.look(up: "bell", theme: "Ocean") == .file(system + "/Sea/calm/bell.ogg"), "stereo, from the theme inherited")
        #expect(themes.look(up: "message-new-instant", theme: "Ocean") == .file(system + "/freedesktop/stereo/message.oga"), "the name's last parts dropped")
        #expect(themes.look(up: "complete", theme: "Ocean") == .disabled)
        #expect(themes.look(up: "complete", theme: "") == .file(system + "/freedesktop/stereo/complete.oga"))
        #expect(themes.look(up: "suspend-error", theme: "Ocean") == .none)
        #expect(themes.look(up: "../freedesktop/stereo/message", theme: "Ocean") == .none, "a name is no path")
        // The user's own theme folder comes first.
        try Self.touch(user + "/freedesktop/stereo/dialog-warning.wav")
        #expect(themes.look(up: "dialog-warning", theme: "") == .file(user + "/freedesktop/stereo/dialog-warning.wav"))
        // A theme that inherits itself ends.
        try Self.write("[Sound Theme]\nName=Loop\nInherits=Loop,Ocean\n", to: system + "/Loop/index.theme")
        #expect(themes.chain(from: "Loop") == ["Loop", "Ocean", "Sea", "freedesktop"])
    }

    @Test func theSettingsNameThePlayerAndTheTheme() {
        var problems: [String] = []
        let set = NotificationSettings(
            plist: [
                "SoundCommand": .array([.string("paplay"), .string("--volume=30000")]), "SoundTheme": .string("Yaru"),
                "NotifyCommand": .array([.string("/home/me/bin/on-notify"), .string("--log")]),
            ], problems: &problems)
        #expect(problems.isEmpty && set.soundCommand == ["paplay", "--volume=30000"] && set.soundTheme == "Yaru")
        #expect(set.notifyCommand == ["/home/me/bin/on-notify", "--log"])
        #expect(NotificationSettings(plist: set.plist, problems: &problems) == set)
        #expect(NotificationSettings().plist["SoundCommand"] == nil && NotificationSettings().plist["NotifyCommand"] == nil, "the defaults are not written down")
        let wrong = NotificationSettings(plist: ["SoundCommand": .string("paplay --volume=3"), "SoundTheme": .string("../x")], problems: &problems)
        #expect(wrong.soundCommand.isEmpty && wrong.soundTheme.isEmpty)
        #expect(problems.count == 2 && problems[0].hasPrefix("SoundCommand must be a list of strings"), "\(problems)")
        problems = []
        #expect(NotificationSettings(plist: ["SoundCommand": .array([])], problems: &problems).soundCommand.isEmpty && problems.isEmpty)
    }

    static let mpv = "/usr/bin/mpv"

    /// mpv decoding a sound and writing what it would play to `heard`.
    static func mpv(writingTo heard: String) -> [String] {
        [mpv, "--no-config", "--load-scripts=no", "--no-video", "--no-terminal", "--ao=pcm", "--ao-pcm-file=\(heard)", "--"]
    }

    /// notifications.plist under `home` with `command` as its SoundCommand.
    static func soundCommand(_ command: [String], in home: URL) throws {
        try FileManager.default.createDirectory(atPath: home.path + "/.config/todayd", withIntermediateDirectories: true)
        try Plist.write(.dictionary(["SoundCommand": .array(command.map(PlistValue.string))]), format: .xml)
            .write(to: URL(fileURLWithPath: home.path + "/.config/todayd/notifications.plist"))
    }

    /// Whether a player writing to `heard` is running (one sound at a
    /// time: the next plays only once it is gone).
    static func running(_ heard: String) -> Bool {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return processes.contains { pid in
            guard Int(pid) != nil, let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: line, as: UTF8.self).contains("--ao-pcm-file=\(heard)")
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: mpv) && FileManager.default.isExecutableFile(atPath: NotificationServerTests.notifySend),
        "needs mpv and notify-send (apt-get install mpv libnotify-bin)"))
    func aNotificationsSoundIsPlayedByThePlayer() async throws {
        let home = try temporaryDirectory("sounds")
        defer { try? FileManager.default.removeItem(at: home) }
        // The freedesktop theme in the user's data folder (XDG_DATA_HOME).
        let chime = home.path + "/data/sounds/freedesktop/stereo/message.wav"
        try FileManager.default.createDirectory(atPath: (chime as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Self.tone().write(to: URL(fileURLWithPath: chime))
        let bell = home.path + "/bell.wav"
        try Self.tone(seconds: 0.2).write(to: URL(fileURLWithPath: bell))
        let heard = home.path + "/heard.wav"
        try Self.soundCommand(Self.mpv(writingTo: heard), in: home)
        let (daemon, _, stop) = try await NotificationServerTests.serving(home: home)
        defer { stop() }

        /// What mpv wrote for the notification notify-send sends with
        /// `hints`: the bytes of sound past the header, 0 where nothing
        /// played (looked at after a second).
        func played(_ hints: [String], app: String = "Mail", urgency: String = "normal", expected: Bool) async throws -> Int {
            // A quarter of a second at least between two sounds.
            try await Task.sleep(for: .milliseconds(300))
            try? FileManager.default.removeItem(atPath: heard)
            let sent = try await run(
                ["DBUS_SESSION_BUS_ADDRESS=\(daemon.address)", NotificationServerTests.notifySend, "--app-name", app, "--urgency", urgency]
                    + hints.flatMap { ["--hint", $0] } + ["New mail", "hello"])
            #expect(sent.status == 0, "\(sent.error)")
            func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: heard))?[.size] as? Int) ?? 0 }
            if expected {
                _ = try await eventually(10) { size() > 44 && !Self.running(heard) }
            } else {
                try await Task.sleep(for: .seconds(1))
                #expect(!Self.running(heard))
            }
            return max(size() - 44, 0)
        }

        // 0.3 s of 16-bit mono at 8 kHz: at least as many bytes as mpv
        // writes it out (at its own rate and channels).
        let chimed = try await played(["string:sound-name:message-new-instant"], expected: true)
        #expect(chimed >= 4_800, "\(chimed) bytes; \(daemon.logText)")
        #expect(try await played(["string:sound-file:file://\(bell)"], expected: true) >= 3_200)
        #expect(try await played(["string:sound-file:\(bell)", "boolean:suppress-sound:true"], expected: false) == 0)
        #expect(try await played([], expected: false) == 0, "none asked for")
        #expect(try await played(["string:sound-name:no-such-sound"], expected: false) == 0)

        let policy = try await NotificationCommandTests.todayctl(daemon.address, ["notifications", "policy", "Mail", "sounds=false"])
        #expect(policy.status == 0, "\(policy)")
        #expect(try await played(["string:sound-name:message"], expected: false) == 0, "the app's policy")
        #expect(try await played(["string:sound-name:message"], app: "Chat", expected: true) > 0)
        #expect(try await NotificationCommandTests.todayctl(daemon.address, ["notifications", "dnd", "on"]).status == 0)
        #expect(try await played(["string:sound-name:message"], app: "Chat", expected: false) == 0, "Do Not Disturb")
        #expect(try await played(["string:sound-name:message"], app: "Chat", urgency: "critical", expected: true) > 0, "critical ones pass")

        let capabilities = try await run(
            ["gdbus", "call", "--address", daemon.address, "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
             "--method", "org.freedesktop.Notifications.GetCapabilities"])
        #expect(capabilities.output.contains("'sound'"), "\(capabilities.output)")
    }

    /// A scheduled notification's sound (SPEC section 18's `sound`, from
    /// TodayKit's UNNotificationSound): `default` is the theme's message
    /// sound; a name is the app's file, in its container's
    /// `Library/Sounds/` before its bundle, and the default sound where it
    /// has none; a name with a folder in it is refused.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: mpv), "needs mpv (apt-get install mpv)"))
    func aScheduledNotificationPlaysTheAppsSound() async throws {
        let home = try temporaryDirectory("scheduled-sounds")
        defer { try? FileManager.default.removeItem(at: home) }
        let chime = home.path + "/data/sounds/freedesktop/stereo/message.wav"
        try FileManager.default.createDirectory(atPath: (chime as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Self.tone(seconds: 0.3).write(to: URL(fileURLWithPath: chime))
        let app = "org.example.Tram"
        let own = home.path + "/data/todayd/containers/\(app)/Library/Sounds/bell.wav"
        try FileManager.default.createDirectory(atPath: (own as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Self.tone(seconds: 0.9).write(to: URL(fileURLWithPath: own))
        let heard = home.path + "/heard.wav"
        try Self.soundCommand(Self.mpv(writingTo: heard), in: home)
        let daemon = try TodayDaemon(bundles: [Paths.examples], home: home)
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let tram = try Connection(address: daemon.address)
        defer { tram.close() }
        try await tram.center("RegisterApp", [.string(app)])

        func played(_ sound: String) async throws -> Int {
            // A quarter of a second at least between two sounds.
            try await Task.sleep(for: .milliseconds(300))
            try? FileManager.default.removeItem(atPath: heard)
            let content = Value.vardict([("title", .string("Tram")), ("sound", .string(sound))])
            try await ScheduledNotificationTests.call(tram, "Schedule", [.string("now-\(sound)"), content, .vardict([])])
            func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: heard))?[.size] as? Int) ?? 0 }
            _ = try await eventually(10) { size() > 44 && !Self.running(heard) }
            return max(size() - 44, 0)
        }
        let standard = try await played("default")
        #expect(standard >= 4_800, "\(daemon.logText)")
        let bell = try await played("bell.wav")
        #expect(bell >= 14_400 && bell > standard * 2, "the app's 0.9 s bell, not the 0.3 s chime: \(bell) against \(standard)")
        #expect(try await played("no-such.wav") == standard, "the default where the app has no such file")
        do {
            let content = Value.vardict([("title", .string("Tram")), ("sound", .string("../../../etc/bell.wav"))])
            try await ScheduledNotificationTests.call(tram, "Schedule", [.string("climb"), content, .vardict([])])
            Issue.record("a sound with a folder in its name was taken")
        } catch let error as DBusError {
            #expect(error.name == .invalidArgs && error.message.contains("content 'sound'"), "\(error)")
        }
    }

    /// A flood of notifications with sounds (50 in a burst) starts one
    /// player, and a quarter of a second later the next sound plays. The
    /// player is a shell script counting its starts: the file arrives as
    /// an argument, never in the script's text.
    @Test func aBurstSoundsOnce() async throws {
        let home = try temporaryDirectory("sound-burst")
        defer { try? FileManager.default.removeItem(at: home) }
        let bell = home.path + "/bell.wav"
        try Self.tone(seconds: 0.1).write(to: URL(fileURLWithPath: bell))
        let starts = home.path + "/starts"
        try Self.soundCommand(["/bin/sh", "-c", #"printf '%s\n' "$1" >> "$0""#, starts], in: home)
        let (_, client, stop) = try await NotificationServerTests.serving(home: home)
        defer { stop() }
        func notify(_ n: Int) async throws {
            _ = try await client.call(
                Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name,
                Notifications.Freedesktop.notify, "Chat", UInt32(0), "", "message \(n)", "", [String](), VariantDictionary([("sound-file", .string(bell))]),
                Int32(-1))
        }
        func started() -> [String] { ((try? String(contentsOfFile: starts, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<50 { group.addTask { try await notify(n) } }
            try await group.waitForAll()
        }
        #expect(try await eventually(5) { started() == [bell] }, "\(started())")
        try await Task.sleep(for: .milliseconds(400))
        #expect(started() == [bell], "the burst sounded once: \(started())")
        try await notify(100)
        #expect(try await eventually(5) { started() == [bell, bell] }, "\(started())")
    }
}
