// The LatestPost widget: the post the AgostiniTech app saved into the app
// group, with its title, description and image; a tap opens
// agostiniTech://openPost?postID=<id>.
import AgostiniTechShared
import Foundation
import TodayKit

@main
struct LatestPost: WidgetProviding {
    private var persistence: GroupDefaults? { GroupDefaults(suiteName: Key.GroupID) }

    func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
        guard let persistence else { return (.failed, previous) }
        guard let itemID = persistence.value(forKey: Key.PostID) as? Int,
            let title = persistence.string(forKey: Key.PostTitle)
        else {
            return (.noData, previous)
        }
        let snapshot = Snapshot(
            title: title,
            body: persistence.string(forKey: Key.PostDescription),
            image: persistence.data(forKey: Key.PostImage),
            url: URL(string: URLFormatter.openPost(postID: itemID)),
            accessibilityLabel: "Latest post: \(title)")
        return (snapshot == previous ? .noData : .newData, snapshot)
    }
}
