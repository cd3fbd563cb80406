# One image for every process of the gateway; the service is chosen by the working directory
# (/app/services/<name>) and runs as `node --import @s2s/telemetry/register dist/main.js`: compiled
# JavaScript, production dependencies only (see docker-compose.yml and deploy/helm).
# Node 24: the LTS line the project runs and is tested on (supported to April 2028; README, "Node.js");
# Node 22 leaves maintenance in April 2027 and Node 20 is past its end of life. `npm test` runs the suite,
# tests/e2e/compiled-entrypoints.test.ts included, on Node 24 (scripts/node.mjs brings it to a machine
# whose node is of another line); keep this line and scripts/node.mjs's BROUGHT_VERSION on the same major.
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: the whole workspace with its dev tools, compiled, then the production tree assembled ----
FROM ${NODE_IMAGE} AS build
ENV PNPM_VERSION=10.34.9 \
    CI=true \
    NPM_CONFIG_UPDATE_NOTIFIER=false
RUN npm install -g "pnpm@${PNPM_VERSION}" && npm cache clean --force
WORKDIR /src

# Packages first, keyed on the lockfile only, so a source change does not refetch them.
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
COPY patches ./patches
RUN pnpm fetch

COPY . .
# NODE_ENV stays unset: the build needs the devDependencies (TypeScript, the Prisma generator).
RUN pnpm install --frozen-lockfile --offline \
 && pnpm --filter @s2s/db run generate \
 && node scripts/build.mjs \
 && node scripts/runtime-tree.mjs /app

# ---- runtime: compiled JavaScript and production dependencies, no package manager, no compiler ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# Root-owned and read-only to the process; the node image's unprivileged user (uid 1000) runs it.
COPY --from=build /app /app
USER node
EXPOSE 8080 8081 8090

# Each service: WORKDIR /app/services/<name>, then this command. The --import registers the
# OpenTelemetry ESM loader hook before the application graph loads. Migrations:
# `node dist/migrate-cli.js` in /app/packages/db.
WORKDIR /app/services/control-plane
CMD ["node", "--import", "@s2s/telemetry/register", "dist/main.js"]
