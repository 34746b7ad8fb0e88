# syntax=docker/dockerfile:1
#
# The gRPC front (src/service/grpc-main.ts) for ECS Fargate on ARM64. The CDK app builds it at
# deploy time (ContainerImage.fromAsset, --platform linux/arm64); `cdk synth` only stages this
# directory, filtered by .dockerignore. Or build and push it yourself and pass
# `-c containerImage=<uri>` (docs/deploy.md).
#
# NOT VERIFIED: written on a machine without a Docker engine; it has never been built. Each step is
# what `npm ci` and esbuild do on the development machine.
#
#   docker build --platform linux/arm64 -t flow-grpc .
#   docker run --rm -p 50051:50051 -e FLOW_TABLE_PREFIX=Flow-dev- \
#     -e FLOW_CHILD_TASK_STATE_MACHINE_ARN=arn:aws:states:<region>:<account>:stateMachine:Flow-dev-child-task \
#     -e FLOW_HOST=0.0.0.0 -e FLOW_PLAINTEXT_BEHIND_LB=true flow-grpc
#
# The configuration is read once at start (src/service/config.ts, readGrpcFrontConfig); a missing
# or invalid variable stops the container at once with every problem named.

ARG NODE_VERSION=22

# --- build: all dependencies (esbuild is a devDependency), then bundle our code only. Packages stay
# external (--packages=external) and are installed for production below: some read files next to
# their own code at run time (grpc-health-check loads its health.proto from its package directory),
# which a single-file bundle would break.
FROM node:${NODE_VERSION}-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
COPY proto ./proto
RUN npx esbuild src/service/grpc-main.ts \
      --bundle --platform=node --target=node22 --format=esm --packages=external \
      --sourcemap --outfile=dist/grpc-main.js

# --- production dependencies only
FROM node:${NODE_VERSION}-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force

# --- runtime: slim image, non-root, the bundle + production node_modules + the .proto files
FROM node:${NODE_VERSION}-slim AS runtime
ARG FLOW_VERSION=0.0.0
ARG FLOW_GIT_COMMIT=unknown
ARG FLOW_BUILD_TIME=
ENV NODE_ENV=production \
    FLOW_PORT=50051 \
    FLOW_VERSION=${FLOW_VERSION} \
    FLOW_GIT_COMMIT=${FLOW_GIT_COMMIT} \
    FLOW_BUILD_TIME=${FLOW_BUILD_TIME}
WORKDIR /app
# package.json carries "type": "module", which makes dist/grpc-main.js an ES module.
COPY --chown=root:root package.json ./
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root proto ./proto
# The official image's unprivileged user (uid 1000); the files above stay root-owned, read-only to it.
USER node
EXPOSE 50051
# The load balancer checks the gRPC health service (/grpc.health.v1.Health/Check); a second probe
# inside the container would only duplicate it, so none here.
HEALTHCHECK NONE
STOPSIGNAL SIGTERM
CMD ["node", "--enable-source-maps", "dist/grpc-main.js"]
