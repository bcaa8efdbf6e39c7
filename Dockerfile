# The worker application (and, with another command, the demo API), on Node 24,
# the version CI runs the whole suite on.
# Build: docker build -t threadmill-worker .
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/threadmill/package.json libs/threadmill/
COPY libs/demo-tasks/package.json libs/demo-tasks/
COPY libs/threadmill-cli/package.json libs/threadmill-cli/
COPY libs/threadmill-cli/bin libs/threadmill-cli/bin
COPY scripts scripts
COPY lua lua
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules node_modules
COPY --from=build --chown=node:node /app/libs/threadmill/package.json libs/threadmill/
COPY --from=build --chown=node:node /app/libs/threadmill/dist libs/threadmill/dist
COPY --from=build --chown=node:node /app/libs/demo-tasks/package.json libs/demo-tasks/
COPY --from=build --chown=node:node /app/libs/demo-tasks/dist libs/demo-tasks/dist
COPY --from=build --chown=node:node /app/libs/threadmill-cli/package.json libs/threadmill-cli/
COPY --from=build --chown=node:node /app/libs/threadmill-cli/bin libs/threadmill-cli/bin
COPY --from=build --chown=node:node /app/libs/threadmill-cli/dist libs/threadmill-cli/dist
COPY --from=build --chown=node:node /app/dist/apps dist/apps
USER node
# Exec form: node is PID 1's child under `init: true` and receives SIGTERM itself.
# Prometheus metrics when THREADMILL_METRICS_PORT is set (see docker-compose.yml).
EXPOSE 9464
CMD ["node", "dist/apps/worker/pool.js"]
