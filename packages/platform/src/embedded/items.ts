import { isUuid } from '@firm/core';
import { type Executor, type Tx } from '@firm/db';
import { createItem, type Item, itemsAtOffset, itemsByIds, updateItem } from '@firm/documents';
import { sql } from 'drizzle-orm';
import type { PlatformRecord, WriteResult } from '../types';
import {
  amountOf,
  booleanOf,
  centsOf,
  checkSyncToken,
  envelope,
  invalid,
  ledgerContextOf,
  offsetOf,
  type Payload,
  pageOf,
  recordNotFound,
  refOf,
  textOf,
  versionsOf,
} from './common';
import type { EntityHandler } from './handler';
import { versioned } from './query';

function present(i: Item, version: Parameters<typeof envelope>[2]): PlatformRecord {
  return {
    ...envelope(i.id, i.createdAt, version),
    Name: i.name,
    FullyQualifiedName: i.name,
    Type: i.kind === 'service' ? 'Service' : 'NonInventory',
    Active: !i.archived,
    ...(i.description ? { Description: i.description } : {}),
    UnitPrice: amountOf(i.unitPriceCents),
    ...(i.incomeAccountId ? { IncomeAccountRef: { value: i.incomeAccountId } } : {}),
    ...(i.expenseAccountId ? { ExpenseAccountRef: { value: i.expenseAccountId } } : {}),
  };
}

function kindOf(payload: Payload): Item['kind'] | undefined {
  const type = textOf(payload, 'Type');
  if (type === undefined) return undefined;
  if (type === 'Service') return 'service';
  if (type === 'NonInventory') return 'product';
  throw invalid('Type', 'must be Service or NonInventory (these books keep no inventory)');
}

async function getMany(db: Executor, organizationId: string, ids: readonly string[]): Promise<PlatformRecord[]> {
  const wanted = ids.filter(isUuid);
  if (wanted.length === 0) return [];
  const rows = await itemsByIds(db, organizationId, wanted);
  const versions = await versionsOf(
    db,
    organizationId,
    rows.map((r) => r.id),
  );
  return rows.map((row) => present(row, versions.get(row.id)));
}

async function getOne(db: Executor, organizationId: string, id: string): Promise<PlatformRecord> {
  const [record] = await getMany(db, organizationId, [id]);
  if (!record) throw recordNotFound('Item');
  return record;
}

export const itemHandler: EntityHandler = {
  table: 'items',
  operations: ['read', 'create', 'update'],
  query: {
    from: versioned('items'),
    where: (organizationId) => sql`t.organization_id = ${organizationId}`,
    fields: {
      Name: { sql: sql`t.name`, type: 'text' },
      Active: { sql: sql`not t.archived`, type: 'boolean' },
      UnitPrice: { sql: sql`t.unit_price_cents / 100.0`, type: 'number' },
    },
  },
  async list(db, ctx, options) {
    const { rows, total } = await itemsAtOffset(db, ctx.organizationId, offsetOf(options), options.maxResults);
    const versions = await versionsOf(
      db,
      ctx.organizationId,
      rows.map((r) => r.id),
    );
    return pageOf(
      rows.map((r) => present(r, versions.get(r.id))),
      options,
      total,
    );
  },
  get: (db, ctx, id) => getOne(db, ctx.organizationId, id),
  getMany: (db, ctx, ids) => getMany(db, ctx.organizationId, ids),
  async create(tx: Tx, ctx, payload): Promise<WriteResult> {
    const name = textOf(payload, 'Name');
    if (!name || name.trim() === '') throw invalid('Name', 'is required');
    const item = await createItem(tx, ledgerContextOf(ctx), ctx.organizationId, {
      name,
      kind: kindOf(payload),
      description: textOf(payload, 'Description') ?? null,
      unitPriceCents:
        payload.UnitPrice === undefined ? 0 : centsOf(payload.UnitPrice, 'UnitPrice', { allowZero: true }),
      incomeAccountId: refOf(payload, 'IncomeAccountRef') ?? null,
      expenseAccountId: refOf(payload, 'ExpenseAccountRef') ?? null,
    });
    return { record: await getOne(tx, ctx.organizationId, item.id), syncTokenBefore: null, journal: [] };
  },
  async update(tx: Tx, ctx, id, payload): Promise<WriteResult> {
    const before = await checkSyncToken(
      tx,
      'items',
      ctx.organizationId,
      id,
      payload.SyncToken,
      () => getOne(tx, ctx.organizationId, id),
      'Item',
    );
    const active = booleanOf(payload, 'Active');
    await updateItem(tx, ledgerContextOf(ctx), ctx.organizationId, id, {
      name: textOf(payload, 'Name'),
      kind: kindOf(payload),
      ...(payload.Description !== undefined ? { description: textOf(payload, 'Description') ?? null } : {}),
      ...(payload.UnitPrice !== undefined
        ? { unitPriceCents: centsOf(payload.UnitPrice, 'UnitPrice', { allowZero: true }) }
        : {}),
      ...(payload.IncomeAccountRef !== undefined
        ? { incomeAccountId: refOf(payload, 'IncomeAccountRef') ?? null }
        : {}),
      ...(payload.ExpenseAccountRef !== undefined
        ? { expenseAccountId: refOf(payload, 'ExpenseAccountRef') ?? null }
        : {}),
      ...(active !== undefined ? { archived: !active } : {}),
    });
    return { record: await getOne(tx, ctx.organizationId, id), syncTokenBefore: before, journal: [] };
  },
};
