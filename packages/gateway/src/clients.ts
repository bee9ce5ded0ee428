import { DomainError, isUuid } from '@firm/core';
import { acctClients, type AGENT_ACCESS, type Executor, organizations, preparedStatement, type Tx } from '@firm/db';
import type { Credential } from '@firm/identity';
import { and, asc, eq, inArray, isNull, ne, type SQL, sql } from 'drizzle-orm';

export type AgentAccess = (typeof AGENT_ACCESS)[number];

/** A client as agents see it: an organization of the firm, on its accounting platform. */
export interface Client {
  id: string;
  name: string;
  platform: 'embedded' | 'qbo';
  acctCompanyId: string;
  status: 'connected' | 'needs_reauth' | 'disconnected' | 'error';
  lastSyncAt: Date | null;
  agentAccess: AgentAccess;
}

export const clientNotFound = () => new DomainError('CLIENT_NOT_FOUND', 'client not found');

const columns = {
  id: organizations.id,
  name: organizations.name,
  platform: acctClients.platform,
  acctCompanyId: acctClients.acctCompanyId,
  status: acctClients.status,
  lastSyncAt: acctClients.lastSyncAt,
  agentAccess: acctClients.agentAccess,
};

/**
 * The clients a credential may reach through the gateway: organizations of its firm that the credential may see,
 * and, unless `includeClosed` (the firm managing access), that the firm has opened to agents.
 */
function visible(credential: Credential, includeClosed: boolean) {
  return and(
    eq(acctClients.firmId, credential.firmId),
    eq(organizations.firmId, credential.firmId),
    credential.organizationIds === null ? undefined : inArray(organizations.id, [...credential.organizationIds]),
    includeClosed ? undefined : ne(acctClients.agentAccess, 'none'),
  );
}

/**
 * The clients agents may list: those the firm opened to them (all, with `includeClosed`), without the archived
 * companies, which are no longer clients to work on (an agent that knows one's id can still read its books).
 */
export async function listClients(
  db: Executor,
  credential: Credential,
  options: { includeClosed?: boolean } = {},
): Promise<Client[]> {
  if (credential.organizationIds?.length === 0) return [];
  return db
    .select(columns)
    .from(acctClients)
    .innerJoin(organizations, eq(organizations.id, acctClients.organizationId))
    .where(and(visible(credential, options.includeClosed ?? false), isNull(organizations.archivedAt)))
    .orderBy(asc(organizations.name), asc(organizations.id));
}

/** One client, or CLIENT_NOT_FOUND for an unknown one, another firm's, or one closed to agents. */
export async function getClient(
  db: Executor,
  credential: Credential,
  id: string,
  options: { includeClosed?: boolean } = {},
): Promise<Client> {
  if (!isUuid(id) || credential.organizationIds?.length === 0) throw clientNotFound();
  const [row] = await db
    .select(columns)
    .from(acctClients)
    .innerJoin(organizations, eq(organizations.id, acctClients.organizationId))
    .where(and(visible(credential, options.includeClosed ?? false), eq(organizations.id, id)));
  if (!row) throw clientNotFound();
  return row;
}

/**
 * Opens or closes every client of the firm to agents at once, without an audit event: for the demo seed, in the
 * transaction that creates the firm and its clients.
 */
export async function setFirmAgentAccess(tx: Tx, firmId: string, agentAccess: AgentAccess): Promise<void> {
  await tx.update(acctClients).set({ agentAccess }).where(eq(acctClients.firmId, firmId));
}

/** Opens or closes a client to agents. Firm owners and admins do this; the gateway's audit trail records it. */
export async function setAgentAccess(
  tx: Tx,
  credential: Credential,
  id: string,
  agentAccess: AgentAccess,
): Promise<Client> {
  const current = await getClient(tx, credential, id, { includeClosed: true });
  await tx
    .update(acctClients)
    .set({ agentAccess, updatedAt: new Date() })
    .where(and(eq(acctClients.organizationId, current.id), eq(acctClients.firmId, credential.firmId)));
  return { ...current, agentAccess };
}

const agentClientStatement = preparedStatement<{
  organization_id: string;
  platform: Client['platform'];
  acct_company_id: string;
  status: Client['status'];
  last_sync_at: Date | string | null;
  agent_access: AgentAccess;
}>(
  'gateway_agent_client',
  sql`select organization_id, platform, acct_company_id, status, last_sync_at, agent_access from acct_clients
      where organization_id = ${sql.placeholder('organizationId')} and firm_id = ${sql.placeholder('firmId')}`,
);

/**
 * The gateway's row of an organization the request already resolved (so of the credential's firm and visible to
 * it), or null when the firm has none. Runs on every client route, so it is a prepared statement.
 */
export async function agentClientOf(
  db: Executor,
  firmId: string,
  organization: { id: string; name: string },
): Promise<Client | null> {
  const [row] = await agentClientStatement(db, { organizationId: organization.id, firmId });
  if (!row) return null;
  return {
    id: row.organization_id,
    name: organization.name,
    platform: row.platform,
    acctCompanyId: row.acct_company_id,
    status: row.status,
    lastSyncAt: row.last_sync_at === null ? null : new Date(row.last_sync_at),
    agentAccess: row.agent_access,
  };
}

/*
 * What a remote platform's connection changes on its client (the QuickBooks Online package calls these): the
 * gateway owns `acct_clients`.
 */

/** Column expression: when the client of the caller's row's organization last synced with `platform`, or null. */
export function clientLastSyncOf(organizationIdColumn: SQL, platform: string): SQL {
  return sql`(select a.last_sync_at from acct_clients a
    where a.organization_id = ${organizationIdColumn} and a.platform = ${platform})`;
}

/** Sets the status of the organization's client while it is on `platform`. */
export async function setClientPlatformStatus(
  db: Executor,
  organizationId: string,
  platform: string,
  status: string,
): Promise<void> {
  await db.execute(sql`update acct_clients set status = ${status}, updated_at = now()
    where organization_id = ${organizationId} and platform = ${platform}`);
}

/** Puts the organization's client back on its own books (the embedded platform), connected. */
export async function returnClientToEmbedded(db: Executor, organizationId: string): Promise<void> {
  await db.execute(sql`update acct_clients set platform = 'embedded', acct_company_id = organization_id::text,
      status = 'connected', updated_at = now() where organization_id = ${organizationId}`);
}

/** Makes the organization's client (created with no agent access when it has none) a connected client of `platform`. */
export async function connectClientToPlatform(
  db: Executor,
  input: { organizationId: string; firmId: string; platform: string; companyId: string },
): Promise<void> {
  await db.execute(sql`
    insert into acct_clients (organization_id, firm_id, platform, acct_company_id, status, agent_access)
    values (${input.organizationId}, ${input.firmId}, ${input.platform}, ${input.companyId}, 'connected', 'none')
    on conflict (organization_id) do update set platform = excluded.platform,
      acct_company_id = excluded.acct_company_id, status = 'connected', updated_at = now()`);
}

/** Records a successful call on the client of `platform` (`lastSyncAt`), at most once a minute per client. */
export async function touchClientLastSync(db: Executor, organizationId: string, platform: string): Promise<void> {
  await db.execute(sql`update acct_clients set last_sync_at = now()
    where organization_id = ${organizationId} and platform = ${platform}
      and (last_sync_at is null or last_sync_at < now() - interval '1 minute')`);
}
