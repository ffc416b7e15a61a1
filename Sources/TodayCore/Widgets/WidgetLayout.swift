import FoundationEssentials
import PropertyList
import TodayProtocol

/// The user's layout of the Today view (SPEC section 16), as plain values:
/// which instances are placed, in which order, with which settings. Tested
/// without a bus; `WidgetService` keeps one and `LayoutStore` writes it to
/// `$XDG_CONFIG_HOME/todayd/layout.plist`.
///
/// Until the user changes anything, `order` is nil and the view shows
/// every kind with content in ListWidgets order. The first change writes
/// that order down, and from then on it is the user's: a kind never seen
/// before joins at the end, a kind whose bundle is removed keeps its
/// places (and its instances' settings) for its return.
struct WidgetLayout: Equatable, Sendable {
    /// An added instance's settings.
    struct Placed: Equatable, Sendable {
        var configuration: PlistDictionary
        var family: WidgetFamily
    }

    /// The user's order; nil until the first change.
    var order: [WidgetInstanceID]?
    /// The kinds the user's order has seen: one not among them is new.
    var known: Set<BundleID> = []
    /// The added instances, placed or not.
    var instances: [WidgetInstanceID: Placed] = [:]
    /// The next number of each kind's added instances: never reused.
    var nextNumbers: [BundleID: UInt32] = [:]

    /// What the view shows: placed instances of installed kinds that have
    /// content, in order. `kinds` are the installed kinds in ListWidgets
    /// order.
    func shown(kinds: [BundleID], hasContent: (WidgetInstanceID) -> Bool) -> [WidgetInstanceID] {
        guard let order else { return kinds.map { WidgetInstanceID(kind: $0) }.filter(hasContent) }
        let installed = Set(kinds)
        return order.filter { installed.contains($0.kind) && hasContent($0) }
    }

    /// Every instance of the installed `kinds` that has an object: each
    /// kind's default one, and the added ones.
    func instances(of kinds: [BundleID]) -> [WidgetInstanceID] {
        let installed = Set(kinds)
        return kinds.map { WidgetInstanceID(kind: $0) } + instances.keys.filter { installed.contains($0.kind) }.sorted()
    }

    /// Puts kinds the user's order has not seen at its end; true when
    /// something changed (to be written).
    mutating func adopt(_ kinds: [BundleID]) -> Bool {
        guard order != nil else { return false }
        let new = kinds.filter { !known.contains($0) }
        guard !new.isEmpty else { return false }
        order?.append(contentsOf: new.map { WidgetInstanceID(kind: $0) })
        known.formUnion(new)
        return true
    }

    /// The order as it stands, written down: the first change makes the
    /// shown order (every installed kind, with content or not) the user's.
    private mutating func settle(_ kinds: [BundleID]) {
        guard order == nil else { return }
        order = kinds.map { WidgetInstanceID(kind: $0) }
        known = Set(kinds)
    }

    /// Places a new instance of `kind` before what `shown` has at
    /// `position` (past its end or negative: at the end).
    mutating func add(
        _ kind: BundleID, _ placed: Placed, at position: Int, kinds: [BundleID], shown: [WidgetInstanceID]
    ) -> WidgetInstanceID {
        settle(kinds)
        let number = nextNumbers[kind] ?? 1
        nextNumbers[kind] = number &+ 1 == 0 ? number : number + 1
        let id = WidgetInstanceID(kind: kind, number: number)
        instances[id] = placed
        var order = self.order ?? []
        if position >= 0, position < shown.count, let index = order.firstIndex(of: shown[position]) {
            order.insert(id, at: index)
        } else {
            order.append(id)
        }
        self.order = order
        return id
    }

    /// Takes `id` out: an added instance is forgotten, a kind's default
    /// one leaves the order only. False when it was not placed.
    mutating func remove(_ id: WidgetInstanceID, kinds: [BundleID]) -> Bool {
        settle(kinds)
        guard let index = order?.firstIndex(of: id) else { return false }
        order?.remove(at: index)
        if !id.isDefault { instances[id] = nil }
        return true
    }

    /// Orders what is shown as `wanted`, a permutation of `shown`; what is
    /// placed but not shown (no content, bundle away) keeps its place.
    mutating func reorder(_ wanted: [WidgetInstanceID], shown: [WidgetInstanceID], kinds: [BundleID]) throws(ConfigurationProblem) {
        guard wanted.count == shown.count, Set(wanted) == Set(shown) else {
            throw ConfigurationProblem(
                "the layout must hold each of the \(shown.count) instances of Layout once, in the order wanted; read Layout first")
        }
        settle(kinds)
        let shownSet = Set(shown)
        var next = wanted.makeIterator()
        order = order?.map { id in shownSet.contains(id) ? (next.next() ?? id) : id }
    }

    // MARK: Stored form

    var plist: PlistValue {
        var d = PlistDictionary()
        if let order { d["Layout"] = .array(order.map { .string($0.description) }) }
        d["Known"] = .array(known.sorted().map { .string($0.rawValue) })
        var placed = PlistDictionary()
        for (id, settings) in instances.sorted(by: { $0.key < $1.key }) {
            placed[id.description] = .dictionary(["Family": .string(settings.family.rawValue), "Configuration": .dictionary(settings.configuration)])
        }
        d["Instances"] = .dictionary(placed)
        var numbers = PlistDictionary()
        for (kind, number) in nextNumbers.sorted(by: { $0.key < $1.key }) { numbers[kind.rawValue] = .integer(Int64(number)) }
        d["NextNumbers"] = .dictionary(numbers)
        return .dictionary(d)
    }

    /// The layout a stored form describes; `problem` hears of each part it
    /// cannot read (that part is left out, the rest kept).
    init(plist: PlistValue, problem: (String) -> Void) {
        if let list = plist["Layout"]?.array {
            order = list.compactMap { item in
                guard let id = item.string.flatMap(WidgetInstanceID.init) else {
                    problem("Layout: '\(item.string ?? item.typeName)' is not an instance (a widget id, or id/number); left out")
                    return nil
                }
                return id
            }
        }
        known = Set((plist["Known"]?.array ?? []).compactMap { $0.string.flatMap(BundleID.init(rawValue:)) })
        for (key, value) in plist["Instances"]?.dictionary ?? [:] {
            guard let id = WidgetInstanceID(key), !id.isDefault,
                let family = value["Family"]?.string.flatMap(WidgetFamily.init(rawValue:))
            else {
                problem("Instances: '\(key)' is not an added instance with a Family (small, medium or large); left out")
                continue
            }
            instances[id] = Placed(configuration: value["Configuration"]?.dictionary ?? [:], family: family)
        }
        for (key, value) in plist["NextNumbers"]?.dictionary ?? [:] {
            guard let kind = BundleID(rawValue: key), let number = value.int64.flatMap(UInt32.init(exactly:)) else { continue }
            nextNumbers[kind] = number
        }
        // A number in use is never given again, whatever the file says.
        for id in instances.keys where (nextNumbers[id.kind] ?? 1) <= id.number {
            nextNumbers[id.kind] = id.number == UInt32.max ? id.number : id.number + 1
        }
        if let order { order.forEach { known.insert($0.kind) } }
    }

    init() {}
}

/// `$XDG_CONFIG_HOME/todayd/layout.plist`: the user's layout, written
/// durably (a new file renamed over the old).
struct LayoutStore: Sendable {
    let path: String

    init(directories: Directories) {
        path = directories.configHome + "/todayd/layout.plist"
    }

    /// The stored layout, or an empty one where there is no file; `problem`
    /// hears of each entry left out. Throws where the file does not read
    /// as a property list at all (an edit half done, a typo).
    func load(problem: (String) -> Void) throws -> WidgetLayout {
        guard FileManager.default.fileExists(atPath: path) else { return WidgetLayout() }
        return WidgetLayout(plist: try Plist.read(contentsOf: path)) { problem("\(path): \($0)") }
    }

    /// As `load`, with an empty layout where the file does not read, which
    /// `problem` hears of too.
    func read(problem: (String) -> Void) -> WidgetLayout {
        do {
            return try load(problem: problem)
        } catch {
            problem("\(path): \(error); the layout starts from ListWidgets' order")
            return WidgetLayout()
        }
    }

    func save(_ layout: WidgetLayout) throws {
        try DurableFile.write(try Plist.write(layout.plist, format: .xml), toUsersFile: path)
    }
}
