// The keys the AgostiniTech app and its LatestPost widget share, as the
// tutorial's Key.swift (a file in both targets there, a module here).

public enum Key {
    public static let URLScheme = "agostiniTech"
    public static let GroupID = "group.agostini.tech.sharedData"
    public static let PostID = "postID"
    public static let PostTitle = "postTitle"
    public static let PostDescription = "postDescription"
    public static let PostImage = "postImage"
    /// The id of the post the widget's "Mark as read" button marked.
    public static let ReadPostID = "readPostID"
    public static let WidgetID = "tech.agostini.app.LatestPost"
}

/// agostiniTech://openPost?postID=<id>
public enum URLFormatter {
    public static let OpenPost = "openPost"

    public static func openPost(postID: Int) -> String {
        "\(Key.URLScheme)://\(OpenPost)?\(Key.PostID)=\(postID)"
    }
}
