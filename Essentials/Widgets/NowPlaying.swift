// Now Playing: what a media player (MPRIS, org.mpris.MediaPlayer2.* on the
// session bus) plays, with previous, play/pause and next. The provider
// lives on the bus and keeps every player's state from their
// PropertiesChanged signals, so a track change reaches the widget without
// polling and an update is answered from memory.
import DBus
import Foundation
import PropertyList
import Synchronization
import TodayKit

/// The Now Playing widget's settings.
public struct NowPlayingSettings: WidgetConfigurationIntent {
    /// A player's bus name without `org.mpris.MediaPlayer2.` (`mpv`,
    /// `vlc`); empty: the player that played last.
    @Parameter(title: "Player") public var player: String = ""
    public init() {}
}

/// One player as its MPRIS properties describe it.
public struct MediaPlayer: Sendable, Equatable {
    public var name: String
    public var identity = ""
    public var status = "Stopped"
    public var title = ""
    public var artists: [String] = []
    public var album = ""
    public var artURL = ""
    /// Microseconds; 0 when unknown.
    public var length: Int64 = 0
    /// Microseconds, as of `positionDate`: players do not signal the
    /// position as it moves, so it is carried forward at `rate` while
    /// playing (as the MPRIS specification asks of clients), and set again
    /// on Seeked and at a new track.
    public var position: Int64 = 0
    public var positionDate = Date()
    public var rate = 1.0
    var trackID = ""
    public var canGoNext = false
    public var canGoPrevious = false
    public var canControl = true
    /// When it last started playing (a counter: higher is later).
    public var playedAt = 0
    /// How many signals it has had, so that a read of all its properties
    /// that a signal overtook is made again.
    var signals = 0

    public init(name: String) { self.name = name }

    public var isPlaying: Bool { status == "Playing" }

    /// Where the track is at `date`.
    public func position(at date: Date) -> Int64 {
        guard isPlaying else { return position }
        let moved = date.timeIntervalSince(positionDate) * rate * 1_000_000
        let now = position + Int64(max(0, min(moved, 1e15)))
        return length > 0 ? min(now, length) : now
    }

    /// Takes in org.mpris.MediaPlayer2.Player properties, as of `date`.
    public mutating func apply(_ properties: [String: Value], at date: Date = Date()) {
        // The position so far, before the state that moves it changes.
        position = position(at: date)
        positionDate = date
        if let value = properties["PlaybackStatus"]?.string { status = value }
        if let value = properties["Rate"]?.double { rate = value }
        if let value = properties["Position"]?.int64 { position = value }
        if let value = properties["CanGoNext"]?.bool { canGoNext = value }
        if let value = properties["CanGoPrevious"]?.bool { canGoPrevious = value }
        if let value = properties["CanControl"]?.bool { canControl = value }
        if let metadata = properties["Metadata"]?.stringDictionary {
            title = metadata["xesam:title"]?.string ?? ""
            artists = metadata["xesam:artist"]?.elements?.compactMap(\.string) ?? metadata["xesam:artist"]?.string.map { [$0] } ?? []
            album = metadata["xesam:album"]?.string ?? ""
            artURL = metadata["mpris:artUrl"]?.string ?? ""
            length = metadata["mpris:length"]?.int64 ?? 0
            let track = metadata["mpris:trackid"]?.string ?? ""
            if properties["Position"] == nil, track != trackID || track.isEmpty {
                // Another track starts at its beginning.
                position = 0
            }
            trackID = track
        }
    }

    public var snapshot: Snapshot { snapshot(at: Date()) }

    public func snapshot(at date: Date) -> Snapshot {
        let position = position(at: date)
        let shownTitle = title.isEmpty ? (identity.isEmpty ? name : identity) : title
        let artist = artists.joined(separator: ", ")
        let subtitle = [artist, album].filter { !$0.isEmpty }.joined(separator: " — ")
        var progress = ""
        if length > 0 { progress = "\(Self.clock(position)) / \(Self.clock(length))" } else if position > 0 { progress = Self.clock(position) }
        let state = isPlaying ? "Playing" : status == "Paused" ? "Paused" : "Stopped"
        var actions: [Snapshot.Action] = []
        if canControl {
            actions = [
                Snapshot.Action(id: "previous", title: "Previous", kind: .button, iconName: "media-skip-backward-symbolic"),
                Snapshot.Action(
                    id: "play-pause", title: isPlaying ? "Pause" : "Play", kind: .toggle(isOn: isPlaying),
                    iconName: isPlaying ? "media-playback-pause-symbolic" : "media-playback-start-symbolic"),
                Snapshot.Action(id: "next", title: "Next", kind: .button, iconName: "media-skip-forward-symbolic"),
            ]
        }
        return Snapshot(
            title: shownTitle, subtitle: subtitle.isEmpty ? nil : subtitle,
            body: ([state] + (progress.isEmpty ? [] : [progress]) + [identity.isEmpty ? name : identity]).joined(separator: " · "),
            imagePath: artPath ?? Icons.path("audio-x-generic") ?? Icons.path("multimedia-player"), actions: actions,
            accessibilityLabel: "\(state): \(shownTitle)" + (artist.isEmpty ? "" : " by \(artist)"),
            extra: ["player": .string(name), "status": .string(status), "position": .integer(position), "length": .integer(length)])
    }

    /// A Seeked signal: the player jumped to `position`.
    public mutating func seeked(to position: Int64, at date: Date = Date()) {
        self.position = position
        positionDate = date
    }

    /// The album art where it is a file this process may read.
    var artPath: String? {
        guard let url = URL(string: artURL), url.isFileURL, FileManager.default.isReadableFile(atPath: url.path) else { return nil }
        return url.path
    }

    /// "3:07", "1:02:03" for microseconds.
    public static func clock(_ microseconds: Int64) -> String {
        let seconds = max(0, microseconds) / 1_000_000
        let (hours, minutes, rest) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        let two = { (n: Int64) in n < 10 ? "0\(n)" : "\(n)" }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(rest))" : "\(minutes):\(two(rest))"
    }

    /// The player to show: the one asked for, else the last to play, else any.
    public static func chosen(_ wanted: String, among players: [MediaPlayer]) -> MediaPlayer? {
        if !wanted.isEmpty { return players.first { $0.name == wanted } }
        return players.max { ($0.playedAt, $0.isPlaying ? 1 : 0, $1.name) < ($1.playedAt, $1.isPlaying ? 1 : 0, $0.name) }
    }
}

/// The Now Playing widget's provider, on the bus.
public final class NowPlayingProvider: BusWidgetProvider {
    public static let kind = "io.github.todayd.Essentials.NowPlaying"
    static let prefix = "org.mpris.MediaPlayer2."
    static let path = ObjectPath("/org/mpris/MediaPlayer2")
    static let playerInterface = InterfaceName("org.mpris.MediaPlayer2.Player")
    static let rootInterface = InterfaceName("org.mpris.MediaPlayer2")

    private let session: Connection
    /// By short name (`mpv`); owners by unique name, to know who signalled.
    private let state = Mutex<(players: [String: MediaPlayer], owners: [String: String], played: Int)>(([:], [:], 0))
    private let reloader = Reloader(kind: kind)

    public init() throws {
        // The connection the provider is served on: a track change's
        // reload request leaves from the thread that heard it.
        session = try BusProviderHost.connection()
        try session.subscribeBlocking(
            MatchRule(path: Self.path, interface: .properties, member: MemberName("PropertiesChanged"), arg0: Self.playerInterface.rawValue)
        ) { [self] message in
            guard let sender = message.sender, let changed = message.body.dropFirst().first?.stringDictionary else { return }
            let known = state.withLock { state -> Bool in
                guard let name = state.owners[sender], var player = state.players[name] else { return false }
                let wasPlaying = player.isPlaying
                player.apply(changed)
                player.signals += 1
                if player.isPlaying && !wasPlaying {
                    state.played += 1
                    player.playedAt = state.played
                }
                state.players[name] = player
                return true
            }
            if known { reloader.changed() }
        }
        try session.subscribeBlocking(MatchRule(path: Self.path, interface: Self.playerInterface, member: MemberName("Seeked"))) { [self] message in
            guard let sender = message.sender, let position = message.body.first?.int64 else { return }
            let known = state.withLock { state -> Bool in
                guard let name = state.owners[sender] else { return false }
                state.players[name]?.seeked(to: position)
                return true
            }
            if known { reloader.changed() }
        }
        // Players coming and going: known at once (so that their first
        // signals count), read off the connection's own thread.
        try session.subscribeBlocking(MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged)) { [self] message in
            guard let (name, _, owner) = try? message.values(String.self, String.self, String.self), name.hasPrefix(Self.prefix) else { return }
            if owner.isEmpty {
                forget(name)
                reloader.changed()
                return
            }
            expect(name, owner: owner)
            Thread.detachNewThread {
                self.add(name, owner: owner)
                self.reloader.changed()
            }
        }
        let names = (try? session.callBusBlocking(MemberName("ListNames")).body.first?.elements?.compactMap(\.string)) ?? []
        for name in names where name.hasPrefix(Self.prefix) {
            if let owner = try? session.callBusBlocking(MemberName("GetNameOwner"), [.string(name)]).body.first?.string {
                expect(name, owner: owner)
                add(name, owner: owner)
            }
        }
    }

    /// Knows a player by its connection before its properties are read.
    private func expect(_ busName: String, owner: String) {
        let short = String(busName.dropFirst(Self.prefix.count))
        state.withLock { state in
            if state.players[short] == nil { state.players[short] = MediaPlayer(name: short) }
            state.owners[owner] = short
        }
    }

    /// Reads a player that appeared.
    /// Reads a player that appeared: all its properties, again where a
    /// signal came while they were on their way (it may be newer than they).
    private func add(_ busName: String, owner: String) {
        let short = String(busName.dropFirst(Self.prefix.count))
        guard let bus = BusName(rawValue: busName) else { return }
        var identity = ""
        if let reply = try? session.callBlocking(
            bus, path: Self.path, interface: .properties, member: MemberName("Get"),
            [.string(Self.rootInterface.rawValue), .string("Identity")], timeout: .seconds(2))
        {
            identity = reply.body.first?.string ?? ""
        }
        for _ in 0..<3 {
            let before = state.withLock { $0.players[short]?.signals ?? 0 }
            guard let reply = try? session.callBlocking(
                bus, path: Self.path, interface: .properties, member: MemberName("GetAll"), [.string(Self.playerInterface.rawValue)],
                timeout: .seconds(2)), let properties = reply.body.first?.stringDictionary
            else { break }
            let settled = state.withLock { state -> Bool in
                guard state.owners[owner] == short else { return true }
                var player = state.players[short] ?? MediaPlayer(name: short)
                guard player.signals == before else { return false }
                let wasPlaying = player.isPlaying
                player.apply(properties)
                player.identity = identity
                if player.isPlaying && !wasPlaying {
                    state.played += 1
                    player.playedAt = state.played
                }
                state.players[short] = player
                return true
            }
            if settled { return }
        }
        state.withLock { $0.players[short]?.identity = identity }
    }

    private func forget(_ busName: String) {
        let short = String(busName.dropFirst(Self.prefix.count))
        state.withLock { state in
            state.players[short] = nil
            state.owners = state.owners.filter { $0.value != short }
        }
    }

    public func update(in context: ProviderContext, previous: Snapshot) -> (UpdateResult, Snapshot) {
        if context.isPreview {
            var sample = MediaPlayer(name: "player")
            sample.identity = "Music"
            sample.apply([
                "PlaybackStatus": .string("Playing"), "Position": .int64(83_000_000), "CanGoNext": .boolean(true),
                "Metadata": .vardict([("xesam:title", .string("Clair de lune")), ("xesam:artist", .strings(["Claude Debussy"])), ("mpris:length", .int64(301_000_000))]),
            ])
            return (.newData, sample.snapshot)
        }
        let wanted = context.configuration(NowPlayingSettings.self).player
        guard let player = MediaPlayer.chosen(wanted, among: state.withLock { Array($0.players.values) }) else {
            let name = wanted.isEmpty ? "No player is running" : "\(wanted) is not running"
            return (.newData, Snapshot(title: name, subtitle: "Play something in a media player", accessibilityLabel: name))
        }
        let snapshot = player.snapshot
        return (snapshot == previous ? .noData : .newData, snapshot)
    }

    public func perform(action id: String, arguments: PlistDictionary, in context: ProviderContext) throws {
        let wanted = context.configuration(NowPlayingSettings.self).player
        guard let player = MediaPlayer.chosen(wanted, among: state.withLock { Array($0.players.values) }),
            let bus = BusName(rawValue: Self.prefix + player.name)
        else { throw TodayKitError.service("no media player is running") }
        let method: MemberName
        switch id {
        case "previous": method = MemberName("Previous")
        case "next": method = MemberName("Next")
        case "play-pause":
            // A toggle says the state asked for; without it, turn over.
            if let on = arguments["state"]?.bool { method = on ? MemberName("Play") : MemberName("Pause") } else { method = MemberName("PlayPause") }
        default: throw TodayKitError.service("Now Playing has no action '\(id)'")
        }
        try session.callBlocking(bus, path: Self.path, interface: Self.playerInterface, member: method, timeout: .seconds(5))
        // The answer shows the player as it is after the call.
        if let reply = try? session.callBlocking(
            bus, path: Self.path, interface: .properties, member: MemberName("GetAll"), [.string(Self.playerInterface.rawValue)],
            timeout: .seconds(2)), let properties = reply.body.first?.stringDictionary
        {
            state.withLock { state in state.players[player.name]?.apply(properties) }
        }
    }

    /// The running players, for the `player` choice (perform-options).
    public static func runningPlayers() -> [ParameterChoice] {
        guard let session = try? Connection.session() else { return [] }
        defer { session.close() }
        let names = (try? session.callBlocking(.bus, path: ObjectPath("/org/freedesktop/DBus"), interface: .bus, member: MemberName("ListNames")))?.body.first?.elements?
            .compactMap(\.string) ?? []
        var choices = [ParameterChoice("", title: "The last one to play")]
        for name in names.sorted() where name.hasPrefix(prefix) {
            let short = String(name.dropFirst(prefix.count))
            var title = short
            if let bus = BusName(rawValue: name),
                let reply = try? session.callBlocking(
                    bus, path: path, interface: .properties, member: MemberName("Get"), [.string(rootInterface.rawValue), .string("Identity")],
                    timeout: .seconds(1)), let identity = reply.body.first?.string, !identity.isEmpty
            {
                title = identity
            }
            choices.append(ParameterChoice(short, title: title))
        }
        return choices
    }
}
