import DBus
import FoundationEssentials
import TodayProtocol

/// The `image-data` hint (SPEC section 14): checked exactly, as dunst and
/// mako refuse, and scaled down to fit `NotificationImages.largest` before
/// it is kept, so that a thousand notifications with pictures stay small.
enum NotificationImages {
    /// The largest side a kept picture has.
    static let largest: Int32 = 256

    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    /// The picture `value` (an `(iiibiiay)`) holds, checked; `hint` names
    /// it in the error.
    static func image(_ value: Value, hint: String) throws(Refused) -> TodayNotification.Image {
        guard case .structure(let fields) = value, fields.count == 7, case .int32(let width) = fields[0], case .int32(let height) = fields[1],
            case .int32(let rowstride) = fields[2], case .boolean(let hasAlpha) = fields[3], case .int32(let bits) = fields[4],
            case .int32(let channels) = fields[5], case .bytes(let data) = fields[6]
        else {
            throw Refused(description: "hint '\(hint)' must be (iiibiiay): width, height, rowstride, has_alpha, bits per sample, channels, data")
        }
        guard (1...4096).contains(width), (1...4096).contains(height) else {
            throw Refused(description: "hint '\(hint)': width and height must be 1 to 4096, not \(width)×\(height)")
        }
        guard bits == 8 else { throw Refused(description: "hint '\(hint)': bits per sample must be 8, not \(bits)") }
        guard channels == 3 || channels == 4 else { throw Refused(description: "hint '\(hint)': channels must be 3 or 4, not \(channels)") }
        guard hasAlpha == (channels == 4) else {
            throw Refused(description: "hint '\(hint)': has_alpha is \(hasAlpha) with \(channels) channels; it must be true exactly with 4")
        }
        let row = Int(width) * Int(channels)
        guard Int(rowstride) >= row else {
            throw Refused(description: "hint '\(hint)': rowstride \(rowstride) is less than a row's \(row) bytes")
        }
        let expected = (Int(height) - 1) * Int(rowstride) + row
        guard data.count == expected else {
            throw Refused(
                description: "hint '\(hint)': data is \(data.count) bytes; \(width)×\(height) with rowstride \(rowstride) and \(channels) channels needs exactly \(expected)")
        }
        return scaledToFit(
            TodayNotification.Image(width: width, height: height, rowstride: rowstride, hasAlpha: hasAlpha, bitsPerSample: bits, channels: channels, data: data))
    }

    /// `image` where it fits `largest`; else scaled down to fit, keeping its
    /// proportions, each pixel the mean of the pixels it covers, rows packed.
    static func scaledToFit(_ image: TodayNotification.Image) -> TodayNotification.Image {
        guard image.width > largest || image.height > largest else { return image }
        let scale = Double(largest) / Double(max(image.width, image.height))
        let width = max(1, Int((Double(image.width) * scale).rounded()))
        let height = max(1, Int((Double(image.height) * scale).rounded()))
        let channels = Int(image.channels)
        let sourceWidth = Int(image.width), sourceHeight = Int(image.height), stride = Int(image.rowstride)
        var output = [UInt8](repeating: 0, count: width * height * channels)
        image.data.withUnsafeBytes { raw in
            let source = raw.bindMemory(to: UInt8.self)
            for y in 0..<height {
                let top = y * sourceHeight / height
                let bottom = max(top + 1, (y + 1) * sourceHeight / height)
                for x in 0..<width {
                    let left = x * sourceWidth / width
                    let right = max(left + 1, (x + 1) * sourceWidth / width)
                    var sums = [Int](repeating: 0, count: channels)
                    for sy in top..<bottom {
                        let rowStart = sy * stride
                        for sx in left..<right {
                            let at = rowStart + sx * channels
                            for c in 0..<channels { sums[c] += Int(source[at + c]) }
                        }
                    }
                    let count = (bottom - top) * (right - left)
                    let out = (y * width + x) * channels
                    for c in 0..<channels { output[out + c] = UInt8(sums[c] / count) }
                }
            }
        }
        return TodayNotification.Image(
            width: Int32(width), height: Int32(height), rowstride: Int32(width * channels), hasAlpha: image.hasAlpha, bitsPerSample: 8,
            channels: image.channels, data: Data(output))
    }

    /// `image-path` as a path: a `file://` URI's path, else the text as sent.
    static func path(_ text: String) -> String {
        guard text.hasPrefix("file://"), let url = URL(string: text), url.isFileURL else { return text }
        return url.path
    }
}
