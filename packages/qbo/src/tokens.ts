import { DomainError, openText, sealedKeyId, sealText } from '@firm/core';
import { type Db, type Executor, rowsOf } from '@firm/db';
import {
  clientLastSyncOf,
  connectClientToPlatform,
  returnClientToEmbedded,
  setClientPlatformStatus,
  touchClientLastSync,
} from '@firm/gateway/clients';
import { type SQL, sql } from 'drizzle-orm';
import type { QboConfig } from './config';

/** What Intuit's token endpoint answers (seconds from now). */
export interface QboTokenSet {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  refreshExpiresIn: number | null;
}

export type ConnectionStatus = 'connected' | 'needs_reauth' | 'disconnected' | 'error';

export interface QboConnection {
  organizationId: string;
  firmId: string;
  realmId: string;
  status: ConnectionStatus;
  lastError: string | null;
  accessExpiresAt: Date;
  version: number;
  updatedAt: Date;
  /** The last call QBO answered (to the minute), as the gateway's client shows it. */
  lastSyncAt: Date | null;
}

/** A refresh token Intuit no longer honours (revoked, expired, or already spent): only a person can fix it. */
export class QboGrantRevoked extends Error {}

/** Access tokens are refreshed this long before they expire, so none expires in flight. */
const REFRESH_MARGIN_MS = 5 * 60_000;

const context = (organizationId: string, column: 'access' | 'refresh') => `qbo:${organizationId}:${column}`;

export const needsReauth = (realmId: string) =>
  new DomainError(
    'CLIENT_NEEDS_REAUTH',
    `QuickBooks refused this client's authorization (company ${realmId}); a firm owner or admin must connect it again`,
  );

/** POSTs a form to Intuit's token endpoint with the app's credentials; the parsed answer, or why not. */
async function tokenRequest(config: QboConfig, form: Record<string, string>): Promise<QboTokenSet> {
  let res: Response;
  try {
    res = await fetch(config.tokenUrl, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${config.clientId}:${config.clientSecret}`).toString('base64')}`,
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(config.timeoutMs),
    });
  } catch (err) {
    throw new DomainError(
      'SERVICE_UNAVAILABLE',
      `QuickBooks's token endpoint did not answer: ${(err as Error).message}`,
    );
  }
  const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (res.status === 400 && body?.error === 'invalid_grant') throw new QboGrantRevoked(String(body.error));
  if (!res.ok || typeof body?.access_token !== 'string' || typeof body.refresh_token !== 'string') {
    throw new DomainError('PLATFORM_ERROR', `QuickBooks's token endpoint answered ${res.status}`, [
      { message: typeof body?.error === 'string' ? body.error : `status ${res.status}`, platform: 'qbo' },
    ]);
  }
  return {
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    expiresIn: Number(body.expires_in ?? 3600),
    refreshExpiresIn:
      body.x_refresh_token_expires_in === null || body.x_refresh_token_expires_in === undefined
        ? null
        : Number(body.x_refresh_token_expires_in),
  };
}

/** Trades an authorization code (the callback's `code`) for tokens. */
export const exchangeCode = (config: QboConfig, code: string) =>
  tokenRequest(config, { grant_type: 'authorization_code', code, redirect_uri: config.redirectUri });

/** Revokes a token at Intuit (the refresh token revokes the whole grant). Failures are reported, not thrown. */
export async function revokeToken(config: QboConfig, token: string): Promise<boolean> {
  try {
    const res = await fetch(config.revokeUrl, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${config.clientId}:${config.clientSecret}`).toString('base64')}`,
        accept: 'application/json',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ token }),
      signal: AbortSignal.timeout(config.timeoutMs),
    });
    return res.ok;
  } catch {
    return false;
  }
}

interface ConnectionRow {
  organization_id: string;
  firm_id: string;
  realm_id: string;
  access_token: string;
  refresh_token: string;
  access_expires_at: Date | string;
  status: ConnectionStatus;
  last_error: string | null;
  version: number;
  updated_at: Date | string;
  last_sync_at?: Date | string | null;
}

const present = (r: ConnectionRow): QboConnection => ({
  organizationId: r.organization_id,
  firmId: r.firm_id,
  realmId: r.realm_id,
  status: r.status,
  lastError: r.last_error,
  accessExpiresAt: new Date(r.access_expires_at),
  version: Number(r.version),
  updatedAt: new Date(r.updated_at),
  lastSyncAt: r.last_sync_at ? new Date(r.last_sync_at) : null,
});

/** The connections with their client's lastSyncAt. */
const withLastSync = (where: SQL) => sql`
  select c.*, ${clientLastSyncOf(sql`c.organization_id`, 'qbo')} as last_sync_at from qbo_connections c
  where ${where}`;

async function connectionRow(db: Executor, organizationId: string, lock: boolean): Promise<ConnectionRow | null> {
  const [row] = rowsOf<ConnectionRow>(
    await db.execute(
      sql`${withLastSync(sql`c.organization_id = ${organizationId}`)} ${lock ? sql`for update of c` : sql``}`,
    ),
  );
  return row ?? null;
}

export async function getConnection(db: Executor, organizationId: string): Promise<QboConnection | null> {
  const row = await connectionRow(db, organizationId, false);
  return row ? present(row) : null;
}

/** Every connection of a firm (or all of them), for `qbo status`. */
export async function listConnections(db: Executor, firmId: string | null): Promise<QboConnection[]> {
  return rowsOf<ConnectionRow>(
    await db.execute(
      sql`${withLastSync(sql`(${firmId}::uuid is null or c.firm_id = ${firmId}::uuid)`)} order by c.created_at, c.organization_id`,
    ),
  ).map(present);
}

/** The connection's status, mirrored on the gateway's client row (what agents see as the client's `status`). */
async function setStatus(db: Executor, organizationId: string, status: ConnectionStatus, error: string | null) {
  await db.execute(sql`update qbo_connections set status = ${status}, last_error = ${error}, updated_at = now()
    where organization_id = ${organizationId}`);
  await setClientPlatformStatus(db, organizationId, 'qbo', status);
}

/**
 * A company held by another connection. One answer whoever holds it (an organization of this firm or of another,
 * connected or not), so the refusal says nothing about anyone else's books.
 */
export const companyTaken = (realmId: string) =>
  new DomainError('QBO_COMPANY_TAKEN', `QuickBooks company ${realmId} is held by another connection`, [
    { field: 'realmId', message: 'it is connected elsewhere; nothing was stored here' },
  ]);

/**
 * Stores the tokens of a newly authorized company (sealed) and makes the organization a gateway client on QBO with
 * the realm as its company id. A reconnection replaces the tokens and sets the status back to connected. A company
 * another organization holds is refused (QBO_COMPANY_TAKEN), unless that organization is of the same firm and has
 * disconnected it: then it moves here. Another firm's row is never changed, connected or not.
 */
export async function saveConnection(
  db: Executor,
  config: QboConfig,
  input: { organizationId: string; firmId: string; realmId: string; tokens: QboTokenSet; userId: string | null },
): Promise<QboConnection> {
  const { organizationId, tokens } = input;
  const [holder] = rowsOf<{ organization_id: string; firm_id: string; status: ConnectionStatus }>(
    await db.execute(sql`select organization_id, firm_id, status from qbo_connections
      where realm_id = ${input.realmId} and organization_id <> ${organizationId} for update`),
  );
  if (holder && (holder.firm_id !== input.firmId || holder.status !== 'disconnected')) {
    throw companyTaken(input.realmId);
  }
  if (holder) {
    // A company one of the firm's organizations disconnected moves here; that organization is back on its own books.
    await db.execute(sql`delete from qbo_connections where organization_id = ${holder.organization_id}`);
    await returnClientToEmbedded(db, holder.organization_id);
  }
  const access = sealText(config.keys, tokens.accessToken, context(organizationId, 'access'));
  const refresh = sealText(config.keys, tokens.refreshToken, context(organizationId, 'refresh'));
  const [row] = rowsOf<ConnectionRow>(
    await db.execute(sql`
      insert into qbo_connections (organization_id, firm_id, realm_id, access_token, refresh_token, access_expires_at,
        refresh_expires_at, status, connected_by)
      values (${organizationId}, ${input.firmId}, ${input.realmId}, ${access}, ${refresh},
        now() + make_interval(secs => ${tokens.expiresIn}),
        case when ${tokens.refreshExpiresIn}::int is null then null
             else now() + make_interval(secs => ${tokens.refreshExpiresIn}::int) end,
        'connected', ${input.userId})
      on conflict (organization_id) do update set realm_id = excluded.realm_id, access_token = excluded.access_token,
        refresh_token = excluded.refresh_token, access_expires_at = excluded.access_expires_at,
        refresh_expires_at = excluded.refresh_expires_at, status = 'connected', last_error = null,
        version = qbo_connections.version + 1, connected_by = excluded.connected_by, updated_at = now()
      returning *`),
  );
  await connectClientToPlatform(db, {
    organizationId,
    firmId: input.firmId,
    platform: 'qbo',
    companyId: input.realmId,
  });
  return present(row as ConnectionRow);
}

/** Opens a sealed token; a row that does not open (tampered, another key, moved) fails closed as needing reauth. */
function openToken(config: QboConfig, row: ConnectionRow, column: 'access' | 'refresh'): string {
  try {
    return openText(
      config.keys,
      column === 'access' ? row.access_token : row.refresh_token,
      context(row.organization_id, column),
    );
  } catch {
    throw new DomainError(
      'CLIENT_NEEDS_REAUTH',
      `the stored QuickBooks authorization of company ${row.realm_id} cannot be opened; connect the client again`,
    );
  }
}

/**
 * A usable access token for the organization's company. It is refreshed when it expires within five minutes, or
 * when `rejected` (the token QBO just refused with a 401) is still the stored one. A refresh holds the connection
 * row's lock from reading the refresh token to storing the new pair, so processes refreshing at once take turns:
 * the later one finds the rotation done (the stored token is no longer the rejected or expiring one) and uses it,
 * and the newest refresh token is never overwritten by an older one. A refresh Intuit refuses (invalid_grant)
 * leaves the client needs_reauth and is not tried again until someone reconnects.
 */
export async function accessToken(
  db: Db,
  config: QboConfig,
  organizationId: string,
  options: { rejected?: string } = {},
): Promise<{ token: string; realmId: string }> {
  const fresh = (row: ConnectionRow, token: string) =>
    new Date(row.access_expires_at).getTime() - Date.now() > REFRESH_MARGIN_MS && token !== options.rejected;
  const row = await connectionRow(db, organizationId, false);
  if (!row || row.status === 'disconnected') {
    throw new DomainError('CLIENT_NOT_FOUND', 'this organization has no QuickBooks connection');
  }
  if (row.status === 'needs_reauth') throw needsReauth(row.realm_id);
  const token = openToken(config, row, 'access');
  if (fresh(row, token)) return { token, realmId: row.realm_id };

  const outcome = await db.transaction(async (tx) => {
    const locked = await connectionRow(tx, organizationId, true);
    if (!locked || locked.status === 'disconnected') return { kind: 'gone' as const };
    if (locked.status === 'needs_reauth') return { kind: 'reauth' as const, realmId: locked.realm_id };
    const current = openToken(config, locked, 'access');
    if (fresh(locked, current)) return { kind: 'ok' as const, token: current, realmId: locked.realm_id };
    let tokens: QboTokenSet;
    try {
      tokens = await tokenRequest(config, {
        grant_type: 'refresh_token',
        refresh_token: openToken(config, locked, 'refresh'),
      });
    } catch (err) {
      if (!(err instanceof QboGrantRevoked)) throw err;
      await setStatus(tx, organizationId, 'needs_reauth', 'QuickBooks refused the refresh token (invalid_grant)');
      return { kind: 'reauth' as const, realmId: locked.realm_id };
    }
    await tx.execute(sql`
      update qbo_connections set
        access_token = ${sealText(config.keys, tokens.accessToken, context(organizationId, 'access'))},
        refresh_token = ${sealText(config.keys, tokens.refreshToken, context(organizationId, 'refresh'))},
        access_expires_at = now() + make_interval(secs => ${tokens.expiresIn}),
        refresh_expires_at = case when ${tokens.refreshExpiresIn}::int is null then refresh_expires_at
                                  else now() + make_interval(secs => ${tokens.refreshExpiresIn}::int) end,
        version = version + 1, status = 'connected', last_error = null, updated_at = now()
      where organization_id = ${organizationId}`);
    return { kind: 'ok' as const, token: tokens.accessToken, realmId: locked.realm_id };
  });
  if (outcome.kind === 'gone')
    throw new DomainError('CLIENT_NOT_FOUND', 'this organization has no QuickBooks connection');
  if (outcome.kind === 'reauth') throw needsReauth(outcome.realmId);
  return { token: outcome.token, realmId: outcome.realmId };
}

/** Marks the client as needing a person to reconnect it (QBO refused a just-refreshed token). */
export const markNeedsReauth = (db: Executor, organizationId: string, reason: string) =>
  setStatus(db, organizationId, 'needs_reauth', reason);

/** Disconnects: revokes the grant at Intuit (best effort), forgets the tokens' use, and closes the client to agents. */
export async function disconnect(db: Db, config: QboConfig, organizationId: string): Promise<{ revoked: boolean }> {
  const row = await connectionRow(db, organizationId, false);
  if (!row || row.status === 'disconnected') {
    throw new DomainError('CLIENT_NOT_FOUND', 'this organization has no QuickBooks connection');
  }
  let revoked = false;
  try {
    revoked = await revokeToken(config, openToken(config, row, 'refresh'));
  } catch {
    revoked = false;
  }
  await setStatus(db, organizationId, 'disconnected', revoked ? null : 'revocation at QuickBooks was not confirmed');
  return { revoked };
}

/** Records a successful call on the client (`lastSyncAt`), at most once a minute per client. */
export async function touchLastSync(db: Executor, organizationId: string): Promise<void> {
  await touchClientLastSync(db, organizationId, 'qbo');
}

/**
 * Seals under the current key every stored token sealed under another one (after a new key is put first in
 * QBO_TOKEN_ENCRYPTION_KEY), each row under its lock; then the old key can be dropped. A row that does not open
 * (altered, or its key already dropped) is left as it is and counted: its client needs to be connected again.
 */
export async function resealTokens(db: Db, config: QboConfig): Promise<{ resealed: number; unreadable: number }> {
  const current = `sealed:v1:${config.keys.current}:%`;
  return db.transaction(async (tx) => {
    const result = { resealed: 0, unreadable: 0 };
    const rows = rowsOf<ConnectionRow>(
      await tx.execute(sql`select * from qbo_connections
        where access_token not like ${current} or refresh_token not like ${current} for update`),
    );
    for (const row of rows) {
      const reseal = (column: 'access' | 'refresh') => {
        const stored = column === 'access' ? row.access_token : row.refresh_token;
        if (sealedKeyId(stored) === config.keys.current) return stored;
        const plain = openText(config.keys, stored, context(row.organization_id, column));
        return sealText(config.keys, plain, context(row.organization_id, column));
      };
      let access: string;
      let refresh: string;
      try {
        access = reseal('access');
        refresh = reseal('refresh');
      } catch {
        result.unreadable++;
        continue;
      }
      await tx.execute(sql`update qbo_connections set access_token = ${access}, refresh_token = ${refresh}
        where organization_id = ${row.organization_id}`);
      result.resealed++;
    }
    return result;
  });
}
