# One image for every process of the gateway; the service is chosen by the working directory and
# command (see docker-compose.yml and deploy/helm). Processes run TypeScript through tsx, as in dev.
FROM node:20-bookworm-slim

ENV PNPM_VERSION=10.34.9 \
    CI=true \
    NPM_CONFIG_UPDATE_NOTIFIER=false
RUN npm install -g "pnpm@${PNPM_VERSION}" && npm cache clean --force

WORKDIR /app

# Dependencies first, keyed on the lockfile only, so a source change does not refetch packages.
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
RUN pnpm fetch

COPY . .
# NODE_ENV stays unset here: with NODE_ENV=production pnpm would skip devDependencies (tsx among them).
RUN pnpm install --frozen-lockfile --prefer-offline \
 && pnpm --filter @s2s/db run generate \
 && pnpm store prune

# The node image's unprivileged user (uid 1000); the tree stays root-owned and read-only to it.
# tsx writes its transform cache under /tmp, the only writable path a read-only root fs needs.
USER node
ENV NODE_ENV=production
EXPOSE 8080 8081 8090

# Each service: node --import tsx --import @s2s/telemetry/register src/main.ts, run from
# /app/services/<name>. The second --import registers the OpenTelemetry ESM loader hook.
WORKDIR /app/services/control-plane
CMD ["node", "--import", "tsx", "--import", "@s2s/telemetry/register", "src/main.ts"]
