# todayd: build, test, benchmark.
SWIFT ?= swift
CONFIG ?= debug
BUILD = .build/$(CONFIG)
BENCH_OUT = .build/bench
TEST_BINARY = .build/debug/TodayPackageTests.xctest

.PHONY: all deps build release examples test-build test adversarial soak torture flood conformance bench screenshots fuzz run demo install deb interfaces clean
PREFIX ?= /usr/local
DESTDIR ?=
FUZZ_SECONDS ?= 600
TEST_FUZZ_RUNS ?= 20000

all: build

deps:
	@scripts/install-deps

build: deps
	$(SWIFT) build -c $(CONFIG)

release: deps
	$(SWIFT) build -c release

# The example bundles, with executables built from Examples/.
examples: deps
	$(SWIFT) build -c $(CONFIG)
	scripts/assemble-examples .build/examples $(BUILD)

# What every run of the suite needs: the tests, the binaries, the example bundles.
test-build: deps
	$(SWIFT) build --build-tests
	$(SWIFT) build
	scripts/assemble-examples .build/examples .build/debug
	scripts/assemble-essentials .build/essentials .build/debug
	scripts/python-packages

# The whole suite. Tests start their own dbus-daemon and stop it.
test: test-build
	scripts/test-limits
	timeout 1200 $(TEST_BINARY) --testing-library swift-testing
	TODAY_TEST_BUILDS=1 timeout 900 $(TEST_BINARY) --testing-library swift-testing --filter NewProjectTests
	TODAY_TEST_ALONE=1 timeout 600 $(TEST_BINARY) --testing-library swift-testing --filter "SlowAppletTests|PortalTests"
	TODAY_TEST_ALONE=1 timeout 60 $(TEST_BINARY) --testing-library swift-testing --filter localTimeFollowsTheSystem
	TODAY_TEST_DISPLAY=1 timeout 600 $(TEST_BINARY) --testing-library swift-testing --filter "TodayViewTests|BannerTests"
	TODAY_TEST_DISPLAY=1 TODAY_TEST_ALONE=1 timeout 300 $(TEST_BINARY) --testing-library swift-testing --filter aCardDraggedOntoAnotherTakesItsPlace
	$(MAKE) deb
	scripts/check-deb .build/deb/todayd_*.deb .build/examples
	scripts/fuzz --runs $(TEST_FUZZ_RUNS)

# The long adversarial runs: 100 clients for LOAD_SECONDS against the real
# daemon (the fast adversarial tests are part of make test).
LOAD_SECONDS ?= 60
adversarial: test-build
	TODAYD_LOAD_SECONDS=$(LOAD_SECONDS) $(TEST_BINARY) --testing-library swift-testing --filter "LoadTests|AdversarialTests|DurabilityTests"

# Ten minutes of the same load (make adversarial's, with URLs opened):
# memory and descriptors at the end against after the first minute.
SOAK_SECONDS ?= 600
soak: test-build
	TODAYD_LOAD_SECONDS=$(SOAK_SECONDS) $(TEST_BINARY) --testing-library swift-testing --filter "LoadTests"

# Crash consistency at length: TORTURE_ROUNDS rounds of SIGKILL under mixed
# load from four clients (make test runs 10).
TORTURE_ROUNDS ?= 200
torture: test-build
	TODAY_TORTURE_ROUNDS=$(TORTURE_ROUNDS) $(TEST_BINARY) --testing-library swift-testing --filter "CrashTests"

# 100,000 notifications from 10 apps, then long bodies from three, while
# another app and a widget are timed (NotificationFloodTests;
# TODAY_FLOOD_PER_APP to change the size), against the release build of todayd.
flood: test-build release
	TODAY_TEST_ALONE=1 TODAY_TEST_TODAYD=$(abspath .build/release/todayd) $(TEST_BINARY) --testing-library swift-testing --filter NotificationFloodTests

# The Desktop Notifications Specification's calls against dunst and todayd,
# side by side (dunst under Xvfb, installed here where it is missing).
conformance: build
	scripts/install-deps dunst
	scripts/notify-conformance .build/$(CONFIG)/todayd

# libFuzzer targets for the property-list readers, FUZZ_SECONDS each.
fuzz: deps
	scripts/fuzz $(FUZZ_SECONDS)

# Side-by-side benchmarks against the C references in bench/reference (ours,
# on libdbus), and Notify against the peers dunst and mako (installed here
# where they are missing); where ../shared/bench exists (BENCH_SHARED), its
# references are measured beside ours first.
BENCH_SHARED ?= $(wildcard ../shared/bench)
bench: deps release
	scripts/install-deps dunst mako-notifier
	$(MAKE) -C bench/reference OUT=$(abspath $(BENCH_OUT))
	$(if $(BENCH_SHARED),scripts/bench-references $(BENCH_OUT) $(BENCH_SHARED))
	scripts/bench-dbus $(BENCH_OUT) .build/release
	scripts/bench-plist $(BENCH_OUT) .build/release
	scripts/bench-widgets $(BENCH_OUT) .build/release
	scripts/bench-actions $(BENCH_OUT) .build/release
	scripts/bench-timelines $(BENCH_OUT) .build/release
	scripts/bench-images $(BENCH_OUT) .build/release
	scripts/bench-bundles $(BENCH_OUT) .build/release
	scripts/bench-clients $(BENCH_OUT) .build/release
	scripts/bench-center $(BENCH_OUT) .build/release
	scripts/bench-notify $(BENCH_OUT) .build/release
	scripts/bench-schedule $(BENCH_OUT) .build/release
	scripts/bench-instances $(BENCH_OUT) .build/release
	scripts/bench-essentials $(BENCH_OUT) .build/release

# The daemon on a bus of its own, serving the example bundles.
run: examples
	$(BUILD)/todayd --private-bus --verbose --bundles .build/examples

# The whole loop, from a fresh machine: examples installed, apps run,
# widgets updated and shown, a tap reaching the app.
demo: deps
	$(SWIFT) build -c release
	scripts/demo .build/release

# docs/images: the Today view light and dark under Xvfb, and Waybar and
# swaybar showing the examples under a headless sway, shot with grim.
screenshots: release
	@scripts/install-deps sway waybar grim fonts-dejavu-core
	scripts/screenshots .build/release docs/images

# Binaries, the systemd user unit, the D-Bus activation file, the interface
# XML, man pages, bash completion and docs, under $(DESTDIR)$(PREFIX).
install: release
	scripts/install .build/release $(PREFIX) $(DESTDIR)

# A Debian package in .build/deb, its binaries linked with the Swift
# standard library statically.
deb: deps
	$(SWIFT) build -c release --static-swift-stdlib --product todayd
	$(SWIFT) build -c release --static-swift-stdlib --product todayctl
	$(SWIFT) build -c release --static-swift-stdlib --product today-view
	$(SWIFT) build -c release --static-swift-stdlib --product today-banners
	$(SWIFT) build -c release --static-swift-stdlib --product todayd-essentials
	rm -rf .build/deb
	scripts/build-deb .build/release .build/deb

# data/dbus/io.github.todayd.Today1.xml from the interfaces as declared.
interfaces: build
	$(BUILD)/todayd --print-interfaces > data/dbus/io.github.todayd.Today1.xml

clean:
	$(SWIFT) package clean
