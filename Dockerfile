# ticket-mirror: the daemon (`run`) in a container.
#   docker build -t ticket-mirror .
#   docker run --env-file mirror.env -e TICKETS_API_TOKEN_FILE=/run/secrets/token \
#     -v "$PWD/token:/run/secrets/token:ro" -p 127.0.0.1:9464:9464 ticket-mirror
# docker-compose.yml runs it next to PostgreSQL; the README (Operations) explains both.
#
# Node.js 26, the Active LTS line since 2026-10-28 (20 reached its end of life on 2026-04-30). The code itself keeps
# running on Node.js 20.19 or newer (package.json's engines), for machines that run it without Docker.

# --- build: compile the TypeScript sources to dist/ --------------------------------------------------------------
FROM node:26-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- run: production dependencies, the compiled code and the migrations, nothing else -----------------------------
FROM node:26-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# dist/db/connect.js looks for the migrations at ../../migrations, which is /app/migrations here.
COPY migrations ./migrations

# The embedded database (used when DATABASE_URL is unset) lives in a volume the unprivileged user owns.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node

# Inside a container the health/metrics/status server must listen on every interface to be reachable from outside.
ENV HTTP_HOST=0.0.0.0 \
    HTTP_PORT=9464 \
    PGLITE_DIR=/data/pglite
EXPOSE 9464

# Liveness without curl (the slim image has none): Node's own fetch against /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.HTTP_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Node is process 1 and `run` handles SIGTERM itself (no shell in between): `docker stop` stops it gracefully within
# 10 s, the default grace period, exit code 0.
CMD ["node", "dist/cli/main.js", "run"]
