import JSON

/// Milliseconds since the Unix epoch, UTC; rendered as RFC 3339 with milliseconds (API.md §2).
package struct Timestamp: Sendable, Hashable, Comparable {
    package var millis: Int64
    package init(millis: Int64) { self.millis = millis }

    package static func < (a: Timestamp, b: Timestamp) -> Bool { a.millis < b.millis }

    /// `2026-11-30T05:45:29.123Z`.
    package var rfc3339: String {
        let fixed = String(unsafeUninitializedCapacity: 24) { writeFixedWidth(into: $0) }
        if !fixed.isEmpty { return fixed }
        let (y, m, d, h, mi, s, ms) = fields
        func pad(_ v: Int64, _ width: Int) -> String {
            let text = String(v)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(ms, 3))Z"
    }

    /// Appends `rfc3339` to `writer` without making the String: every time of a rendered
    /// subscriber goes through here (a String each cost ~900 instructions, callgrind).
    package func appendRFC3339(to writer: inout JSONWriter) {
        var fixed = true
        writer.write(upTo: 24) { room in
            let count = writeFixedWidth(into: room)
            fixed = count > 0
            return count
        }
        if !fixed { writer.append(Array(rfc3339.utf8)) }
    }

    /// Years 0…9999 in the 24 bytes of `out` (digits written in place, no intermediate Strings);
    /// 0 for any other year, which takes the padded general form.
    private func writeFixedWidth(into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let (y, m, d, h, mi, s, ms) = fields
        guard (0...9999).contains(y) else { return 0 }
        // Every field is now 0…9999: unsigned 32-bit digits are a multiply and a shift each,
        // where Int64's signed division and a stride's checks were ~540 instructions a time.
        func put(_ value: Int64, _ width: Int, at start: Int) {
            var v = UInt32(truncatingIfNeeded: value)
            var i = start &+ width
            while i > start {
                i &-= 1
                out[i] = UInt8(truncatingIfNeeded: 48 &+ v % 10)
                v /= 10
            }
        }
        put(y, 4, at: 0); out[4] = 45; put(m, 2, at: 5); out[7] = 45; put(d, 2, at: 8); out[10] = 84
        put(h, 2, at: 11); out[13] = 58; put(mi, 2, at: 14); out[16] = 58; put(s, 2, at: 17); out[19] = 46
        put(ms, 3, at: 20); out[23] = 90
        return 24
    }

    /// Year, month, day, hour, minute, second and millisecond, UTC.
    private var fields: (Int64, Int64, Int64, Int64, Int64, Int64, Int64) {
        let days = millis >= 0 ? millis / 86_400_000 : (millis - 86_399_999) / 86_400_000
        let msOfDay = millis - days * 86_400_000
        let (y, m, d) = Self.civil(fromDays: days)
        return (y, m, d, msOfDay / 3_600_000, (msOfDay / 60_000) % 60, (msOfDay / 1000) % 60, msOfDay % 1000)
    }

    /// Parses RFC 3339 (`Z` or `±hh:mm`, optional fraction, truncated to milliseconds).
    /// Years 1970...9999 only: a client clock before the epoch is a bug, not a date.
    package init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func digits(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in start..<(start + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, b.count <= 40,
            let year = digits(0, 4), b[4] == 45, let month = digits(5, 2), b[7] == 45,
            let day = digits(8, 2), b[10] == 84 || b[10] == 116,
            let hour = digits(11, 2), b[13] == 58, let minute = digits(14, 2), b[16] == 58,
            let second = digits(17, 2)
        else { return nil }
        guard year >= 1970, (1...12).contains(month), day >= 1,
            day <= Self.daysIn(month: month, year: year), hour < 24, minute < 60, second < 60
        else { return nil }
        var i = 19
        var fractionMillis: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var scale: Int64 = 100
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                fractionMillis += Int64(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            guard let oh = digits(i + 1, 2), i + 3 < b.count, b[i + 3] == 58,
                let om = digits(i + 4, 2), oh < 24, om < 60
            else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        self.millis = seconds * 1000 + fractionMillis
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days-from-civil algorithm (public domain), proleptic Gregorian.
    private static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

/// Where the domain reads the time; tests inject a manual one.
package protocol Clock: Sendable {
    func now() -> Timestamp
}
