/// RFC 3339 UTC timestamps with milliseconds, computed by hand: a `DateFormatter` costs more
/// than the rest of `track()` together.
enum Timestamp {
    /// `2026-12-01T20:15:03.123Z` for `millis` since 1970.
    static func rfc3339(millis: Int64) -> String {
        let (seconds, milli) = floorDivide(millis, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        var out = ""
        out.reserveCapacity(24)
        pad(year, 4, &out)
        out += "-"
        pad(month, 2, &out)
        out += "-"
        pad(day, 2, &out)
        out += "T"
        pad(secondOfDay / 3600, 2, &out)
        out += ":"
        pad(secondOfDay % 3600 / 60, 2, &out)
        out += ":"
        pad(secondOfDay % 60, 2, &out)
        out += "."
        pad(milli, 3, &out)
        out += "Z"
        return out
    }

    /// Division rounding toward minus infinity, so times before 1970 still format.
    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    private static func pad(_ value: Int64, _ width: Int, _ out: inout String) {
        let text = String(value)
        if text.count < width { out += String(repeating: "0", count: width - text.count) }
        out += text
    }

    /// Howard Hinnant's days-to-civil: proleptic Gregorian date of a day count since 1970-01-01.
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
