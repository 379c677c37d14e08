# The pipeline image: built with the official Swift toolchain image, run on Debian slim with the
# runtime halves of the same Debian libraries (libpq, libmicrohttpd, zstd, zlib).
FROM swift:6.3-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      pkg-config libpq-dev libmicrohttpd-dev libzstd-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product detour-analytics --static-swift-stdlib \
 && cp "$(swift build -c release --show-bin-path)/detour-analytics" /detour-analytics

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libpq5 libmicrohttpd12 libzstd1 zlib1g ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /var/lib/detour --create-home detour \
 && mkdir -p /var/lib/detour/data \
 && chown detour:detour /var/lib/detour/data
COPY --from=build /detour-analytics /usr/local/bin/detour-analytics
COPY sql /usr/share/detour-analytics/sql
USER detour
ENV DETOUR_DATA_DIR=/var/lib/detour/data \
    DETOUR_HTTP_ADDR=0.0.0.0:8080 \
    DETOUR_SQL_DIR=/usr/share/detour-analytics/sql
# The directory exists in the image, owned by detour: a new named volume mounted here starts with
# that ownership (Docker copies it from the image), so `run` can create segments/ as the detour user.
VOLUME /var/lib/detour/data
EXPOSE 8080
# Asks /readyz where DETOUR_HTTP_ADDR says the server listens (0.0.0.0 is reached on 127.0.0.1): a
# fixed 8080 here made a container with another address unhealthy while it served.
HEALTHCHECK --interval=10s --timeout=3s CMD addr="${DETOUR_HTTP_ADDR:-127.0.0.1:8080}"; host="${addr%:*}"; [ "$host" != 0.0.0.0 ] || host=127.0.0.1; curl -fsS "http://$host:${addr##*:}/readyz" || exit 1
ENTRYPOINT ["detour-analytics"]
CMD ["run"]
