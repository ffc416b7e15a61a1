import FoundationEssentials
import TodayProtocol

/// The four steps of SPEC section 6 as a state machine: given the bundles
/// that declare a URL's scheme and the registered connections, it says what
/// to find out next and, once it knows, where the URL goes. It asks and
/// decides; `TodayService.resolve` finds out (a bus round trip, a look in
/// the mime-apps index) and feeds the answers back.
struct URLRouter {
    /// What to do next.
    enum Step: Equatable {
        /// Find out whether `connection`, registered as `bundle`, exports
        /// org.freedesktop.Application at its path; then `answer(exports:)`.
        case ask(connection: String, bundle: String)
        /// Look up the desktop entry for `x-scheme-handler/<scheme>`; then
        /// `answer(desktopEntry:)`.
        case lookUpDesktopEntry(scheme: String)
        /// The URL goes to this handler.
        case open(URLHandler)
        /// Nothing handles the scheme.
        case noHandler(scheme: String)
    }

    let scheme: String
    /// Installed bundles that declare the scheme, in catalog order.
    private let apps: [AppManifest]
    /// Step 1's candidates not asked yet: registered connections whose
    /// bundle declares the scheme, in registration order.
    private var candidates: ArraySlice<(connection: String, bundle: String)>
    private(set) var step: Step

    /// `scheme` in lower case; `apps` every installed app (those that do
    /// not declare the scheme are left out here).
    init(scheme: String, apps: [AppManifest], registrations: [(connection: String, bundle: String)]) {
        self.scheme = scheme
        let declaring = apps.filter { app in app.urlSchemes.contains { $0.lowercased() == scheme } }
        self.apps = declaring
        candidates = ArraySlice(registrations.filter { registration in declaring.contains { $0.bundleIdentifier.rawValue == registration.bundle } })
        step = .noHandler(scheme: scheme)
        step = next()
    }

    /// Step 1's answer for the connection last asked about.
    mutating func answer(exports: Bool) {
        guard case .ask(let connection, let bundle) = step else { return }
        step = exports ? .open(.runningApp(bundle: bundle, connection: connection)) : next()
    }

    /// Step 3's answer: the entry mime-apps picks among those that can be
    /// started, or nil.
    mutating func answer(desktopEntry: MimeApps.Application?) {
        guard case .lookUpDesktopEntry = step else { return }
        step = desktopEntry.map { .open(.desktopEntry($0)) } ?? .noHandler(scheme: scheme)
    }

    private mutating func next() -> Step {
        // 1. A running app that registered and exports org.freedesktop.Application.
        if let candidate = candidates.popFirst() { return .ask(connection: candidate.connection, bundle: candidate.bundle) }
        // 2. An installed bundle that declares the scheme.
        if let app = apps.first(where: { $0.executable != nil }) { return .open(.bundle(app)) }
        // 3. The desktop entry for x-scheme-handler/<scheme>; 4. else none.
        return .lookUpDesktopEntry(scheme: scheme)
    }
}
