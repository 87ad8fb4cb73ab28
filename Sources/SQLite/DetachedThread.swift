import Glibc

/// Starts the writer's, completion and checkpoint threads on pthreads directly: the module needs
/// nothing more of a thread than "run this", and Foundation's `Thread` was its only use of
/// Foundation (STYLE.md keeps Foundation out of the server's modules). The threads go unnamed:
/// Glibc's module does not export `pthread_setname_np` (a `_GNU_SOURCE` declaration); `name` is
/// kept for the crash message.
enum DetachedThread {
    /// Runs `body` on a new detached thread; `name` says which in a failure.
    static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Context(body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let context = Unmanaged<Context>.fromOpaque(argument).takeRetainedValue()
                context.body()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            // Without its thread the writer cannot run at all: this is not a recoverable state.
            fatalError("pthread_create failed for \(name): errno \(result)")
        }
        pthread_detach(thread)
    }

    /// What the new thread runs, moved to it through the `void *` argument.
    private final class Context: Sendable {
        let body: @Sendable () -> Void
        init(body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
