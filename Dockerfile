# BuzzKit Server: build on the official Swift image, run on slim Debian.
#   docker build -t buzzkit .
#   docker run -p 8080:8080 -v buzzkit-data:/data -e BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=bk_ws_… buzzkit

FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-dev zlib1g-dev libssl-dev libpq-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Manifest first so dependency resolution is cached apart from source edits.
COPY Package.swift ./
COPY Plugins ./Plugins
COPY Sources ./Sources
COPY Tests ./Tests
# Package.swift names targets in these too (the SDK's example and bench): without them it does not load.
COPY Examples ./Examples
COPY bench/sdk ./bench/sdk
COPY migrations ./migrations
COPY openapi.json ./
COPY dashboard ./dashboard
RUN swift build -c release --static-swift-stdlib --product buzzkit \
    && mkdir -p /out && cp "$(swift build -c release --show-bin-path)/buzzkit" /out/
# The static backtracer prints a readable crash report from a binary with no debug tools around.
RUN cp /usr/libexec/swift/linux/swift-backtrace-static /out/

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-0 zlib1g libssl3 libpq5 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin buzzkit \
    && mkdir -p /data /etc/buzzkit && chown buzzkit /data
COPY --from=build /out/ /usr/local/bin/
COPY config/buzzkit.json /etc/buzzkit/buzzkit.json
# The database and its WAL files live together in their own volume.
VOLUME ["/data"]
ENV BUZZKIT_HOST=0.0.0.0 \
    BUZZKIT_PORT=8080 \
    BUZZKIT_DATABASE=/data/buzzkit.sqlite \
    BUZZKIT_LOG_LEVEL=info \
    SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/bin/swift-backtrace-static
USER buzzkit
WORKDIR /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS "http://127.0.0.1:${BUZZKIT_PORT}/healthz" || exit 1
# Exec form: buzzkit is PID 1 and receives SIGTERM directly, then drains and closes the database.
ENTRYPOINT ["/usr/local/bin/buzzkit"]
CMD ["serve", "--config", "/etc/buzzkit/buzzkit.json"]
