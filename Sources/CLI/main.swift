print("buzzkit: not yet wired")
