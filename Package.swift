// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Today",
    products: [
        .executable(name: "todayd", targets: ["todayd"]),
        .executable(name: "todayctl", targets: ["todayctl"]),
        .executable(name: "today-view", targets: ["today-view"]),
        .executable(name: "today-banners", targets: ["today-banners"]),
        .library(name: "TodayKit", targets: ["TodayKit"]),
    ],
    targets: [
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // Deflate for the PNG files of notification pictures.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // iCalendar files, for the Up Next widget.
        .systemLibrary(
            name: "CICal",
            pkgConfig: "libical",
            providers: [.apt(["libical-dev"])]
        ),
        // The Today view and the banners only: todayd and todayctl never link GTK.
        .systemLibrary(
            name: "CGtk",
            pkgConfig: "gtk-layer-shell-0",
            providers: [.apt(["libgtk-3-dev", "libgtk-layer-shell-dev"])]
        ),
        .target(name: "DBus", dependencies: ["CDBus", "CSystem", "Posix"]),
        // Property-list values, writing, binary and JSON reading: no libxml2,
        // for programs that never read XML (the banners).
        .target(name: "PropertyListValues", dependencies: ["Posix"]),
        // Reading property lists, XML through libxml2; brings PropertyListValues along.
        .target(name: "PropertyList", dependencies: ["PropertyListValues", "CLibXML2", "Posix"]),
        // The few libc calls that need _GNU_SOURCE.
        .target(name: "CSystem"),
        // libc as Swift: calls retried when a signal interrupts them, one
        // errno error, descriptors that close themselves.
        .target(name: "Posix", dependencies: ["CSystem"]),
        // What todayd, its clients and TodayKit share: names, paths,
        // interfaces, value mapping, ids, results and error names.
        .target(name: "TodayProtocol", dependencies: ["DBus", "PropertyListValues"]),
        .target(name: "TodayCore", dependencies: ["TodayProtocol", "DBus", "PropertyList", "CLibXML2", "CZlib", "CSystem", "Posix"]),
        .target(name: "TodayKit", dependencies: ["TodayProtocol", "DBus", "PropertyList"]),
        .executableTarget(name: "todayd", dependencies: ["TodayCore"]),
        .executableTarget(name: "todayctl", dependencies: ["TodayCore", "TodayProtocol", "DBus", "PropertyList", "Posix"]),
        // The GTK 3 layer the view and the banners share: calls, signal
        // trampolines, a notification's card, light and dark.
        .target(name: "TodayGtk", dependencies: ["CGtk", "Posix", "DBus", "TodayProtocol"]),
        .executableTarget(name: "today-view", dependencies: ["CGtk", "CSystem", "Posix", "TodayCore", "TodayGtk", "TodayProtocol", "DBus"]),
        // Apart from the view so that it never loads todayd's code or libxml2.
        // What the banners ask the display server: whether the user is away, the outputs' names.
        .target(
            name: "CDisplay", dependencies: ["CGtk"],
            linkerSettings: [.linkedLibrary("wayland-client"), .linkedLibrary("X11"), .linkedLibrary("Xext")]),
        .executableTarget(name: "today-banners", dependencies: ["CGtk", "CDisplay", "CSystem", "Posix", "TodayGtk", "TodayProtocol", "DBus"]),
        // The two tutorial apps and their widgets, built with TodayKit.
        .target(name: "AgostiniTechShared", path: "Examples/AgostiniTechShared"),
        .executableTarget(name: "agostini-tech", dependencies: ["TodayKit", "AgostiniTechShared"], path: "Examples/AgostiniTech"),
        .executableTarget(name: "latest-post", dependencies: ["TodayKit", "AgostiniTechShared"], path: "Examples/LatestPost"),
        .executableTarget(name: "traffic", dependencies: ["TodayKit", "PropertyList"], path: "Examples/Traffic"),
        .executableTarget(name: "traffic-widget", dependencies: ["TodayKit", "PropertyList"], path: "Examples/TrafficWidget"),
        .target(name: "TramShared", dependencies: ["PropertyList"], path: "Examples/TramShared"),
        .executableTarget(name: "tram", dependencies: ["TodayKit", "PropertyList", "TramShared"], path: "Examples/Tram"),
        .executableTarget(name: "tram-departures", dependencies: ["TodayKit", "TramShared"], path: "Examples/TramDepartures"),
        // The widgets that come with todayd (SPEC section 17): their code, and
        // the one executable every extension of Essentials.app runs.
        .target(name: "Essentials", dependencies: ["TodayKit", "TodayProtocol", "DBus", "PropertyList", "CICal"], path: "Essentials/Widgets"),
        .executableTarget(name: "todayd-essentials", dependencies: ["Essentials", "TodayKit", "PropertyList"], path: "Essentials/Main"),
        .executableTarget(name: "dbus-bench-service", dependencies: ["DBus"], path: "Benchmarks/dbus-bench-service"),
        .executableTarget(name: "plist-bench", dependencies: ["PropertyList"], path: "Benchmarks/plist-bench"),
        .executableTarget(name: "bundle-bench", dependencies: ["TodayCore"], path: "Benchmarks/bundle-bench"),
        .executableTarget(name: "trivial-provider", dependencies: ["TodayKit"], path: "Benchmarks/trivial-provider"),
        .executableTarget(name: "runtime-idle-floor", path: "Benchmarks/runtime-idle-floor"),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "PosixTests", dependencies: ["Posix"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TestSupport"]),
        .testTarget(
            name: "TodayCoreTests", dependencies: ["TodayCore", "TodayProtocol", "DBus", "PropertyList", "Posix", "TestSupport", "Essentials"],
            exclude: ["nextdates.py", "pointer-drag.c", "icalcheck.py"]),
        .testTarget(name: "PropertyListTests", dependencies: ["PropertyList", "PropertyListValues", "TestSupport"], exclude: ["plistcheck.py"]),
    ],
    swiftLanguageModes: [.v6]
)
