import Foundation
import ISO15693
import Readers

/// Which tags are in one reader's field: arrivals, departures after `departure-cycles` cycles unseen, and the tags
/// kept quiet (ISO/IEC 15693-3 Stay Quiet: a quiet tag answers only when addressed, so the inventory finds newcomers
/// alone), with the check that Stay Quiet holds on this reader at all.
final class PresenceTracker {
    private let client: ISO15693Client
    private let log: AgentLog
    /// Tags present, with the number of cycles since each was last seen.
    private(set) var present: [UID: Int] = [:]
    /// How many tags the last inventory found (the adaptive slot count).
    var lastCount = 0
    /// Tags sent Stay Quiet: read by address each cycle (the read is the presence check), not found again by the
    /// inventory.
    private(set) var quieted = Set<UID>()
    /// Whether Stay Quiet holds on this reader: off after cycles in which quieted tags answered the inventory
    /// again (a reader that switches its field off between commands resets every tag to Ready).
    private(set) var quietHolds = true
    private var quietLostCycles = 0

    init(client: ISO15693Client, log: AgentLog) {
        self.client = client
        self.log = log
    }

    /// Tags in the field now (seen within the departure window).
    var inField: [UID] { present.keys.sorted { $0.value < $1.value } }

    /// The tags not kept quiet that are present (they answer the inventory).
    var answering: Int { present.keys.filter { !quieted.contains($0) }.count }

    /// A tag seen this cycle; an arrival (an event) when it was not present.
    func seen(_ uid: UID, foundByInventory: Bool) {
        if foundByInventory, present[uid] == nil {
            log.counters.arrivals += 1
            log.event(
                .arrival, uid: uid, name: "", severity: .info, detail: "\(uid) entered the field (\(uid.manufacturer))")
        }
        present[uid] = 0
    }

    /// A tag that will stay quiet from now on (sent Stay Quiet, or quieted by an Inventory Read).
    func keptQuiet(_ uid: UID) { quieted.insert(uid) }

    /// Sends Stay Quiet to a tag with reads; it is then read by address each cycle.
    func quiet(_ uid: UID) {
        do {
            try client.stayQuiet(uid)
            quieted.insert(uid)
        } catch {}
    }

    /// The present tags not seen this cycle for `departureCycles` cycles: each leaves (`leaving` first, then the
    /// departure event; a quiet one is told to be Ready).
    func departures(seen: Set<UID>, departureCycles: Int, leaving: (UID) -> Void) {
        for (uid, missed) in present where !seen.contains(uid) {
            if missed + 1 >= departureCycles {
                present[uid] = nil
                leaving(uid)
                // A quiet tag that is still powered but was not heard (at the edge of the field) would stay
                // quiet, and so invisible to the inventory, until it loses power: tell it to be Ready.
                if quieted.remove(uid) != nil { try? client.resetToReady(uid) }
                log.counters.departures += 1
                log.event(
                    .departure, uid: uid, name: "", severity: .info,
                    detail: "\(uid) not seen for \(departureCycles) cycle\(departureCycles == 1 ? "" : "s")")
            } else {
                present[uid] = missed + 1
            }
        }
    }

    /// Three cycles in a row in which quieted tags answered the inventory again: the reader does not keep tags
    /// powered between commands, so Stay Quiet is left off. (Whoever wakes them on purpose, an audit's round,
    /// also takes them out of `quieted`, so that is not counted.)
    func noteQuietState(answeredTwice: Int, quiet: Bool, reader: String) {
        guard quiet else {
            quietLostCycles = 0
            return
        }
        quietLostCycles = answeredTwice > 0 ? quietLostCycles + 1 : 0
        if quietLostCycles >= 3 {
            quietHolds = false
            // The tags for which Quiet did hold would otherwise stay quiet, unread and never found again.
            wakeQuietTags()
            log.logger.notice(
                "reader \(reader): tags sent Stay Quiet answer the inventory again in 3 cycles in a row (the reader resets them between commands); every cycle now inventories every tag"
            )
        }
    }

    /// Sends every quieted tag Reset to Ready (addressed: a quiet tag ignores anything else), so that an
    /// inventory finds every tag in the field.
    func wakeQuietTags() {
        for uid in quieted.sorted(by: { $0.value < $1.value }) { try? client.resetToReady(uid) }
        quieted.removeAll()
    }
}
