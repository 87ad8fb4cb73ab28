import Foundation

#if canImport(Security)
    import Security
#endif

/// Random bytes from the platform's CSPRNG: `SecRandomCopyBytes` where Security exists,
/// else `SystemRandomNumberGenerator` (getrandom(2) on Linux, a CSPRNG on every platform Swift supports).
enum SecureRandom {
    static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        #if canImport(Security)
            let status = bytes.withUnsafeMutableBytes { SecRandomCopyBytes(kSecRandomDefault, count, $0.baseAddress!) }
            if status == errSecSuccess { return bytes }
        #endif
        var generator = SystemRandomNumberGenerator()
        for index in 0..<count { bytes[index] = UInt8.random(in: .min ... .max, using: &generator) }
        return bytes
    }

    /// The 64 characters an anonymous id may use (API.md §3).
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-".utf8)

    /// `count` characters of `A-Za-z0-9_-`; 64 divides 256, so masking a byte keeps them uniform.
    static func token(_ count: Int) -> String {
        String(decoding: bytes(count).map { alphabet[Int($0 & 63)] }, as: UTF8.self)
    }

    /// A fresh anonymous id: `anon_` and 21 random characters.
    static func anonymousID() -> String { "anon_" + token(21) }
}

/// Jitter source for backoff; tests inject a fixed sequence.
protocol JitterSource: Sendable {
    /// A number in `0..<1`.
    func unit() -> Double
}

struct SystemJitter: JitterSource {
    func unit() -> Double { Double.random(in: 0..<1) }
}
