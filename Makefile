# todayd: build, test, benchmark.
SWIFT ?= swift
CONFIG ?= debug
BUILD = .build/$(CONFIG)
BENCH_OUT = .build/bench
TEST_BINARY = .build/debug/TodayPackageTests.xctest

.PHONY: all deps build release examples test bench fuzz run demo clean
FUZZ_SECONDS ?= 600
TEST_FUZZ_SECONDS ?= 20

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

# The whole suite. Tests start their own dbus-daemon and stop it.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) build
	scripts/assemble-examples .build/examples .build/debug
	timeout 1200 $(TEST_BINARY) --testing-library swift-testing
	scripts/fuzz $(TEST_FUZZ_SECONDS)

# libFuzzer targets for the property-list readers, FUZZ_SECONDS each.
fuzz: deps
	scripts/fuzz $(FUZZ_SECONDS)

# Side-by-side benchmarks against the C references in ../shared/bench (or BENCH_REF).
BENCH_REF ?= $(firstword $(wildcard ../shared/bench) bench/reference)
bench: deps release
	mkdir -p $(BENCH_OUT)
	$(MAKE) -C $(BENCH_REF) OUT=$(abspath $(BENCH_OUT))
	scripts/bench-dbus $(BENCH_OUT) .build/release
	scripts/bench-plist $(BENCH_OUT) .build/release
	scripts/bench-widgets $(BENCH_OUT) .build/release
	scripts/bench-bundles $(BENCH_OUT) .build/release

# The daemon on a bus of its own, serving the example bundles.
run: examples
	$(BUILD)/todayd --private-bus --verbose --bundles .build/examples

# The whole loop, from a fresh machine: examples installed, apps run,
# widgets updated and shown, a tap reaching the app.
demo: deps
	$(SWIFT) build -c release
	scripts/demo .build/release

clean:
	$(SWIFT) package clean
