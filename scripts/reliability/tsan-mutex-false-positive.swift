// TSan on Linux cannot see the futex-based lock of Synchronization.Mutex (the stdlib is not
// instrumented), so correct code like this reports "Swift access race". sanitizers.sh runs it
// first to show the baseline. swiftc -sanitize=thread this-file.swift -o /tmp/m && /tmp/m
import Synchronization
import Glibc
final class Box: Sendable { let m = Mutex<[Int]>([]) }
let box = Box()
var threads: [pthread_t] = []
for _ in 0..<2 {
    var t = pthread_t()
    pthread_create(&t, nil, { _ in
        for i in 0..<10000 { box.m.withLock { $0.append(i) } }
        for _ in 0..<100 { box.m.withLock { q in let x = q; q.removeAll(); _ = x } }
        return nil
    }, nil)
    threads.append(t)
}
for t in threads { pthread_join(t, nil) }
print(box.m.withLock { $0.count })
