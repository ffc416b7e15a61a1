// The AgostiniTech app: fetches the latest post (from the JSON file in its
// bundle; there is no network), saves it into the app group for the
// LatestPost widget, and shows a post when a tap on the widget opens
// agostiniTech://openPost?postID=<id>.
//
//   agostini-tech                 refresh the latest post, then exit
//   agostini-tech --serve         refresh, then stay running and show posts as they are opened
//   agostini-tech URL             show the post the URL names (todayd starts the app this way)
import AgostiniTechShared
import Foundation
import TodayKit

struct Post: Decodable {
    let postID: Int
    let title: String
    let excerpt: String
    let image: String?
}

/// GetLatestPost: the first post of the feed, saved for the widget.
struct GetLatestPost {
    let persistence = GroupDefaults(suiteName: Key.GroupID)

    func posts() throws -> [Post] {
        guard let path = TodayBundle.main.path(forResource: "posts", ofType: "json") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try JSONDecoder().decode([Post].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    func getLatestPost() throws -> Post? {
        guard let post = try posts().first else { return nil }
        savePost(post)
        return post
    }

    private func savePost(_ post: Post) {
        persistence?.set(post.postID, forKey: Key.PostID)
        persistence?.set(post.title, forKey: Key.PostTitle)
        persistence?.set(post.excerpt, forKey: Key.PostDescription)
        if let image = post.image, let path = TodayBundle.main.path(forResource: image, ofType: ""),
            let data = FileManager.default.contents(atPath: path)
        {
            persistence?.set(data, forKey: Key.PostImage)
        }
        persistence?.synchronize()
    }
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// application(_:open:options:)
func open(_ url: URL, posts: [Post]) {
    let queryItems = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems
    guard url.host == URLFormatter.OpenPost,
        let value = queryItems?.first(where: { $0.name == Key.PostID })?.value, let postID = Int(value)
    else {
        say("AgostiniTech: cannot open \(url.absoluteString)")
        return
    }
    guard let post = posts.first(where: { $0.postID == postID }) else {
        say("AgostiniTech: there is no post \(postID)")
        return
    }
    let read = GroupDefaults(suiteName: Key.GroupID)?.value(forKey: Key.ReadPostID) as? Int == post.postID
    say("AgostiniTech: showing post \(post.postID): \(post.title)\(read ? " (read)" : "")")
    say("  \(post.excerpt)")
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") {
    say("usage: agostini-tech [--serve | URL]")
    exit(0)
}
let source = GetLatestPost()
let posts: [Post]
do {
    posts = try source.posts()
} catch {
    FileHandle.standardError.write(Data("AgostiniTech: cannot read the posts: \(error)\n".utf8))
    exit(1)
}
let urls = TodayApplication.launchURLs
if !urls.isEmpty {
    for url in urls { open(url, posts: posts) }
    exit(0)
}
do {
    if let post = try source.getLatestPost() {
        say("AgostiniTech: saved the latest post, \(post.postID): \(post.title)")
        if source.persistence?.value(forKey: Key.ReadPostID) as? Int == post.postID {
            say("AgostiniTech: you have read post \(post.postID) (marked in the widget)")
        }
        WidgetController.widgetController().setHasContent(true, forWidgetWithBundleIdentifier: Key.WidgetID)
    }
} catch {
    FileHandle.standardError.write(Data("AgostiniTech: \(error)\n".utf8))
    exit(1)
}
if arguments.contains("--serve") {
    let app = try TodayApplication()
    app.onOpen { url in open(url, posts: posts) }
    app.onActivate { say("AgostiniTech: activated") }
    say("AgostiniTech: waiting for posts to open")
    try await app.run()
}
