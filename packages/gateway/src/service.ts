import { DomainError, type Scope } from '@firm/core';
import {
  type Db,
  type Executor,
  type IdempotencyKey,
  type IdempotentOutcome,
  pgErrorOf,
  runOnce,
  runOnceRemote,
} from '@firm/db';
import type { PlatformAdapter, PlatformOperation, RecordPage, WriteResult } from '@firm/platform';
import { sql } from 'drizzle-orm';
import { type AgentAuditEvent, appendAuditEvent, type AuditInput, type AuditTrail } from './audit';
import type { Client } from './clients';
import { type CoverageEntry, coverageOf, coverageOfTransaction } from './coverage';
import { checkQuery, parseQuery } from './query';

/**
 * Who calls the gateway: a credential of the firm (an API key, an agent's OAuth token, a session), or whoever acts
 * for one (an approval that runs an agent's write as the agent). No HTTP request in it.
 */
export interface GatewayActor {
  firmId: string;
  kind: string;
  id: string;
  scopes: ReadonlySet<Scope>;
  requestId: string | null;
}

/** What the platform adapter of one call is built for. */
export interface PlatformCall {
  actor: GatewayActor;
  client: Client;
  /** The executor the embedded platform reads and writes through: the pool, or the call's transaction. */
  db: Executor;
  /** A dry run: the embedded platform's write is rolled back by the gateway; a remote platform sends none. */
  dryRun: boolean;
  /**
   * Derived from the call's idempotency key: the remote platform's own request id for the write, so a retried call
   * is one write there too. Null without a key.
   */
  requestKey: string | null;
}

/** Builds a client's platform adapter for one call: the embedded books, or a remote platform (QuickBooks Online). */
export type PlatformFactory = (call: PlatformCall) => PlatformAdapter;

/**
 * The platform factory of a deployment: the embedded platform for embedded clients (`embedded`), and the remote
 * platforms it is configured for by name (`remote.qbo`). A client on a platform this deployment has no adapter for
 * is 503 SERVICE_UNAVAILABLE.
 */
export function platformFactory(options: {
  embedded: PlatformFactory;
  remote: Partial<Record<Client['platform'], PlatformFactory | null>>;
}): PlatformFactory {
  return (call) => {
    if (call.client.platform === 'embedded') return options.embedded(call);
    const remote = options.remote[call.client.platform];
    if (!remote) {
      throw new DomainError(
        'SERVICE_UNAVAILABLE',
        `${REMOTE_NAMES[call.client.platform] ?? call.client.platform} is not configured in this deployment`,
      );
    }
    return remote(call);
  };
}

const REMOTE_NAMES: Partial<Record<string, string>> = { qbo: 'QuickBooks Online' };

/** What a call's audit event records about it beyond the caller and the outcome, filled in as the call learns it. */
export interface GatewayAudit {
  clientId?: string | null;
  entityType?: string | null;
  entityId?: string | null;
  syncTokenBefore?: string | null;
  syncTokenAfter?: string | null;
  dryRun?: boolean;
}

/** A write through the gateway: an operation on one record of a covered entity. */
export interface GatewayWrite {
  /** The entity as the coverage registry names it (`Invoice`, `invoice`); or `transactionType` instead. */
  entity?: string;
  /** A transaction type of the `/transactions` routes (`invoice`, `bill-payment`). */
  transactionType?: string;
  operation: 'create' | 'update' | 'delete';
  /** The record's id, for an update or a delete. */
  id?: string;
  /** The platform's payload for the entity (a sparse update's changed fields and SyncToken). */
  payload?: Record<string, unknown>;
  /** A delete's SyncToken: required. */
  syncToken?: string;
}

export interface GatewayWriteOptions<B> {
  /** Writes nothing: the embedded platform's write runs and is rolled back; a remote platform sends none. */
  dryRun?: boolean;
  /** The idempotency key the write runs under: once per key, a repeat replays the first response. */
  key?: IdempotencyKey;
  /** The status of a write that is not a dry run (a dry run is 200): by default 201 for a create, else 200. */
  status?: number;
  /** The response body of the write: by default `{ data: record }`. Stored under the key for a replay. */
  respond?: (result: WriteResult, dryRun: boolean, entry: CoverageEntry) => B;
  /** Filled in as the write learns its entity and its outcome, also when it then fails. */
  audit?: GatewayAudit;
  /**
   * Refuses the write (CLIENT_READ_ONLY) unless the firm opened the client to agents for writing. A caller that has
   * not judged the client's access already (a pass-through call, whose method says whether it writes) sets it.
   */
  requireReadWrite?: boolean;
}

export interface GatewayWriteOutcome<B> extends IdempotentOutcome {
  body: B;
  /** What the call's audit event records about the write (the entity only, when the response was replayed). */
  audit: GatewayAudit;
}

export interface GatewayOptions {
  db: Db;
  platforms: PlatformFactory;
  /** The agent audit trail's keys and anchors: every gateway call is recorded in it. */
  audit: AuditTrail;
  /** How long one statement of a bounded read may run on the embedded books (GATEWAY_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs: number;
}

export const notCovered = (name: string) =>
  new DomainError('ENTITY_NOT_COVERED', `the gateway does not cover ${name}; GET /acct/coverage lists what it covers`);

/** The coverage entry of an entity for an operation: ENTITY_NOT_COVERED, or OPERATION_NOT_SUPPORTED. */
export function covered(name: string, operation: PlatformOperation): CoverageEntry {
  const entry = coverageOf(name);
  if (!entry) throw notCovered(name);
  if (!entry.operations.includes(operation)) {
    throw new DomainError('OPERATION_NOT_SUPPORTED', `${entry.entity} does not support ${operation}`, [
      { field: 'entity', message: `supports ${entry.operations.join(', ')}` },
    ]);
  }
  return entry;
}

/** The coverage entry of a transaction type for an operation. */
export function coveredTransaction(type: string, operation: PlatformOperation): CoverageEntry {
  const entry = coverageOfTransaction(type);
  if (!entry) throw notCovered(type);
  return covered(entry.entity, operation);
}

/** A scope the call needs beyond the one its door checked: the entity's, known once the call is read. */
export function requireScope(actor: GatewayActor, scope: Scope | undefined): void {
  if (!scope || !actor.scopes.has(scope)) {
    throw new DomainError('INSUFFICIENT_SCOPE', `this credential lacks the scope ${scope}`, [
      { message: 'missing scope', scope },
    ]);
  }
}

const ROLLBACK = Symbol('dry run');

/** Runs `work` in a transaction that is then rolled back, and answers what it returned. */
async function rolledBack<T>(db: Db, work: (tx: Executor) => Promise<T>): Promise<T> {
  let out: { value: T } | undefined;
  await db
    .transaction(async (tx) => {
      out = { value: await work(tx) };
      throw ROLLBACK;
    })
    .catch((err: unknown) => {
      if (err !== ROLLBACK) throw err;
    });
  return (out as { value: T }).value;
}

export type Gateway = ReturnType<typeof createGateway>;

/**
 * The agent gateway as a service, built once at start: an agent's reads and writes of a client's books, whichever
 * platform keeps them, under the coverage registry, the caller's scopes, the idempotency rules and the bounded-read
 * timeout. HTTP routes, MCP tools and an approval that runs an agent's write later all go through it.
 */
export function createGateway(options: GatewayOptions) {
  const { db, platforms, statementTimeoutMs } = options;

  /** The client's platform for one call; writes pass the transaction they run in. */
  const platform = (
    actor: GatewayActor,
    client: Client,
    through: Executor = db,
    call: { dryRun?: boolean; key?: string | null } = {},
  ): PlatformAdapter =>
    platforms({
      actor,
      client,
      db: through,
      dryRun: call.dryRun ?? false,
      requestKey: call.key ? `${actor.firmId}:${client.id}:${call.key}` : null,
    });

  /**
   * An agent's read of its client's books. On this service's own books it is one transaction in which each statement
   * may run `statementTimeoutMs` (a SET LOCAL, so the setting ends with the transaction, behind a transaction pooler
   * too); a statement that runs longer is cancelled and the read answered 422 QUERY_TIMEOUT, leaving the connection
   * healthy. Another platform's reads are calls over the network with timeouts of their own, and no transaction of
   * ours is held over them.
   */
  async function read<T>(
    actor: GatewayActor,
    client: Client,
    fn: (platform: PlatformAdapter) => Promise<T>,
  ): Promise<T> {
    if (client.platform !== 'embedded') return fn(platform(actor, client));
    try {
      return await db.transaction(async (tx) => {
        await tx.execute(sql`select set_config('statement_timeout', ${String(statementTimeoutMs)}, true)`);
        return fn(platform(actor, client, tx));
      });
    } catch (err) {
      // 57014 query_canceled: here, the timeout set above.
      if (pgErrorOf(err)?.code !== '57014') throw err;
      const message = `the read ran longer than ${statementTimeoutMs} ms and was cancelled; narrow it and send it again`;
      throw new DomainError('QUERY_TIMEOUT', message, [
        { message: 'statement timeout', timeoutMs: statementTimeoutMs },
      ]);
    }
  }

  return {
    /** The client's platform adapter, outside any transaction of the gateway (reports, the health scan). */
    platform: (actor: GatewayActor, client: Client) => platform(actor, client),

    read,

    /**
     * One record by its id: a lookup by key that cannot run long, so it runs without the bounded read's transaction
     * and its timeout (three round trips fewer on every record read).
     */
    readRecord: async (actor: GatewayActor, client: Client, entity: string, id: string) =>
      platform(actor, client).get(entity, id),

    /** A page of an entity's records, in a bounded read. */
    list: (
      actor: GatewayActor,
      client: Client,
      entity: string,
      paging: { maxResults: number; startPosition: number },
    ): Promise<RecordPage> => read(actor, client, (p) => p.list(entity, paging)),

    /**
     * Parses, checks and runs a query of the client's books in a bounded read: QUERY_INVALID before anything runs,
     * the read scope of the entity it names.
     */
    async query(
      actor: GatewayActor,
      client: Client,
      text: string,
      options: { defaultMaxResults: number; audit?: GatewayAudit },
    ) {
      const query = checkQuery(await parseQuery(text));
      if (options.audit) options.audit.entityType = query.entity;
      requireScope(actor, query.coverage.scopes.read);
      return read(actor, client, (p) =>
        p.query({
          entity: query.entity,
          select: query.select,
          where: query.where,
          orderBy: query.orderBy,
          startPosition: query.startPosition ?? 1,
          maxResults: query.maxResults ?? options.defaultMaxResults,
        }),
      );
    },

    /**
     * A write to the client's books: the entity's coverage and scope, the platform, the idempotency key (the write
     * and the key's record committing together on these books; the remote platform deduplicating a repeated key's
     * write itself, with no transaction of ours held over it), and a dry run's rollback (nothing is written, not even
     * an idempotency record).
     */
    async write<B = { data: WriteResult['record'] }>(
      actor: GatewayActor,
      client: Client,
      write: GatewayWrite,
      options: GatewayWriteOptions<B> = {},
    ): Promise<GatewayWriteOutcome<B>> {
      const { operation } = write;
      const audit = options.audit ?? {};
      const entry =
        write.transactionType !== undefined
          ? coveredTransaction(write.transactionType, operation)
          : covered(write.entity ?? '', operation);
      audit.entityType = entry.entity;
      requireScope(actor, entry.scopes[operation]);
      if (options.requireReadWrite && client.agentAccess !== 'read_write') {
        throw new DomainError('CLIENT_READ_ONLY', 'the firm opened this client to agents for reading only');
      }
      if (operation === 'delete' && write.syncToken === undefined) {
        throw new DomainError('VALIDATION_ERROR', 'send the SyncToken in the body or the query string', [
          { field: 'SyncToken', message: 'is required' },
        ]);
      }
      const dryRun = options.dryRun === true;
      const status = options.status ?? (operation === 'create' ? 201 : 200);
      const respond = options.respond ?? ((r: WriteResult) => ({ data: r.record }) as B);
      const payload = write.payload ?? {};
      const id = write.id ?? '';
      const key = options.key;
      const run = async (p: PlatformAdapter, isDry: boolean) => {
        const result =
          operation === 'create'
            ? await p.create(entry.entity, payload)
            : operation === 'update'
              ? await p.update(entry.entity, id, payload)
              : await p.delete(entry.entity, id, write.syncToken as string);
        Object.assign(audit, {
          entityId: result.record.Id,
          syncTokenBefore: result.syncTokenBefore,
          syncTokenAfter: isDry ? null : result.record.SyncToken,
          dryRun: isDry,
        });
        return respond(result, isDry, entry);
      };
      const outcome = (o: IdempotentOutcome) => ({ ...o, body: o.body as B, audit });

      if (client.platform !== 'embedded') {
        // Another platform's write is not ours to roll back: a dry run sends none, and no transaction of ours is held
        // over the remote call (the platform deduplicates a repeated key's write itself; see runOnceRemote).
        const remote = async () => ({
          status,
          body: await run(platform(actor, client, db, { dryRun, key: key?.key ?? null }), dryRun),
        });
        if (dryRun) return outcome({ replayed: false, status: 200, body: (await remote()).body });
        if (key) return outcome(await runOnceRemote(db, key, remote));
        return outcome({ replayed: false, ...(await remote()) });
      }
      if (dryRun) {
        const body = await rolledBack(db, (tx) => run(platform(actor, client, tx, { dryRun: true }), true));
        return outcome({ replayed: false, status: 200, body });
      }
      const work = async (tx: Executor) => ({ status, body: await run(platform(actor, client, tx), false) });
      if (key) return outcome(await runOnce(db, key, work));
      return outcome({ replayed: false, ...(await db.transaction(work)) });
    },

    /** Records a gateway call in the firm's audit trail (hash-chained, anchored). */
    recordCall: (input: AuditInput): Promise<AgentAuditEvent> => appendAuditEvent(db, options.audit, input),
  };
}
