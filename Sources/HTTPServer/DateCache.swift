import Glibc

/// The IMF-fixdate for the `Date` header (RFC 9110 §5.6.7), formatted at most once a second.
struct DateCache {
    private var second = -1
    private var value = ""

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    mutating func current() -> String {
        let now = time(nil)
        if Int(now) == second { return value }
        second = Int(now)
        var parts = tm()
        var seconds = now
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        value =
            "\(Self.days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(Self.months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        return value
    }
}
