import { decodeCursor, isScope, isUuid, NOT_FOR_OAUTH, type Page, type Scope, toPage } from '@firm/core';
import { apiKeys, type Executor, oauthClients, oauthCodes, oauthGrants, oauthTokens, rowsOf, users } from '@firm/db';
import { and, asc, eq, exists, gt, inArray, isNull, type SQL, sql } from 'drizzle-orm';
import type { Credential } from './credentials';
import type { OAuthClient } from './oauth-clients';
import { hashSecret, isWellFormedSecret } from './secrets';

export const ACCESS_TOKEN_PREFIX = 'mcp_at_';
export const REFRESH_TOKEN_PREFIX = 'mcp_rt_';
export const AUTHORIZATION_CODE_PREFIX = 'mcp_ac_';

/** Why a token family was revoked; kept on the grant for the audit trail. */
export type RevokedReason =
  'code_replay' | 'refresh_token_reuse' | 'revoked_by_client' | 'disconnected' | 'user_deactivated';

/** A token family: what one approval on the consent page granted, and everything issued from it. */
export interface Grant {
  id: string;
  clientId: string;
  userId: string;
  firmId: string;
  scopes: Scope[];
  /** Null: every organization of the firm. */
  organizationIds: string[] | null;
  /** RFC 8707: the resource the approval is for; null for the API as a whole. */
  resource: string | null;
}

export interface StoredCode {
  id: string;
  grant: Grant;
  redirectUri: string;
  codeChallenge: string;
  codeChallengeMethod: string;
  expiresAt: Date;
}

export interface StoredRefreshToken {
  id: string;
  grant: Grant;
  scopes: Scope[];
  expiresAt: Date;
}

const toGrant = (row: typeof oauthGrants.$inferSelect): Grant => ({
  id: row.id,
  clientId: row.clientId,
  userId: row.userId,
  firmId: row.firmId,
  scopes: row.scopes.filter(isScope),
  organizationIds: row.organizationIds,
  resource: row.resource,
});

export interface CreateCodeInput {
  client: OAuthClient;
  userId: string;
  firmId: string;
  scopes: readonly Scope[];
  organizationIds: readonly string[] | null;
  resource: string | null;
  code: string;
  redirectUri: string;
  codeChallenge: string;
  codeChallengeMethod: string;
  expiresAt: Date;
}

/** Records an approval: a new token family and the single-use code that starts it. */
export async function createAuthorizationCode(db: Executor, input: CreateCodeInput): Promise<{ grantId: string }> {
  return db.transaction(async (tx) => {
    const [grant] = await tx
      .insert(oauthGrants)
      .values({
        clientId: input.client.id,
        userId: input.userId,
        firmId: input.firmId,
        scopes: [...input.scopes],
        organizationIds: input.organizationIds ? [...input.organizationIds] : null,
        resource: input.resource,
      })
      .returning({ id: oauthGrants.id });
    const grantId = grant?.id as string;
    await tx.insert(oauthCodes).values({
      firmId: input.firmId,
      grantId,
      codeHash: hashSecret(input.code),
      redirectUri: input.redirectUri,
      codeChallenge: input.codeChallenge,
      codeChallengeMethod: input.codeChallengeMethod,
      expiresAt: input.expiresAt,
    });
    return { grantId };
  });
}

/**
 * The code presented at the token endpoint, or null. A code that was already used is a replay
 * (RFC 6749 4.1.2: "SHOULD revoke all tokens previously issued based on that authorization code"):
 * its whole family is revoked before answering.
 */
export async function findCodeForExchange(db: Executor, code: string): Promise<StoredCode | null> {
  if (!isWellFormedSecret(AUTHORIZATION_CODE_PREFIX, code)) return null;
  const [row] = await db
    .select({ code: oauthCodes, grant: oauthGrants })
    .from(oauthCodes)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthCodes.grantId))
    .where(eq(oauthCodes.codeHash, hashSecret(code)))
    .limit(1);
  if (!row) return null;
  if (row.code.usedAt) {
    await revokeGrant(db, row.grant.id, 'code_replay');
    return null;
  }
  if (row.grant.revokedAt) return null;
  return {
    id: row.code.id,
    grant: toGrant(row.grant),
    redirectUri: row.code.redirectUri,
    codeChallenge: row.code.codeChallenge,
    codeChallengeMethod: row.code.codeChallengeMethod,
    expiresAt: row.code.expiresAt,
  };
}

/** Marks a code used. False when another request used it first: that is a replay too. */
export async function consumeAuthorizationCode(db: Executor, code: StoredCode): Promise<boolean> {
  const rows = await db
    .update(oauthCodes)
    .set({ usedAt: new Date() })
    .where(and(eq(oauthCodes.id, code.id), isNull(oauthCodes.usedAt)))
    .returning({ id: oauthCodes.id });
  if (rows.length === 0) await revokeGrant(db, code.grant.id, 'code_replay');
  return rows.length > 0;
}

export interface IssuedTokens {
  accessToken: string;
  accessTokenExpiresAt: Date;
  refreshToken?: string | undefined;
  refreshTokenExpiresAt?: Date | undefined;
  scopes: readonly Scope[];
}

/** Stores the hashes of a new access token and (usually) refresh token in a family. */
export async function saveIssuedTokens(db: Executor, grantId: string, tokens: IssuedTokens): Promise<void> {
  const firmId = sql`(select firm_id from oauth_grants where id = ${grantId})`;
  const rows: (Omit<typeof oauthTokens.$inferInsert, 'firmId'> & { firmId: SQL })[] = [
    {
      firmId,
      grantId,
      kind: 'access',
      tokenHash: hashSecret(tokens.accessToken),
      scopes: [...tokens.scopes],
      expiresAt: tokens.accessTokenExpiresAt,
    },
  ];
  if (tokens.refreshToken && tokens.refreshTokenExpiresAt) {
    rows.push({
      firmId,
      grantId,
      kind: 'refresh',
      tokenHash: hashSecret(tokens.refreshToken),
      scopes: [...tokens.scopes],
      expiresAt: tokens.refreshTokenExpiresAt,
    });
  }
  await db.insert(oauthTokens).values(rows);
}

/**
 * The refresh token presented at the token endpoint, or null. A token that was already rotated is
 * being reused: someone holds a copy, so the whole family is revoked (OAuth 2.0 Security BCP 4.14).
 */
export async function findRefreshToken(db: Executor, token: string): Promise<StoredRefreshToken | null> {
  if (!isWellFormedSecret(REFRESH_TOKEN_PREFIX, token)) return null;
  const [row] = await db
    .select({ token: oauthTokens, grant: oauthGrants })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .where(and(eq(oauthTokens.tokenHash, hashSecret(token)), eq(oauthTokens.kind, 'refresh')))
    .limit(1);
  if (!row) return null;
  if (row.token.rotatedAt) {
    await revokeGrant(db, row.grant.id, 'refresh_token_reuse');
    return null;
  }
  if (row.token.revokedAt || row.grant.revokedAt) return null;
  return {
    id: row.token.id,
    grant: toGrant(row.grant),
    scopes: row.token.scopes.filter(isScope),
    expiresAt: row.token.expiresAt,
  };
}

/** Marks a refresh token rotated. False when a concurrent request rotated it first: reuse. */
export async function rotateRefreshToken(db: Executor, token: StoredRefreshToken): Promise<boolean> {
  const rows = await db
    .update(oauthTokens)
    .set({ rotatedAt: new Date() })
    .where(and(eq(oauthTokens.id, token.id), isNull(oauthTokens.rotatedAt), isNull(oauthTokens.revokedAt)))
    .returning({ id: oauthTokens.id });
  if (rows.length === 0) await revokeGrant(db, token.grant.id, 'refresh_token_reuse');
  return rows.length > 0;
}

/** Revokes a token family: the grant and every token in it stop working at once. */
export async function revokeGrant(db: Executor, grantId: string, reason: RevokedReason): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .update(oauthGrants)
      .set({
        revokedAt: sql`coalesce(${oauthGrants.revokedAt}, now())`,
        revokedReason: sql`coalesce(${oauthGrants.revokedReason}, ${reason})`,
      })
      .where(eq(oauthGrants.id, grantId));
    await tx
      .update(oauthTokens)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(oauthTokens.grantId, grantId), isNull(oauthTokens.revokedAt)));
  });
}

/**
 * Resolves an `mcp_at_` access token to its credential, or null: malformed, unknown, expired or
 * revoked tokens, revoked families and clients, and families whose approving user is no longer an
 * active owner or admin of the firm all fail. The credential is anchored to the approving user's firm and
 * limited to the approved scopes and organizations.
 */
export async function authenticateAccessToken(
  db: Executor,
  presented: string,
  now = new Date(),
): Promise<Credential | null> {
  if (!isWellFormedSecret(ACCESS_TOKEN_PREFIX, presented)) return null;
  const [row] = await db
    .select({ token: oauthTokens, grant: oauthGrants })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .innerJoin(users, eq(users.id, oauthGrants.userId))
    .where(
      and(
        eq(oauthTokens.tokenHash, hashSecret(presented)),
        eq(oauthTokens.kind, 'access'),
        isNull(oauthTokens.revokedAt),
        gt(oauthTokens.expiresAt, now),
        isNull(oauthGrants.revokedAt),
        isNull(oauthClients.revokedAt),
        eq(users.firmId, oauthGrants.firmId),
        inArray(users.role, ['owner', 'admin']),
        isNull(users.deactivatedAt),
      ),
    )
    .limit(1);
  if (!row) return null;
  return {
    kind: 'oauth_token',
    id: row.grant.id,
    firmId: row.grant.firmId,
    // Never the firm's own management (users, keys), whatever was stored.
    scopes: new Set(row.token.scopes.filter((s): s is Scope => isScope(s) && !NOT_FOR_OAUTH.has(s))),
    organizationIds: row.grant.organizationIds,
    userId: row.grant.userId,
    resource: row.grant.resource,
  };
}

/**
 * RFC 7009 revocation by the client the token was issued to. A refresh token takes its whole family
 * with it (RFC 7009 2.1); an access token only itself. Unknown tokens and tokens of other clients are
 * ignored, as the RFC asks, so the answer never tells whether a token exists.
 */
export async function revokeTokenOfClient(db: Executor, client: OAuthClient, token: string): Promise<void> {
  const kind = isWellFormedSecret(REFRESH_TOKEN_PREFIX, token)
    ? 'refresh'
    : isWellFormedSecret(ACCESS_TOKEN_PREFIX, token)
      ? 'access'
      : null;
  if (!kind) return;
  const [row] = await db
    .select({ tokenId: oauthTokens.id, grantId: oauthTokens.grantId })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .where(
      and(
        eq(oauthTokens.tokenHash, hashSecret(token)),
        eq(oauthTokens.kind, kind),
        eq(oauthGrants.clientId, client.id),
      ),
    )
    .limit(1);
  if (!row) return;
  if (kind === 'refresh') {
    await revokeGrant(db, row.grantId, 'revoked_by_client');
    return;
  }
  await db
    .update(oauthTokens)
    .set({ revokedAt: sql`coalesce(${oauthTokens.revokedAt}, now())` })
    .where(eq(oauthTokens.id, row.tokenId));
}

export interface Connection {
  id: string;
  client: { clientId: string; name: string };
  scopes: Scope[];
  organizationIds: string[] | null;
  approvedBy: { userId: string; email: string };
  createdAt: Date;
}

/** A family still connects its app while it holds a token that is neither revoked, rotated nor expired. */
const hasLiveToken = (db: Executor) =>
  exists(
    db
      .select({ one: sql`1` })
      .from(oauthTokens)
      .where(
        and(
          eq(oauthTokens.grantId, oauthGrants.id),
          isNull(oauthTokens.revokedAt),
          isNull(oauthTokens.rotatedAt),
          gt(oauthTokens.expiresAt, sql`now()`),
        ),
      ),
  );

/** The partner apps connected to a firm: one entry per approval that still holds live tokens. */
export async function listConnections(
  db: Executor,
  firmId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<Connection>> {
  const after = page.cursor ? gt(oauthGrants.id, String(decodeCursor(page.cursor, ['uuid'])[0])) : undefined;
  const rows = await db
    .select({ grant: oauthGrants, client: oauthClients, email: users.email })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .innerJoin(users, eq(users.id, oauthGrants.userId))
    .where(
      and(
        eq(oauthGrants.firmId, firmId),
        isNull(oauthGrants.revokedAt),
        isNull(oauthClients.revokedAt),
        hasLiveToken(db),
        after,
      ),
    )
    .orderBy(asc(oauthGrants.id))
    .limit(page.limit + 1);
  const result = toPage(rows, page.limit, (r) => [r.grant.id]);
  return {
    nextCursor: result.nextCursor,
    data: result.data.map((r) => ({
      id: r.grant.id,
      client: { clientId: r.client.clientId, name: r.client.name },
      scopes: r.grant.scopes.filter(isScope),
      organizationIds: r.grant.organizationIds,
      approvedBy: { userId: r.grant.userId, email: r.email },
      createdAt: r.grant.createdAt,
    })),
  };
}

/** Disconnects an app: revokes the family. False when the firm has no such connection. */
export async function disconnect(db: Executor, firmId: string, grantId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: oauthGrants.id })
    .from(oauthGrants)
    .where(and(eq(oauthGrants.id, grantId), eq(oauthGrants.firmId, firmId), isNull(oauthGrants.revokedAt)))
    .limit(1);
  if (!row) return false;
  await revokeGrant(db, grantId, 'disconnected');
  return true;
}

/** The agent a credential belongs to: an OAuth token's client (its app), or the API key itself. */
export async function agentOfCredential(db: Executor, credential: { kind: string; id: string }): Promise<string> {
  if (credential.kind !== 'oauth_token') return credential.id;
  const [row] = await db
    .select({ clientId: oauthGrants.clientId })
    .from(oauthGrants)
    .where(eq(oauthGrants.id, credential.id));
  return row?.clientId ?? credential.id;
}

/**
 * The names people know agents by, for the approvers' pages: an API key's name, an OAuth client's (an app the firm
 * granted access). Ids that are no agent of the firm are left out.
 */
export async function agentNames(
  db: Executor,
  firmId: string,
  agentIds: readonly string[],
): Promise<Map<string, string>> {
  const ids = [...new Set(agentIds.filter(isUuid))];
  if (ids.length === 0) return new Map();
  const keys = await db
    .select({ id: apiKeys.id, name: apiKeys.name })
    .from(apiKeys)
    .where(and(eq(apiKeys.firmId, firmId), inArray(apiKeys.id, ids)));
  const apps = await db
    .select({ id: oauthClients.id, name: oauthClients.name })
    .from(oauthClients)
    .where(
      and(
        inArray(oauthClients.id, ids),
        exists(
          db
            .select({ one: sql`1` })
            .from(oauthGrants)
            .where(and(eq(oauthGrants.clientId, oauthClients.id), eq(oauthGrants.firmId, firmId))),
        ),
      ),
    );
  return new Map([...keys, ...apps].map((row) => [row.id, row.name]));
}

/** Whether an agent of the firm has this id: an API key of the firm, or an OAuth client the firm granted access. */
export async function isAgentOfFirm(db: Executor, firmId: string, agentId: string): Promise<boolean> {
  if (!isUuid(agentId)) return false;
  const rows = rowsOf(
    await db.execute(sql`select 1 from api_keys where id = ${agentId}::uuid and firm_id = ${firmId}
      union all select 1 from oauth_grants where client_id = ${agentId}::uuid and firm_id = ${firmId} limit 1`),
  );
  return rows.length > 0;
}
