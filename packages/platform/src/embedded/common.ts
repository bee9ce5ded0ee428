import { DomainError, isUuid } from '@firm/core';
import { type Executor, preparedStatement, rowsOf, type Tx } from '@firm/db';
import type { LedgerContext } from '@firm/ledger';
import { contactNamesSelect } from '@firm/documents';
import { sql } from 'drizzle-orm';
import type { JournalEffectLine, ListOptions, PlatformContext, PlatformRecord, RecordPage } from '../types';

/** The books' own context for a write made through the platform. */
export const ledgerContextOf = (ctx: PlatformContext): LedgerContext => ({
  firmId: ctx.firmId,
  actor: ctx.actor,
  requestId: ctx.requestId ?? null,
  now: ctx.now,
});

export type Payload = Record<string, unknown>;

export const invalid = (field: string, message: string) =>
  new DomainError('VALIDATION_ERROR', `payload.${field} ${message}`, [{ field: `payload.${field}`, message }]);

export const recordNotFound = (entity: string) => new DomainError('RECORD_NOT_FOUND', `no such ${entity}`);

/** Money on the platform is decimal currency units (`337.50`); the books keep integer cents. */
export function centsOf(value: unknown, field: string, options: { allowZero?: boolean } = {}): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw invalid(field, 'must be an amount');
  const cents = Math.round(n * 100);
  if (Math.abs(n * 100 - cents) > 1e-6) throw invalid(field, 'has more than two decimals');
  if (cents < 0 || (cents === 0 && !options.allowZero)) throw invalid(field, 'must be more than zero');
  if (!Number.isSafeInteger(cents)) throw invalid(field, 'is too large');
  return cents;
}

export const amountOf = (cents: number): number => cents / 100;

export function textOf(payload: Payload, field: string): string | undefined {
  const v = payload[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw invalid(field, 'must be a string');
  return v;
}

export function objectOf(payload: Payload, field: string): Payload | undefined {
  const v = payload[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'must be an object');
  return v as Payload;
}

/** The `value` of a `...Ref` (`{"value": "42", "name": "..."}`). */
export function refOf(payload: Payload, field: string): string | undefined {
  const ref = objectOf(payload, field);
  if (!ref) return undefined;
  const value = ref.value;
  if (typeof value !== 'string' || value === '') throw invalid(`${field}.value`, 'must be a non-empty string');
  return value;
}

export function dateOf(payload: Payload, field: string): string | undefined {
  const v = textOf(payload, field);
  if (v === undefined) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v)) throw invalid(field, 'must be a date, YYYY-MM-DD');
  return v;
}

export function booleanOf(payload: Payload, field: string): boolean | undefined {
  const v = payload[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalid(field, 'must be true or false');
  return v;
}

export function linesOf(payload: Payload): Payload[] | undefined {
  const v = payload.Line;
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((l) => !l || typeof l !== 'object' || Array.isArray(l))) {
    throw invalid('Line', 'must be an array of objects');
  }
  return v as Payload[];
}

export interface Version {
  version: number;
  updatedAt: Date | null;
}

/** The versions (SyncTokens) of some records, in one query. */
const versionsStatement = preparedStatement<{ record_id: string; version: number; updated_at: Date | string }>(
  'platform_record_versions',
  sql`select record_id, version, updated_at from record_versions
      where organization_id = ${sql.placeholder('organizationId')} and record_id = any(${sql.placeholder('ids')}::uuid[])`,
);

export async function versionsOf(db: Executor, organizationId: string, ids: string[]): Promise<Map<string, Version>> {
  const map = new Map<string, Version>();
  if (ids.length === 0) return map;
  for (const r of await versionsStatement(db, { organizationId, ids })) {
    map.set(r.record_id, { version: r.version, updatedAt: new Date(r.updated_at) });
  }
  return map;
}

const namesAndVersionsStatement = preparedStatement<{
  kind: 'contact' | 'version';
  id: string;
  name: string | null;
  version: number | null;
  updated_at: Date | string | null;
}>(
  'platform_contact_names_and_versions',
  sql`select 'contact' as kind, c.id, c.name, null::integer as version, null::timestamptz as updated_at
      from (${contactNamesSelect(sql.placeholder('organizationId'), sql.placeholder('contactIds'))}) c
      union all
      select 'version', record_id, null, version, updated_at from record_versions
      where organization_id = ${sql.placeholder('organizationId')} and record_id = any(${sql.placeholder('ids')}::uuid[])`,
);

/** The names of the contacts some records name and the records' versions, in one round trip. */
export async function contactNamesAndVersionsOf(
  db: Executor,
  organizationId: string,
  contactIds: string[],
  ids: string[],
): Promise<{ names: Map<string, string>; versions: Map<string, Version> }> {
  const names = new Map<string, string>();
  const versions = new Map<string, Version>();
  for (const r of await namesAndVersionsStatement(db, { organizationId, contactIds, ids })) {
    if (r.kind === 'contact') names.set(r.id, r.name as string);
    else versions.set(r.id, { version: r.version as number, updatedAt: new Date(r.updated_at as Date | string) });
  }
  return { names, versions };
}

/** The fields every platform record carries. */
export function envelope(id: string, createdAt: Date, version: Version | undefined) {
  return {
    Id: id,
    SyncToken: String(version?.version ?? 0),
    MetaData: {
      CreateTime: createdAt.toISOString(),
      LastUpdatedTime: (version?.updatedAt ?? createdAt).toISOString(),
    },
    domain: 'QBO',
    sparse: false,
  };
}

/**
 * Locks a record's row for the write and checks the SyncToken the caller sent against the record's current one.
 * A stale token is refused with the current record, so the caller can apply its change to what is there now.
 *
 * The version is read in a statement of its own, after the lock is granted: every write that bumps a version
 * updates the record's row (the trigger on it counts the change), so once the lock is ours every earlier write is
 * committed, and a new statement's snapshot sees its version. Read in the locking statement itself, a writer that
 * waited for the lock would compare against the version of before the wait, and every waiter would pass.
 */
export async function checkSyncToken(
  tx: Tx,
  table: string,
  organizationId: string,
  id: string,
  sent: unknown,
  current: () => Promise<PlatformRecord>,
  entity: string,
): Promise<string> {
  if (!isUuid(id)) throw recordNotFound(entity);
  const locked = rowsOf(
    await tx.execute(sql`
      select 1 from ${sql.identifier(table)}
      where organization_id = ${organizationId} and id = ${id}
      for update`),
  );
  if (locked.length === 0) throw recordNotFound(entity);
  if (sent === undefined || sent === null || sent === '') {
    throw invalid('SyncToken', 'is required: send the SyncToken of the record as last read');
  }
  const token = String((await versionsOf(tx, organizationId, [id])).get(id)?.version ?? 0);
  if (String(sent) !== token) {
    throw new DomainError(
      'STALE_SYNC_TOKEN',
      `SyncToken ${String(sent)} is stale: the ${entity} is at SyncToken ${token}; apply the change to the current record`,
      [{ field: 'SyncToken', message: 'is not the current SyncToken', current: await current() }],
    );
  }
  return token;
}

/** Offset paging as the platform counts: 1-based start position, a page size and the total. */
export function pageOf(records: PlatformRecord[], options: ListOptions, totalCount: number): RecordPage {
  return { records, startPosition: options.startPosition, maxResults: records.length, totalCount };
}

export const offsetOf = (options: ListOptions) => options.startPosition - 1;

export const journalOf = (
  lines: readonly { accountId: string; debitCents: number; creditCents: number; description: string | null }[],
): JournalEffectLine[] =>
  lines.map((l) => ({
    accountId: l.accountId,
    debit: amountOf(l.debitCents),
    credit: amountOf(l.creditCents),
    description: l.description,
  }));
