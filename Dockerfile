# syntax=docker/dockerfile:1
# Production image. Not built on the development machines (no Docker engine there); kept plain.

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/
COPY apps/cli/package.json apps/cli/
COPY packages/core/package.json packages/core/
COPY packages/db/package.json packages/db/
COPY packages/demo/package.json packages/demo/
COPY packages/identity/package.json packages/identity/
COPY packages/documents/package.json packages/documents/
COPY packages/ledger/package.json packages/ledger/
COPY packages/webhooks/package.json packages/webhooks/
RUN npm ci --no-audit --no-fund

FROM deps AS check
COPY . .
RUN npm run typecheck

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY . .
RUN mkdir -p /data && chown -R node:node /data
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/api/health').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# MIGRATE_ON_START=true runs the migrations through the CLI before the server starts.
CMD ["sh", "-c", "if [ \"$MIGRATE_ON_START\" = true ]; then npm run --silent cli -- migrate; fi && exec npx tsx apps/api/src/server.ts"]
