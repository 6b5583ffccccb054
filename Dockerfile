# ticket-mirror: the daemon (`run`) in a container.
#   docker build -t ticket-mirror .
#   docker run --env-file mirror.env -p 127.0.0.1:9464:9464 ticket-mirror
# docker-compose.yml runs it next to PostgreSQL; the README (Operations) explains both.

# --- build: compile the TypeScript sources to dist/ --------------------------------------------------------------
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- run: production dependencies, the compiled code and the migrations, nothing else -----------------------------
FROM node:20-slim
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

# Liveness without curl (node:20-slim has none): Node's own fetch against /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.HTTP_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# `run` stops gracefully on SIGTERM (docker stop) within 10 s, the default grace period.
CMD ["node", "dist/cli/main.js", "run"]
