import Testing

@testable import HTTP1

/// Every byte in a `Host` name against RFC 3986's `reg-name` and `IPvFuture` alphabets, spelled
/// out here as text rather than as the parser's bitmasks.
struct HostByteTests {
    private static let unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    private static let subDelims = "!$&'()*+,;="
    private static let allowed = Set((unreserved + subDelims).utf8)

    @Test func aRegNameTakesExactlyUnreservedAndSubDelims() {
        for byte in UInt8(0)...UInt8(127) where byte != UInt8(ascii: "%") && byte != UInt8(ascii: ":") {
            let host = String(decoding: [UInt8(ascii: "a"), byte, UInt8(ascii: "z")], as: UTF8.self)
            #expect(isValidHost(host) == Self.allowed.contains(byte), "byte \(byte)")
        }
        // Past ASCII: UTF-8 of "é" (0xC3 0xA9) and each lone high byte decode to non-ASCII text.
        #expect(!isValidHost("aéz"))
        #expect(isValidHost("a%C3%A9z"))
    }

    @Test func anIPvFutureTakesTheSameBytesAndColons() {
        for byte in UInt8(0)...UInt8(127) where byte != UInt8(ascii: "]") {
            let host = "[v1." + String(decoding: [byte], as: UTF8.self) + "]"
            let expected = Self.allowed.contains(byte) || byte == UInt8(ascii: ":")
            #expect(isValidHost(host) == expected, "byte \(byte)")
        }
    }
}
