import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The platforms the server accepts for a push subscription (API.md §5).
public enum Platform: String, Sendable, CaseIterable {
    case ios, android, web, macos

    /// The compile target's platform. Elsewhere (Linux, where the SDK is tested) `web`, the one
    /// accepted platform that does not claim a phone; set `Configuration.platform` to change it.
    public static var current: Platform {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            return .ios
        #elseif os(macOS)
            return .macos
        #elseif os(Android)
            return .android
        #else
            return .web
        #endif
    }
}

/// What the SDK reports about the device on identify and on push registration. A value the
/// SDK cannot read is left out, never sent as an empty string (the FlowPilot page: "absent, not guessed").
public struct DeviceContext: Sendable, Equatable {
    public var platform: Platform
    public var appVersion: String?
    public var osVersion: String?
    public var model: String?
    public var locale: String?
    public var timeZone: String?

    public init(
        platform: Platform, appVersion: String? = nil, osVersion: String? = nil, model: String? = nil,
        locale: String? = nil, timeZone: String? = nil
    ) {
        self.platform = platform
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.model = model
        self.locale = locale
        self.timeZone = timeZone
    }

    /// What this process can read about its device.
    public static func current(platform: Platform = .current) -> DeviceContext {
        let info = Bundle.main.infoDictionary
        let version = ProcessInfo.processInfo.operatingSystemVersion
        return DeviceContext(
            platform: platform,
            appVersion: info?["CFBundleShortVersionString"] as? String,
            osVersion: "\(version.majorVersion).\(version.minorVersion).\(version.patchVersion)",
            model: machineName(),
            locale: Locale.current.identifier,
            timeZone: TimeZone.current.identifier)
    }

    /// `uname -m`: `iPhone16,2` on a phone, `x86_64` on a Linux box.
    private static func machineName() -> String? {
        var name = utsname()
        guard uname(&name) == 0 else { return nil }
        return withUnsafeBytes(of: &name.machine) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The `device` object of API.md's DeviceContext, with only the values that are present.
    func json(deviceId: String) -> JSONValue {
        var object: [String: JSONValue] = ["deviceId": .string(deviceId), "platform": .string(platform.rawValue)]
        let optional: [(String, String?)] = [
            ("appVersion", appVersion), ("osVersion", osVersion), ("model", model), ("locale", locale),
            ("timeZone", timeZone),
        ]
        for (key, value) in optional {
            // Trimmed empty values are absent values; the server keeps what it had.
            if let value, !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
                !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }),
                value.count <= 256
            {
                object[key] = .string(value)
            }
        }
        return .object(object)
    }
}
