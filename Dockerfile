# tidemark's container image: one static binary (pure Go, CGO_ENABLED=0).
#
#   docker build -t tidemark .                 # minimal: feed, page, json, dir
#   docker build -t tidemark:git --target git . # with git, for git sources
#
# docs/scale-out.md runs it with deploy/compose.yaml. tidemark's own CI has
# no container engine, so this file is kept simple and is not built there.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tidemark ./cmd/tidemark

# With git: the git kind runs the git command (and ssh for ssh remotes).
FROM alpine:3 AS git
RUN apk add --no-cache git openssh-client ca-certificates \
	&& adduser -D -u 65532 tidemark && mkdir -p /var/lib/tidemark && chown tidemark /var/lib/tidemark
COPY --from=build /out/tidemark /usr/local/bin/tidemark
ENV TIDEMARK_HOME=/var/lib/tidemark
USER 65532
ENTRYPOINT ["/usr/local/bin/tidemark"]
CMD ["run"]

# Minimal (the default target): the binary and CA certificates, no shell.
# A worker built from it records git sources as "cannot serve" (no budget
# spent) and leaves them to workers that have git.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tidemark /usr/local/bin/tidemark
ENV TIDEMARK_HOME=/home/nonroot/.tidemark
ENTRYPOINT ["/usr/local/bin/tidemark"]
CMD ["run"]
