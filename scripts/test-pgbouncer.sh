#!/usr/bin/env bash
# `npm run test:pgbouncer`: the ledger, idempotency, gateway, banking and webhook test files through PgBouncer in
# transaction mode (scripts/pgbouncer.sh), as a managed Postgres behind a transaction pooler is reached. DATABASE_URL
# names the local Postgres server; the service under test reaches it through the pooler with
# DATABASE_POOL_MODE=transaction, while test databases are created, migrated and dropped on the server directly
# (DATABASE_MIGRATION_URL). Without pgbouncer installed it is skipped with a message, unless CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v pgbouncer >/dev/null && [ ! -x /usr/sbin/pgbouncer ]; then
  if [ "${CI:-}" = true ]; then
    echo "pgbouncer is not installed (apt-get install pgbouncer); required under CI=true" >&2
    exit 1
  fi
  echo "skipped: pgbouncer is not installed (apt-get install pgbouncer)"
  exit 0
fi
export PATH="$PATH:/usr/sbin"
: "${DATABASE_URL:?DATABASE_URL must name the local Postgres server (postgres://postgres@127.0.0.1:5432/postgres)}"

# The server's port and user, and the first free port from 6433 for the pooler.
read -r server_port user < <(node -e 'const u = new URL(process.argv[1]); console.log(u.port || 5432, decodeURIComponent(u.username) || "postgres")' "$DATABASE_URL")
port=6433
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done

dir=$(mktemp -d)
trap 'scripts/pgbouncer.sh stop "$dir"; rm -rf "$dir"' EXIT
scripts/pgbouncer.sh start "$dir" "$port" "$server_port" "$user"

pooled=$(node -e 'const u = new URL(process.argv[1]); u.hostname = "127.0.0.1"; u.port = process.argv[2]; console.log(u.toString())' "$DATABASE_URL" "$port")
echo "through pgbouncer on 127.0.0.1:$port (transaction mode)"
DATABASE_MIGRATION_URL="$DATABASE_URL" DATABASE_URL="$pooled" DATABASE_POOL_MODE=transaction npx vitest run \
  packages/db/src/connection.test.ts \
  packages/ledger/src/posting.test.ts packages/ledger/src/posting-batches.test.ts packages/ledger/src/entries.test.ts \
  apps/api/src/routes/entries/entries.test.ts \
  packages/db/src/idempotency.test.ts apps/api/src/plugins/idempotency.test.ts packages/identity/src/api-keys.test.ts \
  packages/gateway/src/audit.test.ts packages/gateway/src/service.test.ts apps/api/src/routes/gateway/gateway.test.ts \
  packages/banking/src/banking.test.ts packages/banking/src/feeds/feeds.test.ts \
  packages/webhooks/src/delivery.test.ts apps/api/src/routes/webhooks/delivery.test.ts
