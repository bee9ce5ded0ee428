import { DomainError } from '@firm/core';
import { type Executor, firms, oauthClients } from '@firm/db';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { generateSecret, hashSecret, isWellFormedSecret, safeEqual } from './secrets';

export const CLIENT_ID_PREFIX = 'oc_';
export const CLIENT_SECRET_PREFIX = 'mcp_cs_';
export const MAX_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2000;
const MAX_NAME_LENGTH = 100;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Schemes that are never a redirect target, whatever a client registers. */
const FORBIDDEN_SCHEMES = new Set([
  'javascript:',
  'data:',
  'file:',
  'blob:',
  'vbscript:',
  'about:',
  'ftp:',
  'ws:',
  'wss:',
]);

export interface OAuthClient {
  /** Internal id (the row's primary key). */
  id: string;
  /** The public identifier sent in OAuth requests. */
  clientId: string;
  name: string;
  redirectUris: string[];
  isPublic: boolean;
  firmId: string | null;
  createdAt: Date;
}

/**
 * Why a redirect URI cannot be registered, or null when it can (RFC 6749 3.1.2, RFC 8252 7):
 * absolute, no fragment and no user info; https anywhere, http only on a loopback host (native apps
 * and local development), or a private-use scheme in reverse-domain form (`com.example.app:/cb`).
 */
export function redirectUriProblem(uri: string): string | null {
  if (uri.length > MAX_URI_LENGTH) return `is longer than ${MAX_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URI';
  }
  if (uri.includes('#')) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain user information';
  if (url.protocol === 'https:') return url.hostname ? null : 'needs a host';
  if (url.protocol === 'http:') {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? null
      : 'must use https unless the host is localhost or a loopback address';
  }
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `must not use the ${url.protocol} scheme`;
  return /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol)
    ? null
    : 'a private-use scheme must be in reverse-domain form, such as com.example.app:';
}

export interface CreateOAuthClientInput {
  name: string;
  redirectUris: readonly string[];
  isPublic: boolean;
  /** Restricts approval to this firm's owners and admins. Null: any firm (dynamic registration). */
  firmId?: string | null;
  createdByUserId?: string | null;
}

/** Registers a client. Confidential clients get a secret, returned here once and stored as a hash. */
export async function createOAuthClient(
  db: Executor,
  input: CreateOAuthClientInput,
): Promise<{ client: OAuthClient; clientSecret: string | null }> {
  const name = input.name.trim();
  if (!name || name.length > MAX_NAME_LENGTH) {
    throw new DomainError('VALIDATION_ERROR', `the client name must be 1-${MAX_NAME_LENGTH} characters`, [
      { field: 'name', message: `must be 1-${MAX_NAME_LENGTH} characters` },
    ]);
  }
  const redirectUris = [...new Set(input.redirectUris)];
  if (redirectUris.length === 0 || redirectUris.length > MAX_REDIRECT_URIS) {
    throw new DomainError('VALIDATION_ERROR', `register 1-${MAX_REDIRECT_URIS} redirect URIs`, [
      { field: 'redirectUris', message: `needs 1-${MAX_REDIRECT_URIS} entries` },
    ]);
  }
  const problems = redirectUris.flatMap((uri) => {
    const problem = redirectUriProblem(uri);
    return problem ? [{ field: 'redirectUris', message: `${uri} ${problem}`, uri }] : [];
  });
  if (problems.length > 0) throw new DomainError('VALIDATION_ERROR', 'a redirect URI is not acceptable', problems);
  if (input.firmId) {
    const [firm] = await db.select({ id: firms.id }).from(firms).where(eq(firms.id, input.firmId)).limit(1);
    if (!firm) throw new DomainError('NOT_FOUND', `no firm ${input.firmId}`);
  }
  const clientSecret = input.isPublic ? null : generateSecret(CLIENT_SECRET_PREFIX);
  const [row] = await db
    .insert(oauthClients)
    .values({
      clientId: generateSecret(CLIENT_ID_PREFIX),
      name,
      redirectUris,
      isPublic: input.isPublic,
      secretHash: clientSecret ? hashSecret(clientSecret) : null,
      firmId: input.firmId ?? null,
      createdByUserId: input.createdByUserId ?? null,
    })
    .returning();
  return { client: toClient(row as typeof oauthClients.$inferSelect), clientSecret };
}

/** A registered, unrevoked client by its public identifier. */
export async function findOAuthClient(db: Executor, clientId: string): Promise<OAuthClient | null> {
  if (!isWellFormedSecret(CLIENT_ID_PREFIX, clientId)) return null;
  const [row] = await db
    .select()
    .from(oauthClients)
    .where(and(eq(oauthClients.clientId, clientId), isNull(oauthClients.revokedAt)))
    .limit(1);
  return row ? toClient(row) : null;
}

/**
 * Client authentication at the token and revocation endpoints (RFC 6749 2.3). A confidential client
 * must present its secret, whatever else the request carries (a PKCE verifier proves possession of
 * the code, not who the client is); a public client must not present one.
 */
export async function authenticateOAuthClient(
  db: Executor,
  clientId: string,
  secret: string | null | undefined,
): Promise<OAuthClient | null> {
  if (!isWellFormedSecret(CLIENT_ID_PREFIX, clientId)) return null;
  const [row] = await db
    .select()
    .from(oauthClients)
    .where(and(eq(oauthClients.clientId, clientId), isNull(oauthClients.revokedAt)))
    .limit(1);
  if (!row) return null;
  if (row.isPublic) return secret ? null : toClient(row);
  if (!secret || !row.secretHash || !isWellFormedSecret(CLIENT_SECRET_PREFIX, secret)) return null;
  return safeEqual(row.secretHash, hashSecret(secret)) ? toClient(row) : null;
}

/** Revokes a client: it can no longer be authorized or exchange codes and refresh tokens. */
export async function revokeOAuthClient(db: Executor, clientId: string): Promise<boolean> {
  const rows = await db
    .update(oauthClients)
    .set({ revokedAt: sql`coalesce(${oauthClients.revokedAt}, now())` })
    .where(eq(oauthClients.clientId, clientId))
    .returning({ id: oauthClients.id });
  return rows.length > 0;
}

function toClient(row: typeof oauthClients.$inferSelect): OAuthClient {
  return {
    id: row.id,
    clientId: row.clientId,
    name: row.name,
    redirectUris: row.redirectUris,
    isPublic: row.isPublic,
    firmId: row.firmId,
    createdAt: row.createdAt,
  };
}
