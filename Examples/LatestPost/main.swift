// The LatestPost widget: the post the AgostiniTech app saved into the app
// group, with its title, description and image; a tap opens
// agostiniTech://openPost?postID=<id>, and a "Mark as read" button (an
// intent) marks it read in the group, where the app sees it.
import AgostiniTechShared
import Foundation
import TodayKit

/// The "Mark as read" button: the post shown is the one read.
struct MarkAsRead: WidgetIntent {
    static let id = "mark-as-read"
    static let title = "Mark as read"

    struct NoPost: Error, CustomStringConvertible {
        var description: String { "the app has saved no post yet" }
    }

    func perform() async throws {
        guard let persistence = GroupDefaults(suiteName: Key.GroupID), let postID = persistence.value(forKey: Key.PostID) as? Int else {
            throw NoPost()
        }
        persistence.set(postID, forKey: Key.ReadPostID)
    }
}

@main
struct LatestPost: WidgetProviding {
    static let intents: [any WidgetIntent.Type] = [MarkAsRead.self]

    private var persistence: GroupDefaults? { GroupDefaults(suiteName: Key.GroupID) }

    func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
        guard let persistence else { return (.failed, previous) }
        guard let itemID = persistence.value(forKey: Key.PostID) as? Int,
            let title = persistence.string(forKey: Key.PostTitle)
        else {
            return (.noData, previous)
        }
        let read = persistence.value(forKey: Key.ReadPostID) as? Int == itemID
        let snapshot = Snapshot(
            title: title,
            subtitle: read ? "Read" : nil,
            body: persistence.string(forKey: Key.PostDescription),
            image: persistence.data(forKey: Key.PostImage),
            url: URL(string: URLFormatter.openPost(postID: itemID)),
            actions: read ? [] : [.button(intent: MarkAsRead(), iconName: "mail-mark-read")],
            accessibilityLabel: "Latest post: \(title)\(read ? ", read" : "")")
        return (snapshot == previous ? .noData : .newData, snapshot)
    }
}
