import { createHash, randomBytes } from 'node:crypto';
import { DomainError } from '@firm/core';
import { type Db, pgErrorOf, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import type { QboConfig } from './config';
import { QboHttp } from './http';
import type { QboLimiter } from './limiter';
import { companyTaken, exchangeCode, type QboConnection, revokeToken, saveConnection } from './tokens';

/** The scope a connection asks Intuit for: the accounting API. */
export const QBO_SCOPE = 'com.intuit.quickbooks.accounting';
const STATE_TTL_MINUTES = 15;

const hashState = (state: string) => createHash('sha256').update(state).digest('hex');

/**
 * Starts connecting an organization to a QBO company: a one-time `state` (only its hash is stored) bound to the firm,
 * the organization and the person who asked, and Intuit's authorization URL carrying it. Every state has its person:
 * only that person's browser session can finish it.
 */
export async function startAuthorization(
  db: Db,
  config: QboConfig,
  input: { firmId: string; organizationId: string; userId: string },
): Promise<{ url: string; expiresAt: Date }> {
  const state = randomBytes(32).toString('base64url');
  const [row] = rowsOf<{ expires_at: Date | string }>(
    await db.execute(sql`
      insert into qbo_oauth_states (state_hash, firm_id, organization_id, user_id, expires_at)
      values (${hashState(state)}, ${input.firmId}, ${input.organizationId}, ${input.userId},
              now() + make_interval(mins => ${STATE_TTL_MINUTES}))
      returning expires_at`),
  );
  const url = new URL(config.authorizeUrl);
  url.searchParams.set('client_id', config.clientId);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', QBO_SCOPE);
  url.searchParams.set('redirect_uri', config.redirectUri);
  url.searchParams.set('state', state);
  return { url: url.toString(), expiresAt: new Date((row as { expires_at: Date | string }).expires_at) };
}

const badState = () =>
  new DomainError('VALIDATION_ERROR', 'the authorization state is unknown, expired, already used or not yours', [
    { field: 'state', message: 'start the connection again, signed in as the person who finishes it' },
  ]);

const notConfirmed = (realmId: string) =>
  new DomainError('VALIDATION_ERROR', `QuickBooks did not confirm that this authorization reaches company ${realmId}`, [
    { field: 'realmId', message: 'not a company the authorization was granted for; nothing was connected' },
  ]);

/**
 * Asks QBO, with the new access token, for the CompanyInfo of the company the callback names: QBO answers it only to
 * an authorization granted for that company, so a `realmId` changed on its way back is caught here. Goes through the
 * same client as every other call (timeouts, retries, the per-company limits, the fixed API base).
 */
async function confirmRealm(config: QboConfig, limiter: QboLimiter, token: string, realmId: string): Promise<void> {
  let body: unknown;
  try {
    body = await new QboHttp({ config, limiter, grant: { token, realmId } }).request({
      method: 'GET',
      path: `companyinfo/${realmId}`,
    });
  } catch (err) {
    if (err instanceof DomainError && (err.code === 'SERVICE_UNAVAILABLE' || err.code === 'RATE_LIMITED')) {
      throw new DomainError(
        'SERVICE_UNAVAILABLE',
        `QuickBooks did not answer whether this authorization reaches company ${realmId}; nothing was connected`,
      );
    }
    throw notConfirmed(realmId);
  }
  const id = (body as { CompanyInfo?: { Id?: unknown } } | null)?.CompanyInfo?.Id;
  if (String(id) !== realmId) throw notConfirmed(realmId);
}

/**
 * Finishes a connection from Intuit's callback: spends the `state` (once, atomically; an unknown, expired, replayed
 * or another user's state is refused before any token is asked for), trades the code for tokens, confirms with them
 * that they reach the company the callback names, and stores them. When the company is not confirmed or cannot be
 * stored here (held by another connection, or any other failure), the new authorization is revoked at Intuit and
 * nothing is stored; the state stays spent. `userId` is the signed-in user of the browser the callback came through:
 * a state is spent only by the person it was made for, and is left as it is for anyone else.
 */
export async function completeAuthorization(
  db: Db,
  config: QboConfig,
  limiter: QboLimiter,
  input: { state: string; code: string; realmId: string; userId: string },
): Promise<QboConnection> {
  if (!input.state || !input.code || !/^[0-9]{1,32}$/.test(input.realmId)) {
    throw new DomainError('VALIDATION_ERROR', 'the callback needs state, code and realmId (digits)', [
      { field: !input.state ? 'state' : !input.code ? 'code' : 'realmId', message: 'missing or malformed' },
    ]);
  }
  const [spent] = rowsOf<{ firm_id: string; organization_id: string; user_id: string }>(
    await db.execute(sql`
      update qbo_oauth_states set used_at = now()
      where state_hash = ${hashState(input.state)} and used_at is null and expires_at > now()
        and user_id = ${input.userId}::uuid
      returning firm_id, organization_id, user_id`),
  );
  if (!spent) throw badState();
  const tokens = await exchangeCode(config, input.code).catch((err: unknown) => {
    if (err instanceof DomainError) throw err;
    throw new DomainError('VALIDATION_ERROR', 'QuickBooks refused the authorization code', [
      { field: 'code', message: 'expired or already used' },
    ]);
  });
  try {
    await confirmRealm(config, limiter, tokens.accessToken, input.realmId);
    return await db.transaction((tx) =>
      saveConnection(tx, config, {
        organizationId: spent.organization_id,
        firmId: spent.firm_id,
        realmId: input.realmId,
        tokens,
        userId: spent.user_id,
      }),
    );
  } catch (err) {
    // The refresh token ends the whole authorization, its access token with it.
    await revokeToken(config, tokens.refreshToken);
    const pg = pgErrorOf(err);
    // Another organization stored the company between our read and our insert.
    if (pg?.code === '23505' && pg.constraint === 'qbo_connections_realm_key') throw companyTaken(input.realmId);
    throw err;
  }
}
