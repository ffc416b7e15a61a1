import Foundation
import PropertyList
import Testing
import TodayProtocol

/// The one snapshot model (SPEC sections 2 and 10): read, written and
/// checked in one place.
@Suite struct SnapshotTests {
    static let full: PlistDictionary = [
        "title": .string("3 new"), "subtitle": .string("Inbox"), "body": .string("From Ana"), "image": .data(Data([1, 2])),
        "image-path": .string("/tmp/a.png"), "url": .string("mail://inbox"), "accessibility-label": .string("Three new mails"),
        "items": .array([
            .dictionary(["title": .string("Ana"), "subtitle": .string("Lunch?"), "url": .string("mail://1"), "colour": .string("red")]),
            .dictionary(["title": .string("Mark read"), "action": .string("read")]),
        ]),
        "actions": .array([
            .dictionary(["id": .string("read"), "title": .string("Read"), "kind": .string("button"), "weight": .integer(2)]),
            .dictionary(["id": .string("pin"), "title": .string("Pin"), "kind": .string("toggle"), "state": .boolean(true), "icon-name": .string("pin"), "accessibility-label": .string("Pin it")]),
        ]),
        "x-badge": .integer(3),
    ]

    @Test func whatItReadsItWritesBack() {
        let snapshot = Snapshot(Self.full)
        #expect(snapshot.title == "3 new" && snapshot.subtitle == "Inbox" && snapshot.body == "From Ana")
        #expect(snapshot.image == Data([1, 2]) && snapshot.imagePath == "/tmp/a.png" && snapshot.url == URL(string: "mail://inbox"))
        #expect(snapshot.items.map(\.title) == ["Ana", "Mark read"] && snapshot.items[0].extra == ["colour": .string("red")])
        #expect(snapshot.items[1].action == "read")
        #expect(snapshot.actions.map(\.id) == ["read", "pin"] && !snapshot.actions[0].isToggle && snapshot.actions[1].isOn)
        #expect(snapshot.actions[1].iconName == "pin" && snapshot.actions[1].accessibilityLabel == "Pin it")
        #expect(snapshot.actions[0].extra == ["weight": .integer(2)])
        #expect(snapshot.extra == ["x-badge": .integer(3)])
        #expect(snapshot.dictionary == Self.full, "every key, known or not, goes back as it came")
        // A key of the wrong type is no title, and stays as it was.
        let odd: PlistDictionary = ["title": .integer(7), "url": .string("")]
        #expect(Snapshot(odd).title == nil && Snapshot(odd).dictionary == odd)
        #expect(Snapshot([:]) == Snapshot() && Snapshot().dictionary.isEmpty)
    }

    @Test func aToggleTurnsOverAndNothingElseChanges() {
        let turned = Snapshot.settingToggle("pin", to: false, in: Self.full)
        #expect(Snapshot.action("pin", in: turned)?.isOn == false)
        var expected = Snapshot(Self.full)
        expected.actions[1].kind = .toggle(isOn: false)
        #expect(turned == expected.dictionary)
        #expect(Snapshot.action("absent", in: Self.full) == nil)
    }

    @Test func whatAProviderIsToldAboutABadSnapshot() {
        let action: (PlistDictionary) -> PlistValue = { .array([.dictionary($0)]) }
        let cases: [(PlistDictionary, String?)] = [
            (Self.full, nil),
            (["title": .integer(3)], "snapshot key 'title' must be a string, not integer"),
            (["image": .string("x")], "snapshot key 'image' must be data, not string"),
            (["items": .array([.string("x")])], "snapshot key 'items' must be an array of dictionaries, not array"),
            (["actions": .string("x")], "snapshot key 'actions' must be an array of dictionaries, not string"),
            (["actions": action(["id": .string("a b"), "title": .string("A"), "kind": .string("button")])], "actions[0].id must be 1 to 64 characters of A-Z a-z 0-9 . _ -"),
            (["actions": action(["id": .string("a"), "kind": .string("button")])], "actions[0] ('a') needs a 'title' string"),
            (["actions": action(["id": .string("a"), "title": .string("A"), "kind": .string("toggle")])], "actions[0] ('a') is a toggle and needs a boolean 'state'"),
            (["actions": action(["id": .string("a"), "title": .string("A"), "kind": .string("slider")])], "actions[0].kind must be 'button' or 'toggle'"),
            (["actions": action(["id": .string("a"), "title": .string("A"), "kind": .string("button"), "icon-name": .integer(1)])], "actions[0].icon-name must be a string, not integer"),
            (["actions": .array(Array(repeating: .dictionary(["id": .string("a"), "title": .string("A"), "kind": .string("button")]), count: 2))], "actions[1].id 'a' is used twice"),
            (["items": .array([.dictionary(["title": .string("x"), "action": .string("nope")])])], "items[0].action must name one of the snapshot's actions"),
            (["image": .data(Data(count: Snapshot.maximumImage + 1))], "snapshot image is 1048577 bytes, over the limit of 1048576"),
        ]
        for (dictionary, message) in cases {
            #expect(Snapshot.problem(in: dictionary) == message)
        }
        let many = (0...Snapshot.maximumActions).map { PlistValue.dictionary(["id": .string("a\($0)"), "title": .string("A"), "kind": .string("button")]) }
        #expect(Snapshot.problem(in: ["actions": .array(many)]) == "snapshot offers 9 actions; at most 8")
    }
}
