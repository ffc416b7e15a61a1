import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Widget instances and the layout (SPEC section 16): the layout as
/// values, the configuration rules, and todayd on a real bus placing,
/// configuring, reordering and removing instances whose providers each see
/// their own settings, across a kill -9.
@Suite(.showsDaemonLogs) struct WidgetInstanceTests {
    static let clock = BundleID("org.example.Clock.World")
    static let mail = BundleID("org.example.Mail.Inbox")
    static let notes = BundleID("org.example.Notes.Recent")

    // MARK: The layout as values

    @Test func theLayoutFollowsListWidgetsUntilTheUserChangesIt() {
        var layout = WidgetLayout()
        let kinds = [Self.clock, Self.mail, Self.notes]
        let withContent: (WidgetInstanceID) -> Bool = { $0.kind != Self.mail }
        #expect(layout.shown(kinds: kinds, hasContent: withContent) == [WidgetInstanceID(kind: Self.clock), WidgetInstanceID(kind: Self.notes)])
        let adoptedUnchanged = layout.adopt(kinds + [BundleID("org.example.New.W")])
        #expect(!adoptedUnchanged, "an unchanged layout takes no new kinds: it is ListWidgets")

        // Added before Notes (position 1 of what is shown).
        let shown = layout.shown(kinds: kinds, hasContent: withContent)
        let tokyo = layout.add(Self.clock, .init(configuration: ["zone": .string("Asia/Tokyo")], family: .small), at: 1, kinds: kinds, shown: shown)
        #expect(tokyo == WidgetInstanceID(kind: Self.clock, number: 1))
        #expect(layout.order == [WidgetInstanceID(kind: Self.clock), WidgetInstanceID(kind: Self.mail), tokyo, WidgetInstanceID(kind: Self.notes)])
        // Mail has no content: not shown, but it keeps its place.
        #expect(layout.shown(kinds: kinds, hasContent: withContent) == [WidgetInstanceID(kind: Self.clock), tokyo, WidgetInstanceID(kind: Self.notes)])

        // A removed instance's number is never given again.
        let removed = layout.remove(tokyo, kinds: kinds)
        #expect(removed)
        #expect(layout.instances[tokyo] == nil)
        let next = layout.add(Self.clock, .init(configuration: [:], family: .medium), at: -1, kinds: kinds, shown: [])
        #expect(next.number == 2)
        let removedAgain = layout.remove(tokyo, kinds: kinds)
        #expect(!removedAgain, "already gone")

        // A new kind joins at the end; a kind whose bundle left keeps its places.
        let adopted = layout.adopt(kinds + [BundleID("org.example.New.W")])
        #expect(adopted)
        #expect(layout.order?.last == WidgetInstanceID(kind: BundleID("org.example.New.W")))
        #expect(!layout.shown(kinds: [Self.mail, Self.notes], hasContent: { _ in true }).contains { $0.kind == Self.clock })
        #expect(layout.order?.contains(next) == true)
    }

    @Test func reorderingIsAPermutationOfWhatIsShown() throws {
        var layout = WidgetLayout()
        let kinds = [Self.clock, Self.mail, Self.notes]
        let (clock, mail, notes) = (WidgetInstanceID(kind: Self.clock), WidgetInstanceID(kind: Self.mail), WidgetInstanceID(kind: Self.notes))
        let shown = [clock, notes]  // Mail has no content.
        #expect(throws: ConfigurationProblem.self) { try layout.reorder([notes], shown: shown, kinds: kinds) }
        #expect(throws: ConfigurationProblem.self) { try layout.reorder([notes, notes], shown: shown, kinds: kinds) }
        #expect(throws: ConfigurationProblem.self) { try layout.reorder([notes, mail], shown: shown, kinds: kinds) }
        #expect(layout.order == nil, "a refused order changes nothing")
        try layout.reorder([notes, clock], shown: shown, kinds: kinds)
        #expect(layout.order == [notes, mail, clock], "Mail, not shown, keeps its slot")
    }

    @Test func theStoredFormReadsBackAndNeverReusesANumber() {
        var layout = WidgetLayout()
        let kinds = [Self.clock]
        let first = layout.add(Self.clock, .init(configuration: ["zone": .string("UTC"), "seconds": .boolean(true)], family: .small), at: -1, kinds: kinds, shown: [])
        _ = layout.add(Self.clock, .init(configuration: [:], family: .medium), at: 0, kinds: kinds, shown: [first])
        var problems: [String] = []
        let read = WidgetLayout(plist: layout.plist) { problems.append($0) }
        #expect(read == layout)
        #expect(problems.isEmpty)

        // A hand-edited file: a bad entry is left out and said; a number
        // in use is never handed out again, whatever NextNumbers says.
        var edited = layout.plist.dictionary ?? [:]
        edited["Layout"] = .array([.string("org.example.Clock.World/7"), .string("not an id/x")])
        edited["Instances"] = .dictionary([
            "org.example.Clock.World/7": .dictionary(["Family": .string("large"), "Configuration": .dictionary([:])]),
            "org.example.Clock.World/8": .dictionary(["Family": .string("huge")]),
        ])
        edited["NextNumbers"] = .dictionary(["org.example.Clock.World": .integer(2)])
        let fixed = WidgetLayout(plist: .dictionary(edited)) { problems.append($0) }
        #expect(problems.count == 2, "\(problems)")
        #expect(fixed.order == [WidgetInstanceID(kind: Self.clock, number: 7)])
        #expect(fixed.nextNumbers[Self.clock] == 8)
    }

    // MARK: Configurations

    static let parameters = [
        WidgetParameter(
            key: "zone", title: "Time zone", type: .choice, defaultValue: .string("UTC"),
            choices: [.init(value: "UTC", title: "UTC"), .init(value: "Asia/Tokyo", title: "Tokyo")]),
        WidgetParameter(key: "seconds", title: "Seconds", type: .boolean, defaultValue: .boolean(false)),
        WidgetParameter(key: "count", title: "Count", type: .integer),
        WidgetParameter(key: "player", title: "Player", type: .choice, dynamic: true),
    ]

    @Test func aConfigurationIsCheckedAgainstTheParameters() throws {
        let checked = try WidgetConfiguration.checked(
            ["zone": .string("Asia/Tokyo"), "count": .unsignedInteger(3), "player": .string("mpv")], against: Self.parameters)
        #expect(checked == ["zone": .string("Asia/Tokyo"), "count": .integer(3), "player": .string("mpv")])
        #expect(
            WidgetConfiguration.complete(checked, with: Self.parameters)
                == ["zone": .string("Asia/Tokyo"), "count": .integer(3), "player": .string("mpv"), "seconds": .boolean(false)])
        let problems: [(PlistDictionary, String)] = [
            (["zone": .string("Mars")], "parameter 'zone': 'Mars' is not one of its choices (UTC, Asia/Tokyo)"),
            (["seconds": .string("yes")], "parameter 'seconds': must be a boolean, not string"),
            (["count": .boolean(true)], "parameter 'count': must be an integer, not boolean"),
            (["zon": .string("UTC")], "the widget has no parameter 'zon'; its parameters are zone, seconds, count, player"),
        ]
        for (given, expected) in problems {
            #expect(throws: ConfigurationProblem(expected)) { try WidgetConfiguration.checked(given, against: Self.parameters) }
        }
        #expect(try WidgetConfiguration.family("", supported: [.small, .large]) == .small)
        #expect(throws: ConfigurationProblem("the widget does not come in 'medium'; it comes in small, large")) {
            try WidgetConfiguration.family("medium", supported: [.small, .large])
        }
        #expect(throws: ConfigurationProblem("'tiny' is not a family: small, medium or large")) {
            try WidgetConfiguration.family("tiny", supported: [.small])
        }
    }

    @Test func aBadParameterSchemaNamesItsExactKey() throws {
        let prefix = "NSExtension.NSExtensionAttributes."
        let cases: [(PlistValue, String)] = [
            (.array([.dictionary(["key": .string("a"), "type": .string("colour")])]), prefix + "TodayParameters.0.type"),
            (.array([.dictionary(["key": .string("a"), "type": .string("choice")])]), prefix + "TodayParameters.0.choices"),
            (
                .array([
                    .dictionary(["key": .string("a"), "type": .string("string")]),
                    .dictionary(["key": .string("b"), "type": .string("integer"), "default": .string("x")]),
                ]), prefix + "TodayParameters.1.default"
            ),
            (.array([.dictionary(["key": .string("a"), "type": .string("string"), "dynamic": .boolean(true)])]), prefix + "TodayParameters.0.dynamic"),
            (.string("zone"), prefix + "TodayParameters"),
        ]
        for (given, key) in cases {
            #expect(performing: { _ = try BundleCatalog.parameters(["TodayParameters": given], in: "Info.plist", prefix: prefix) }, throws: { error in
                (error as? BundleProblem)?.key == key
            })
        }
        #expect(performing: {
            _ = try BundleCatalog.families(["TodaySupportedFamilies": .array([.string("small"), .string("huge")])], in: "Info.plist", prefix: prefix)
        }, throws: { ($0 as? BundleProblem)?.key == prefix + "TodaySupportedFamilies.1" })
    }

    // MARK: On the bus

    /// A World Clock whose provider shows what it was given.
    static func clockApp(_ bundles: BundleFolder) throws {
        let parameters: PlistValue = .array([
            .dictionary([
                "key": .string("zone"), "title": .string("Time zone"), "type": .string("choice"), "default": .string("UTC"),
                "choices": .array(["UTC", "Europe/Berlin", "Asia/Tokyo"].map { .dictionary(["value": .string($0)]) }),
            ]),
            .dictionary(["key": .string("seconds"), "title": .string("Seconds"), "type": .string("boolean"), "default": .boolean(false)]),
        ])
        try bundles.addApp(
            "org.example.Clock",
            widgets: [
                .init(
                    name: "World",
                    script: #"printf '{"result": "new-data", "snapshot": {"title": "[%s] %s", "body": "%s"}}' "$TODAY_INSTANCE" "$TODAY_FAMILY" "$(printf '%s' "$TODAY_CONFIGURATION" | sed 's/"/\\"/g')""#,
                    attributes: [
                        "TodayParameters": parameters, "TodaySupportedFamilies": .array([.string("small"), .string("medium")]),
                    ])
            ])
    }

    /// todayd serving the clock app, and a client of it.
    static func clockService() async throws -> (BundleFolder, TodayDaemon, Connection) {
        let bundles = try BundleFolder()
        try clockApp(bundles)
        let daemon = try TodayDaemon(bundles: [bundles.path])
        do {
            return (bundles, daemon, try await daemon.ready())
        } catch {
            daemon.stop()
            bundles.remove()
            throw error
        }
    }

    static func stop(_ bundles: BundleFolder, _ daemon: TodayDaemon, _ client: Connection) {
        client.close()
        daemon.stop()
        bundles.remove()
    }

    static func layout(_ client: Connection) async throws -> [WidgetInstanceID] {
        let reply = try await client.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
            [.string(Today.center.name.rawValue), .string("Layout")])
        return (reply.body.first?.unwrapped.elements ?? []).compactMap { value in
            if case .objectPath(let path) = value { WidgetInstanceID(path: path) } else { nil }
        }
    }

    static func snapshotTitle(_ client: Connection, _ id: WidgetInstanceID) async throws -> String {
        let reply = try await client.call(
            Today.busName, path: id.path, interface: .properties, member: MemberName("Get"), [.string(Today.widget.name.rawValue), .string("Snapshot")])
        return reply.body.first?.unwrapped.stringDictionary?["title"]?.string ?? ""
    }

    static func snapshotBody(_ client: Connection, _ id: WidgetInstanceID) async throws -> String {
        let reply = try await client.call(
            Today.busName, path: id.path, interface: .properties, member: MemberName("Get"), [.string(Today.widget.name.rawValue), .string("Snapshot")])
        return reply.body.first?.unwrapped.stringDictionary?["body"]?.string ?? ""
    }

    static func add(_ client: Connection, _ configuration: [(String, Value)], family: String = "", at position: Int32 = -1) async throws -> WidgetInstanceID {
        let reply = try await client.center(
            "AddWidget", [.string(clock.rawValue), VariantDictionary(configuration).value, .string(family), .int32(position)])
        guard case .objectPath(let path)? = reply.body.first, let id = WidgetInstanceID(path: path) else { throw DBusError.failed("no instance path") }
        return id
    }

    @Test(.timeLimit(.minutes(2)))
    func threeClocksEachWithItsOwnSettingsThroughAKill() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try Self.clockApp(bundles)
        let home = try temporaryDirectory("todayd")
        defer { try? FileManager.default.removeItem(at: home) }
        // What a todayd before instances kept: the default instance reads it.
        let old = try temporaryDirectory("old")
        defer { try? FileManager.default.removeItem(at: old) }
        try FileManager.default.createDirectory(atPath: home.path + "/cache/todayd/snapshots", withIntermediateDirectories: true)
        try Plist.write(.dictionary(["title": .string("kept from before"), "body": .string("")]), format: .xml)
            .write(to: URL(fileURLWithPath: home.path + "/cache/todayd/snapshots/\(Self.clock.rawValue).plist"))

        var daemon = try TodayDaemon(bundles: [bundles.path], home: home)
        var client = try await daemon.ready()
        let kind = WidgetInstanceID(kind: Self.clock)
        #expect(try await Self.snapshotTitle(client, kind) == "kept from before", "the old snapshot is the default instance's")
        #expect(try await Self.layout(client) == [kind])

        let tokyo = try await Self.add(client, [("zone", .string("Asia/Tokyo"))], family: "small")
        let berlin = try await Self.add(client, [("zone", .string("Europe/Berlin")), ("seconds", .boolean(true))], at: 0)
        #expect(try await Self.layout(client) == [berlin, kind, tokyo])
        #expect(try await eventually(10) { try await Self.snapshotTitle(client, tokyo) == "[1] small" })
        #expect(try await eventually(10) { try await Self.snapshotTitle(client, berlin) == "[2] small" })
        #expect(try await Self.snapshotBody(client, tokyo) == #"{"zone":"Asia/Tokyo","seconds":false}"#)
        #expect(try await Self.snapshotBody(client, berlin) == #"{"zone":"Europe/Berlin","seconds":true}"#)
        _ = try await client.center("PerformUpdate", [.string(Self.clock.rawValue)])
        #expect(try await Self.snapshotTitle(client, kind) == "[] small")
        #expect(try await Self.snapshotBody(client, kind) == #"{"zone":"UTC","seconds":false}"#)

        // Bad values: InvalidArgs naming what is wrong, nothing placed.
        for (configuration, family, says) in [
            ([("zone", Value.string("Mars"))], "", "parameter 'zone'"), ([("zon", .string("UTC"))], "", "no parameter 'zon'"),
            ([], "large", "does not come in 'large'"),
        ] {
            do {
                _ = try await Self.add(client, configuration, family: family)
                Issue.record("AddWidget took \(configuration) \(family)")
            } catch let error as DBusError {
                #expect(error.name == .invalidArgs && error.message.contains(says), "\(error)")
            }
        }
        #expect(try await Self.layout(client) == [berlin, kind, tokyo])

        // Configure: at once, and the provider runs with it.
        _ = try await client.call(
            Today.busName, path: tokyo.path, interface: Today.instance.name, member: MemberName("Configure"),
            [VariantDictionary([("zone", .string("UTC"))]).value, .string("medium")])
        #expect(try await eventually(10) { try await Self.snapshotTitle(client, tokyo) == "[1] medium" })
        #expect(try await Self.snapshotBody(client, tokyo) == #"{"zone":"UTC","seconds":false}"#)

        // Reorder; a list that is not a permutation is refused.
        _ = try await client.center("SetLayout", [.objectPaths([tokyo.path, berlin.path, kind.path])])
        #expect(try await Self.layout(client) == [tokyo, berlin, kind])
        await #expect(throws: DBusError.self) { try await client.center("SetLayout", [.objectPaths([tokyo.path])]) }

        // kill -9: nothing acknowledged is lost.
        client.close()
        kill(daemon.process.processIdentifier, SIGKILL)
        await exited(daemon.process)
        daemon = try TodayDaemon(bundles: [bundles.path], home: home)
        defer { daemon.stop() }
        client = try await daemon.ready()
        defer { client.close() }
        #expect(try await Self.layout(client) == [tokyo, berlin, kind])
        #expect(try await Self.snapshotTitle(client, tokyo) == "[1] medium", "kept, before any provider runs")
        #expect(try await Self.snapshotBody(client, berlin) == #"{"zone":"Europe/Berlin","seconds":true}"#)
        // The app reads what is placed: each instance, its family and settings.
        let app = try Connection(address: daemon.address)
        defer { app.close() }
        try await app.center("RegisterApp", [.string("org.example.Clock")])
        let configurations = try await app.center("GetCurrentConfigurations", [.string(Self.clock.rawValue)])
        let placed = (configurations.body.first?.elements ?? []).compactMap { item -> String? in
            guard case .structure(let fields) = item, fields.count == 3, case .objectPath(let path) = fields[0] else { return nil }
            return "\(WidgetInstanceID(path: path)?.description ?? "?") \(fields[1].string ?? "") \(fields[2].stringDictionary?["zone"]?.string ?? "")"
        }
        #expect(placed == ["\(tokyo) medium UTC", "\(berlin) small Europe/Berlin", "\(kind) small UTC"])

        // Removed: the added one is gone, the kind's own object stays.
        _ = try await client.center("RemoveWidget", [.objectPath(berlin.path)])
        _ = try await client.center("RemoveWidget", [.objectPath(kind.path)])
        #expect(try await Self.layout(client) == [tokyo])
        await #expect(throws: DBusError.self) { try await Self.snapshotTitle(client, berlin) }
        #expect(try await Self.snapshotTitle(client, kind) == "[] small")
        let next = try await Self.add(client, [])
        #expect(next.number == 3, "numbers are never reused")

        // The bundle leaves and comes back: its instances with it.
        let away = old.appendingPathComponent("Clock.app")
        try FileManager.default.moveItem(at: bundles.url.appendingPathComponent("org.example.Clock.app"), to: away)
        _ = try await client.center("Reload")
        #expect(try await eventually(10) { try await Self.layout(client).isEmpty })
        try FileManager.default.moveItem(at: away, to: bundles.url.appendingPathComponent("org.example.Clock.app"))
        _ = try await client.center("Reload")
        #expect(try await eventually(10) { try await Self.layout(client) == [tokyo, next] })
        #expect(try await Self.snapshotBody(client, tokyo) == #"{"zone":"UTC","seconds":false}"#)
    }

    /// todayctl's layout commands, as a person types them.
    @Test(.timeLimit(.minutes(1)))
    func todayctlPlacesMovesConfiguresAndRemoves() async throws {
        let (bundles, daemon, client) = try await Self.clockService()
        defer { Self.stop(bundles, daemon, client) }
        func todayctl(_ arguments: [String]) async throws -> (status: Int32, output: String, error: String) {
            try await NotificationCommandTests.todayctl(daemon.address, arguments)
        }
        let kind = Self.clock.rawValue
        #expect(try await todayctl(["layout"]).output == "0\t\(kind)\tWorld\tsmall\n")
        #expect(try await todayctl(["add", kind, "--set", "zone=Asia/Tokyo", "--set", "seconds=yes", "--family", "medium"]).output == "added \(kind)/1\n")
        let bad = try await todayctl(["add", kind, "--set", "seconds=maybe"])
        #expect(bad.status == 2 && bad.error.contains("'maybe' is not a value for seconds"), "\(bad)")
        let refused = try await todayctl(["add", kind, "--set", "zone=Mars"])
        #expect(refused.status == 1 && refused.error.contains("'Mars' is not one of its choices"), "\(refused)")
        #expect(try await todayctl(["add", kind, "--at", "0"]).output == "added \(kind)/2\n")
        #expect(try await todayctl(["move", "\(kind)/2", "2"]).status == 0)
        #expect(try await todayctl(["configure", "\(kind)/1", "--set", "zone=UTC"]).status == 0)
        let listed = try await todayctl(["layout"]).output
        #expect(
            listed == "0\t\(kind)\tWorld\tsmall\n1\t\(kind)/1\tWorld\tmedium\t{\"seconds\":true,\"zone\":\"UTC\"}\n2\t\(kind)/2\tWorld\tsmall\n",
            "\(listed)")
        let json = try await todayctl(["layout", "--json"]).output
        #expect(json.contains(#""instance" : "\#(kind)/1""#) || json.contains(#""instance": "\#(kind)/1""#), "\(json)")
        #expect(try await todayctl(["remove", "\(kind)/2"]).output == "removed \(kind)/2\n")
        #expect(try await Self.layout(client).map(\.description) == [kind, "\(kind)/1"])
        // The view's order, in show: the added instance's card follows the kind's.
        #expect(try await eventually(10) { try await Self.snapshotTitle(client, WidgetInstanceID(kind: Self.clock, number: 1)) == "[1] medium" })
        let shown = try await todayctl(["show"]).output
        #expect(shown.contains("[1] medium"), "\(shown)")
    }

    /// The gallery's preview and a form's dynamic choices: a provider run
    /// with TODAY_PREVIEW=1 (kept), or the manifest's TodayPlaceholder with
    /// no run; `perform-options KEY`.
    @Test(.timeLimit(.minutes(1)))
    func previewsAndDynamicChoices() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        // Each run says so in its container (the sandbox lets it write there).
        let script = #"""
            echo "$1 $TODAY_PREVIEW $TODAY_FAMILY" >> "$TODAY_CONTAINER/log"
            if [ "$1" = perform-options ]; then printf '{"choices": [{"value": "mpv", "title": "mpv"}, {"value": "vlc"}]}'; exit 0; fi
            printf '{"result": "new-data", "snapshot": {"title": "preview=%s %s"}}' "$TODAY_PREVIEW" "$(printf '%s' "$TODAY_CONFIGURATION" | sed 's/"/\\"/g')"
            """#
        let parameters: PlistValue = .array([.dictionary(["key": .string("player"), "type": .string("choice"), "dynamic": .boolean(true)])])
        try bundles.addApp(
            "org.example.Media",
            widgets: [
                .init(name: "Playing", script: script, attributes: ["TodayParameters": parameters, "TodaySupportedFamilies": .array([.string("large")])]),
                .init(name: "Shelf", script: "exit 1", attributes: ["TodayPlaceholder": .dictionary(["title": .string("Your books")])]),
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let playing = WidgetInstanceID(kind: BundleID("org.example.Media.Playing"))
        func preview(_ id: WidgetInstanceID, _ configuration: [(String, Value)]) async throws -> String {
            let reply = try await client.call(
                Today.busName, path: id.path, interface: Today.widget.name, member: MemberName("GetPreview"),
                [VariantDictionary(configuration).value, .string("")])
            return reply.body.first?.stringDictionary?["title"]?.string ?? ""
        }
        #expect(try await preview(playing, [("player", .string("mpv"))]) == #"preview=1 {"player":"mpv"}"#)
        #expect(try await preview(playing, [("player", .string("mpv"))]) == #"preview=1 {"player":"mpv"}"#)
        let log = daemon.home.path + "/data/todayd/containers/org.example.Media.Playing/log"
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "perform-update 1 large\n", "the second is the kept answer")
        #expect(try await preview(WidgetInstanceID(kind: BundleID("org.example.Media.Shelf")), []) == "Your books", "no run: its provider fails")

        let reply = try await client.call(
            Today.busName, path: playing.path, interface: Today.widget.name, member: MemberName("GetOptions"), [.string("player")])
        let choices = (reply.body.first?.elements ?? []).compactMap { $0.stringDictionary?["value"]?.string }
        #expect(choices == ["mpv", "vlc"])
        let parametersProperty = try await client.property(playing.kind.rawValue, "Parameters")
        #expect(parametersProperty.elements?.first?.stringDictionary?["dynamic"]?.bool == true)
        #expect(try await client.property(playing.kind.rawValue, "SupportedFamilies") == .strings(["large"]))
    }

    /// A D-Bus provider of a configurable kind is asked through the `…In`
    /// methods, with the instance's context.
    @Test(.timeLimit(.minutes(1)))
    func aBusProviderLearnsItsInstance() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let parameters: PlistValue = .array([.dictionary(["key": .string("city"), "type": .string("string"), "default": .string("Oslo")])])
        try bundles.addApp(
            "org.example.Sky", widgets: [.init(name: "Weather", attributes: ["TodayParameters": parameters], busName: "org.example.Sky.Provider")])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let provider = try Connection(address: daemon.address)
        defer { provider.close() }
        provider.objects.export(
            Today.providerPath,
            [
                ExportedInterface(
                    Today.provider,
                    methods: [
                        "PerformUpdateIn": { call in
                            let context = call.arguments[0].stringDictionary ?? [:]
                            let city = context["configuration"]?.stringDictionary?["city"]?.string ?? "?"
                            let title = "\(context["instance"]?.string ?? "?")|\(city)|\(context["family"]?.string ?? "?")|\(context["preview"]?.bool ?? true)"
                            return [.string("new-data"), .vardict([("title", .string(title))])]
                        },
                        // A configurable kind is never asked without its instance.
                        "PerformUpdate": { _ in throw DBusError.failed("PerformUpdateIn is called") },
                        "GetTimeline": { _ in throw DBusError.failed("GetTimelineIn is called") },
                        "PerformAction": { _ in throw DBusError.failed("PerformActionIn is called") },
                        "GetTimelineIn": { _ in throw DBusError.failed("no TodayTimeline") },
                        "PerformActionIn": { _ in throw DBusError.failed("no actions") },
                    ])
            ])
        _ = try await provider.requestName(BusName("org.example.Sky.Provider"), flags: [.doNotQueue])
        let kind = BundleID("org.example.Sky.Weather")
        let reply = try await client.center(
            "AddWidget", [.string(kind.rawValue), VariantDictionary([("city", .string("Lima"))]).value, .string(""), .int32(-1)])
        guard case .objectPath(let path)? = reply.body.first, let lima = WidgetInstanceID(path: path) else {
            Issue.record("no instance")
            return
        }
        #expect(try await eventually(10) { try await Self.snapshotTitle(client, lima) == "1|Lima|medium|false" })
        _ = try await client.center("PerformUpdate", [.string(kind.rawValue)])
        #expect(try await Self.snapshotTitle(client, WidgetInstanceID(kind: kind)) == "|Oslo|medium|false")
    }

    /// layout.plist edited by hand while todayd runs: the layout and the
    /// instances' settings follow it.
    @Test(.timeLimit(.minutes(1)))
    func theLayoutFileEditedByHand() async throws {
        let (bundles, daemon, client) = try await Self.clockService()
        defer { Self.stop(bundles, daemon, client) }
        let tokyo = try await Self.add(client, [("zone", .string("Asia/Tokyo"))])
        let kind = WidgetInstanceID(kind: Self.clock)
        #expect(try await Self.layout(client) == [kind, tokyo])
        #expect(try await eventually(10) { try await Self.snapshotBody(client, tokyo).contains("Asia/Tokyo") })

        let file = daemon.home.path + "/.config/todayd/layout.plist"
        var stored = try Plist.read(contentsOf: file).dictionary ?? [:]
        stored["Layout"] = .array([.string(tokyo.description), .string(kind.description)])
        stored["Instances"] = .dictionary([tokyo.description: .dictionary(["Family": .string("medium"), "Configuration": .dictionary(["zone": .string("Europe/Berlin")])])])
        try Plist.write(.dictionary(stored), format: .xml).write(to: URL(fileURLWithPath: file + ".new"))
        #expect(rename(file + ".new", file) == 0)
        // Replaced, as editors save.
        #expect(try await eventually(10) { try await Self.layout(client) == [tokyo, kind] })
        #expect(try await eventually(10) { try await Self.snapshotBody(client, tokyo).contains("Europe/Berlin") })
        // A broken file changes nothing.
        try Data("<plist><dict><key>Layout".utf8).write(to: URL(fileURLWithPath: file))
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await Self.layout(client) == [tokyo, kind])
    }

    /// layout.plist a symbolic link into a dotfiles folder: edits there
    /// are read at `todayctl reload`, and todayd's own changes reach the
    /// file the link names.
    @Test(.timeLimit(.minutes(1)))
    func theLayoutBehindALink() async throws {
        let (bundles, daemon, client) = try await Self.clockService()
        defer { Self.stop(bundles, daemon, client) }
        let tokyo = try await Self.add(client, [("zone", .string("Asia/Tokyo"))])
        let kind = WidgetInstanceID(kind: Self.clock)
        let link = daemon.home.path + "/.config/todayd/layout.plist"
        let dotfiles = daemon.home.path + "/dotfiles"
        let target = dotfiles + "/layout.plist"
        try FileManager.default.createDirectory(atPath: dotfiles, withIntermediateDirectories: true)
        #expect(rename(link, target) == 0)
        #expect(symlink(target, link) == 0)
        // The watcher sees the file go and the link come, and reads the
        // layout through the link.
        #expect(try await eventually(5) { try await Self.layout(client) == [kind, tokyo] })
        try await Task.sleep(for: .milliseconds(300))

        var stored = try Plist.read(contentsOf: target).dictionary ?? [:]
        stored["Layout"] = .array([.string(tokyo.description), .string(kind.description)])
        try Plist.write(.dictionary(stored), format: .xml).write(to: URL(fileURLWithPath: target))
        let reloaded = try await NotificationCommandTests.todayctl(daemon.address, ["reload"])
        #expect(reloaded.status == 0 && reloaded.output.hasPrefix("rescanned the bundle folders (1 widget);"), "\(reloaded)")
        #expect(try await Self.layout(client) == [tokyo, kind])

        func edit(_ order: [WidgetInstanceID]) throws {
            var stored = try Plist.read(contentsOf: target).dictionary ?? [:]
            stored["Layout"] = .array(order.map { .string($0.description) })
            try Plist.write(.dictionary(stored), format: .xml).write(to: URL(fileURLWithPath: target))
        }
        func written() throws -> [String] { try Plist.read(contentsOf: target)["Layout"]?.array?.compactMap(\.string) ?? [] }

        // A change through D-Bus is made on an edit not read yet, not
        // written over it; the link stays.
        try edit([kind, tokyo])
        let third = try await Self.add(client, [("zone", .string("Europe/Berlin"))])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try written() == [kind.description, tokyo.description, third.description])
        #expect(try await Self.layout(client) == [kind, tokyo, third])

        // So is a rescan that finds a new kind and writes the layout down.
        try edit([third, kind, tokyo])
        let staging = try BundleFolder()
        defer { staging.remove() }
        try staging.addApp("org.example.Other", widgets: [.init(name: "W", script: #"echo '{"result": "new-data", "snapshot": {"title": "other"}}'"#)])
        #expect(rename(staging.path + "/org.example.Other.app", bundles.path + "/org.example.Other.app") == 0)
        let other = "org.example.Other.W"
        #expect(try await eventually(10) { try written() == [third.description, kind.description, tokyo.description, other] }, "\((try? written()) ?? [])")
        #expect(try await eventually(10) { try await Self.layout(client).prefix(3) == [third, kind, tokyo] })
    }

    /// Writes `data` to `path` as an editor or a dotfile manager does: to
    /// a file beside it, renamed over it.
    static func putBack(_ data: Data, at path: String) throws {
        try data.write(to: URL(fileURLWithPath: path + ".new"))
        guard rename(path + ".new", path) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    /// layout.plist removed and written again at once (`git checkout` in a
    /// dotfiles repository, stow) leaves the instances where they are: no
    /// Layout without them in between. Removed for good, the layout goes
    /// after `removalGrace`, and the added instances with it.
    @Test(.timeLimit(.minutes(1)))
    func aLayoutRemovedAndWrittenAgainKeepsItsInstances() async throws {
        let (bundles, daemon, client) = try await Self.clockService()
        defer { Self.stop(bundles, daemon, client) }
        let tokyo = try await Self.add(client, [("zone", .string("Asia/Tokyo"))])
        let kind = WidgetInstanceID(kind: Self.clock)
        #expect(try await Self.layout(client) == [kind, tokyo])
        let path = daemon.home.path + "/.config/todayd/layout.plist"
        let kept = try Data(contentsOf: URL(fileURLWithPath: path))
        // Back 150 ms after it went. An attempt where a loaded machine took
        // half the grace or more to put it back does not count (the
        // layout may rightly have gone), and another is made.
        var timely = 0
        for _ in 0..<5 where timely == 0 {
            // On a thread of its own, so that the steps keep their times
            // while the tests around take the pool.
            let (gone, away) = try await offThePool {
                let gone = ContinuousClock.now
                unlink(path)
                Thread.sleep(forTimeInterval: 0.15)
                try Self.putBack(kept, at: path)
                return (gone, ContinuousClock.now - gone)
            }
            var seen: Set<[WidgetInstanceID]> = []
            let until = gone + WidgetService.removalGrace + .milliseconds(500)
            while ContinuousClock.now < until {
                seen.insert(try await Self.layout(client))
                try await Task.sleep(for: .milliseconds(20))
            }
            guard away < WidgetService.removalGrace / 2 else {
                #expect(try await eventually(5) { try await Self.layout(client) == [kind, tokyo] })
                continue
            }
            timely += 1
            #expect(seen == [[kind, tokyo]], "\(seen), the file away for \(away)")
        }
        #expect(timely == 1, "the file was never back within half the grace")

        // Removed again before the first removal's grace ran out (`git
        // checkout` twice): the second removal counts from its own time,
        // and the look the first one asked for finds it too early. The
        // attempt counts where that look fell within the second removal.
        timely = 0
        for _ in 0..<5 where timely == 0 {
            let start = ContinuousClock.now
            let watching = Task {
                var seen: Set<[WidgetInstanceID]> = []
                while ContinuousClock.now < start + WidgetService.removalGrace * 2 + .milliseconds(400) {
                    seen.insert(try await Self.layout(client))
                    try await Task.sleep(for: .milliseconds(20))
                }
                return seen
            }
            let (gone, goneAgain, back) = try await offThePool {
                let gone = ContinuousClock.now
                unlink(path)
                Thread.sleep(forTimeInterval: 0.15)
                try Self.putBack(kept, at: path)
                Thread.sleep(forTimeInterval: max(0, (gone + .milliseconds(700) - ContinuousClock.now) / .seconds(1)))
                let goneAgain = ContinuousClock.now
                unlink(path)
                Thread.sleep(forTimeInterval: max(0, (gone + WidgetService.removalGrace + .milliseconds(300) - ContinuousClock.now) / .seconds(1)))
                try Self.putBack(kept, at: path)
                return (gone, goneAgain, ContinuousClock.now)
            }
            let seen = try await watching.value
            guard goneAgain - gone < WidgetService.removalGrace - .milliseconds(150),
                back - gone > WidgetService.removalGrace + .milliseconds(100),
                back - goneAgain < WidgetService.removalGrace - .milliseconds(200)
            else {
                #expect(try await eventually(5) { try await Self.layout(client) == [kind, tokyo] })
                continue
            }
            timely += 1
            #expect(seen == [[kind, tokyo]], "\(seen), away again \(goneAgain - gone) after the first removal, for \(back - goneAgain)")
        }
        #expect(timely == 1, "the second removal never spanned the end of the first one's grace")

        // Gone for good: the layout from ListWidgets' order, without the added one.
        #expect(unlink(path) == 0)
        #expect(try await eventually(5) { try await Self.layout(client) == [kind] })
    }

    /// A layout.plist that does not read (an edit half done) is the
    /// user's: todayd does not write over it, neither when a rescan finds
    /// a new kind nor for a change through D-Bus, which is refused with
    /// what is wrong and what to do. Once it reads, it is the layout again.
    @Test(.timeLimit(.minutes(1)))
    func aLayoutThatDoesNotReadIsNotWrittenOver() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Clock", widgets: [.init(name: "W", script: #"echo '{"result": "new-data", "snapshot": {"title": "clock"}}'"#)])
        let home = try temporaryDirectory("broken-layout")
        defer { try? FileManager.default.removeItem(at: home) }
        let path = home.path + "/.config/todayd/layout.plist"
        try FileManager.default.createDirectory(atPath: home.path + "/.config/todayd", withIntermediateDirectories: true)
        let kind = WidgetInstanceID(kind: BundleID("org.example.Clock.W"))
        // The user's own order, so that a new kind is written down.
        try Plist.write(.dictionary(["Layout": .array([.string(kind.description)]), "Known": .array([.string(kind.kind.rawValue)])]), format: .xml)
            .write(to: URL(fileURLWithPath: path))
        let daemon = try TodayDaemon(bundles: [bundles.path], home: home)
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        #expect(try await eventually(5) { try await Self.layout(client) == [kind] })

        let halfDone = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>Layout</key><array><string>org.exa"#
        try Data(halfDone.utf8).write(to: URL(fileURLWithPath: path))
        try await Task.sleep(for: .milliseconds(300))
        // A rescan that finds a new kind keeps the layout in memory.
        let staging = try BundleFolder()
        defer { staging.remove() }
        try staging.addApp("org.example.Other", widgets: [.init(name: "W", script: #"echo '{"result": "new-data", "snapshot": {"title": "other"}}'"#)])
        #expect(rename(staging.path + "/org.example.Other.app", bundles.path + "/org.example.Other.app") == 0)
        let other = WidgetInstanceID(kind: BundleID("org.example.Other.W"))
        #expect(try await eventually(10) { try await Self.layout(client) == [kind, other] })
        #expect(try String(contentsOfFile: path, encoding: .utf8) == halfDone, "written over by a rescan")

        do {
            _ = try await client.center("SetLayout", [.array(.objectPath, [.objectPath(other.path), .objectPath(kind.path)])])
            Issue.record("SetLayout wrote over a layout.plist that does not read")
        } catch let error as DBusError {
            #expect(error.message.contains("\(path) does not read") && error.message.contains("fix it, or remove it"), "\(error)")
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == halfDone)
        #expect(try await Self.layout(client) == [kind, other])

        // Fixed by hand: read, and changes are written again.
        try Plist.write(.dictionary(["Layout": .array([.string(other.description), .string(kind.description)])]), format: .xml)
            .write(to: URL(fileURLWithPath: path))
        #expect(try await eventually(5) { try await Self.layout(client) == [other, kind] })
        _ = try await client.center("SetLayout", [.array(.objectPath, [.objectPath(kind.path), .objectPath(other.path)])])
        #expect(try Plist.read(contentsOf: path)["Layout"]?.array?.compactMap(\.string) == [kind.description, other.description])
    }

    /// Budgets and back-off are each instance's: one whose settings make
    /// its provider fail is refused on request while it backs off, and the
    /// kind's other instances update as before.
    @Test(.timeLimit(.minutes(1)))
    func aFailingInstanceBacksOffAlone() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let parameters: PlistValue = .array([.dictionary(["key": .string("fail"), "type": .string("boolean"), "default": .boolean(false)])])
        try bundles.addApp(
            "org.example.Flaky",
            widgets: [
                .init(
                    name: "W",
                    script: #"case "$TODAY_CONFIGURATION" in *true*) exit 3;; esac; printf '{"result": "new-data", "snapshot": {"title": "fine %s"}}' "$TODAY_INSTANCE""#,
                    attributes: ["TodayParameters": parameters])
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let kindID = BundleID("org.example.Flaky.W")
        let kind = kindID.rawValue
        let reply = try await client.center("AddWidget", [.string(kind), VariantDictionary([("fail", .boolean(true))]).value, .string(""), .int32(-1)])
        guard case .objectPath(let path)? = reply.body.first, let failing = WidgetInstanceID(path: path) else {
            Issue.record("no instance")
            return
        }
        func update(_ id: WidgetInstanceID) async throws -> String {
            try await client.call(Today.busName, path: id.path, interface: Today.widget.name, member: MemberName("PerformUpdate")).body.first?.string ?? ""
        }
        var refused: DBusError?
        for _ in 0..<(Int(Schedule.requestThreshold) + 2) {
            do {
                #expect(try await update(failing) == "failed")
            } catch let error as DBusError {
                refused = error
                break
            }
        }
        #expect(refused?.message.contains("runs again on request in") == true, "\(String(describing: refused))")
        // The kind's own instance is not held back.
        #expect(try await update(WidgetInstanceID(kind: kindID)) == "new-data")
        #expect(try await Self.snapshotTitle(client, WidgetInstanceID(kind: kindID)) == "fine ")
        let failures = try await client.call(
            Today.busName, path: failing.path, interface: .properties, member: MemberName("Get"),
            [.string(Today.widget.name.rawValue), .string("LastFailure")])
        #expect(failures.body.first?.unwrapped == .string("exit 3"))
    }

    /// From python3-dbus, as a panel written in Python sees it: an added
    /// instance comes with InterfacesAdded (Widget and Instance), a removed
    /// one goes with InterfacesRemoved, and a bad value is InvalidArgs.
    @Test(.timeLimit(.minutes(1)))
    func instancesComeAndGoOnTheObjectManager() async throws {
        let (bundles, daemon, client) = try await Self.clockService()
        defer { Self.stop(bundles, daemon, client) }
        let script = #"""
            import dbus, sys
            from dbus.mainloop.glib import DBusGMainLoop
            from gi.repository import GLib
            DBusGMainLoop(set_as_default=True)
            bus = dbus.bus.BusConnection(sys.argv[1])
            seen = []
            def added(path, interfaces):
                seen.append("added %s %s" % (path, ",".join(sorted(k for k in interfaces if k.startswith("io.github")))))
            def removed(path, interfaces):
                seen.append("removed %s %s" % (path, ",".join(sorted(k for k in interfaces if k.startswith("io.github")))))
            bus.add_signal_receiver(added, "InterfacesAdded", "org.freedesktop.DBus.ObjectManager", "io.github.todayd.Today1")
            bus.add_signal_receiver(removed, "InterfacesRemoved", "org.freedesktop.DBus.ObjectManager", "io.github.todayd.Today1")
            center = dbus.Interface(bus.get_object("io.github.todayd.Today1", "/io/github/todayd/Today1"), "io.github.todayd.Today1.Center")
            path = center.AddWidget("org.example.Clock.World", {"zone": "Asia/Tokyo"}, "medium", -1)
            try:
                center.AddWidget("org.example.Clock.World", {"seconds": "yes"}, "", -1)
            except dbus.DBusException as error:
                print("refused %s: %s" % (error.get_dbus_name(), error.get_dbus_message()))
            instance = dbus.Interface(bus.get_object("io.github.todayd.Today1", path), "org.freedesktop.DBus.Properties")
            print("configuration %s" % dict(instance.Get("io.github.todayd.Today1.Instance", "Configuration")))
            center.RemoveWidget(path)
            loop = GLib.MainLoop()
            GLib.timeout_add(500, loop.quit)
            loop.run()
            for line in seen: print(line)
            """#
        let result = try await run(["/usr/bin/python3", "-c", script, daemon.address])
        #expect(result.status == 0, "\(result.error)")
        let path = WidgetInstanceID(kind: Self.clock, number: 1).path.rawValue
        #expect(result.output.contains("refused org.freedesktop.DBus.Error.InvalidArgs: org.example.Clock.World: parameter 'seconds'"), "\(result.output)")
        #expect(result.output.contains("configuration {dbus.String('zone'): dbus.String('Asia/Tokyo', variant_level=1)}"), "\(result.output)")
        #expect(result.output.contains("added \(path) io.github.todayd.Today1.Instance,io.github.todayd.Today1.Widget"), "\(result.output)")
        #expect(result.output.contains("removed \(path) io.github.todayd.Today1.Instance,io.github.todayd.Today1.Widget"), "\(result.output)")
    }
}
