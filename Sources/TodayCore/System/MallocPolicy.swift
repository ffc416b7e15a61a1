import CSystem
import Dispatch
import FoundationEssentials
import Synchronization

/// How todayd's memory goes back to the system. Replies under 2 MiB
/// (a snapshot with a 1 MiB picture, the largest SPEC section 2 allows) are built
/// in memory malloc keeps, so that a panel reading the picture again finds
/// those pages ready instead of mapping, zeroing and unmapping a megabyte
/// for each reply. Larger blocks get mappings of their own. A provider's
/// large answer leaves megabytes free behind it on its thread's heap (the
/// output, its parsed tree, the stored encoding); those are given back as
/// the run ends, so providers that ran once do not keep memory for good.
enum MallocPolicy {
    /// Blocks from this size get mappings of their own.
    static let mappedBlock: Int32 = 2 << 20

    /// Free memory over this at the top of a heap goes back at once. Room
    /// for a reply with a 1 MiB picture and its other values; `giveBack`
    /// does not shorten a thread heap's top, so this is what each keeps.
    static let keptTop: Int32 = 3 << 19

    /// Heaps for the threads to share: two per processor. glibc's eight
    /// per processor spread the same memory over more heaps, each with
    /// free memory of its own (4 MiB more for 1,000 widgets on two cores).
    static var arenas: Int32 { Int32(clamping: 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// Provider output from this size is given back after its run. Smaller
    /// answers leave too little to pay for the walk over every arena.
    static let largeOutput = 256 << 10

    /// Sets malloc's thresholds and heaps; once, before the threads start.
    static func configure() { today_malloc_configure(mappedBlock, keptTop, arenas) }

    /// Gives every arena's free memory back to the system, now and once
    /// more a little later: what the run announced (a PropertiesChanged
    /// with the picture) is freed only once the bus has read it. Calls
    /// while the later one is pending share it.
    static func giveBack() {
        today_malloc_give_back()
        guard !laterPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(200)) {
            laterPending.store(false, ordering: .releasing)
            today_malloc_give_back()
        }
    }

    private static let laterPending = Atomic<Bool>(false)
}
