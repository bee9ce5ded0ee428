import { sql } from 'drizzle-orm';
import { boolean, check, index, pgEnum, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { newId } from '@firm/core';
import { firms, users } from './firms';

/**
 * Browser sessions. The cookie carries a random token (signed); only its hash is stored, so a
 * database leak does not leak sessions, and logout revokes the row.
 */
export const userSessions = pgTable(
  'user_sessions',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    /** Its user's firm (see distribution.ts). */
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    tokenHash: text('token_hash').notNull().unique(),
    /** Random per session; forms carry it as the CSRF token. */
    csrfToken: text('csrf_token').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('user_sessions_user_idx').on(t.userId)],
);

/** OAuth clients: registered by a firm owner/admin through the CLI, or by Dynamic Client Registration. */
export const oauthClients = pgTable(
  'oauth_clients',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    /** The public client identifier sent in OAuth requests. */
    clientId: text('client_id').notNull().unique(),
    name: text('name').notNull(),
    redirectUris: text('redirect_uris').array().notNull(),
    isPublic: boolean('is_public').notNull(),
    /** SHA-256 of the client secret (confidential clients only). */
    secretHash: text('secret_hash'),
    /** The firm that registered it through the CLI; null for dynamically registered clients. */
    firmId: uuid('firm_id').references(() => firms.id),
    createdByUserId: uuid('created_by_user_id').references(() => users.id),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [check('oauth_clients_secret', sql`${t.isPublic} = (${t.secretHash} is null)`)],
);

/**
 * A token family: everything issued from one authorization code. Refresh-token reuse or code
 * replay revokes the family, and with it every access and refresh token in it.
 */
export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    clientId: uuid('client_id')
      .notNull()
      .references(() => oauthClients.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    scopes: text('scopes').array().notNull(),
    /** Null: every organization of the firm. */
    organizationIds: uuid('organization_ids').array(),
    /** RFC 8707: the resource the approval is for (e.g. the MCP endpoint's URL); null: the API as a whole. */
    resource: text('resource'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    revokedReason: text('revoked_reason'),
  },
  (t) => [index('oauth_grants_firm_idx').on(t.firmId), index('oauth_grants_user_idx').on(t.userId)],
);

export const oauthCodes = pgTable('oauth_codes', {
  id: uuid('id').primaryKey().$defaultFn(newId),
  codeHash: text('code_hash').notNull().unique(),
  /** Its grant's firm (see distribution.ts). */
  firmId: uuid('firm_id')
    .notNull()
    .references(() => firms.id),
  grantId: uuid('grant_id')
    .notNull()
    .references(() => oauthGrants.id),
  redirectUri: text('redirect_uri').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  codeChallengeMethod: text('code_challenge_method').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  usedAt: timestamp('used_at', { withTimezone: true }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

export const oauthTokenKind = pgEnum('oauth_token_kind', ['access', 'refresh']);

export const oauthTokens = pgTable(
  'oauth_tokens',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    /** Its grant's firm (see distribution.ts). */
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    grantId: uuid('grant_id')
      .notNull()
      .references(() => oauthGrants.id),
    kind: oauthTokenKind('kind').notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    scopes: text('scopes').array().notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** For refresh tokens: when it was exchanged for a new pair. Presenting it again is reuse. */
    rotatedAt: timestamp('rotated_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('oauth_tokens_grant_idx').on(t.grantId)],
);
