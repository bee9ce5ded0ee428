import { DomainError, decodeCursor, type EventType, isUuid, type Page, toPage } from '@firm/core';
import { type Executor, type itemKind, items, taxRates, type Tx } from '@firm/db';
import { type LedgerContext, nowOf, recordEvent } from '@firm/ledger';
import { and, asc, count, eq, inArray, sql } from 'drizzle-orm';
import { activeAccounts, invalidAccount, rethrowNameTaken, validation } from './common';

/** Products and services, and tax rates: what document lines are made of. */

export type Item = typeof items.$inferSelect;
export type ItemKind = (typeof itemKind.enumValues)[number];
export type TaxRate = typeof taxRates.$inferSelect;

export interface ItemInput {
  kind?: ItemKind | undefined;
  name: string;
  description?: string | null | undefined;
  unitPriceCents?: number | undefined;
  incomeAccountId?: string | null | undefined;
  expenseAccountId?: string | null | undefined;
}
export type ItemPatch = Partial<ItemInput> & { archived?: boolean | undefined };

export interface TaxRateInput {
  name: string;
  rateBps: number;
  liabilityAccountId: string;
}
export type TaxRatePatch = Partial<TaxRateInput> & { archived?: boolean | undefined };

export interface NamedFilter {
  limit: number;
  cursor?: string | undefined;
  includeArchived?: boolean | undefined;
}

export const presentItem = (i: Item) => ({
  id: i.id,
  organizationId: i.organizationId,
  kind: i.kind,
  name: i.name,
  description: i.description,
  unitPriceCents: i.unitPriceCents,
  incomeAccountId: i.incomeAccountId,
  expenseAccountId: i.expenseAccountId,
  archived: i.archived,
  createdAt: i.createdAt.toISOString(),
  updatedAt: i.updatedAt.toISOString(),
});

export const presentTaxRate = (r: TaxRate) => ({
  id: r.id,
  organizationId: r.organizationId,
  name: r.name,
  rateBps: r.rateBps,
  liabilityAccountId: r.liabilityAccountId,
  archived: r.archived,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

const itemNotFound = () => new DomainError('ITEM_NOT_FOUND', 'item not found');
const taxRateNotFound = () => new DomainError('TAX_RATE_NOT_FOUND', 'tax rate not found');

function afterName(cursor: string | undefined): [string, string] | null {
  if (!cursor) return null;
  return decodeCursor(cursor, ['string', 'uuid']).map(String) as [string, string];
}

/**
 * An item's income account must be an income account; its expense account an expense, cost-of-sales or
 * asset account other than receivables and bank (inventory, prepaid). Never a control account, so that
 * receivables and payables only move through documents.
 */
async function checkItemAccounts(db: Executor, organizationId: string, item: ItemInput): Promise<void> {
  const income = item.incomeAccountId ?? null;
  const expense = item.expenseAccountId ?? null;
  if (income === null && expense === null) {
    throw validation('incomeAccountId', 'or expenseAccountId is required');
  }
  const found = await activeAccounts(
    db,
    organizationId,
    [income, expense].filter((a): a is string => a !== null),
  );
  if (income !== null) {
    const a = found.get(income);
    if (!a) throw invalidAccount('incomeAccountId');
    if (a.type !== 'income') throw invalidAccount('incomeAccountId', 'not an income account');
  }
  if (expense !== null) {
    const a = found.get(expense);
    if (!a) throw invalidAccount('expenseAccountId');
    if (!(a.type === 'expense' || (a.type === 'asset' && !['bank', 'accounts_receivable'].includes(a.subtype)))) {
      throw invalidAccount('expenseAccountId', 'not an expense, cost-of-sales or non-bank asset account');
    }
  }
}

async function checkLiabilityAccount(db: Executor, organizationId: string, id: string): Promise<void> {
  const a = (await activeAccounts(db, organizationId, [id])).get(id);
  if (!a) throw invalidAccount('liabilityAccountId');
  if (a.type !== 'liability' || a.subtype === 'accounts_payable' || a.subtype === 'credit_card') {
    throw invalidAccount('liabilityAccountId', 'not a liability account other than payables and credit cards');
  }
}

export async function listItems(db: Executor, organizationId: string, filter: NamedFilter): Promise<Page<Item>> {
  const after = afterName(filter.cursor);
  const rows = await db
    .select()
    .from(items)
    .where(
      and(
        eq(items.organizationId, organizationId),
        filter.includeArchived ? undefined : eq(items.archived, false),
        after ? sql`(lower(${items.name}), ${items.id}) > (${after[0]}, ${after[1]}::uuid)` : undefined,
      ),
    )
    .orderBy(sql`lower(${items.name})`, asc(items.id))
    .limit(filter.limit + 1);
  return toPage(rows, filter.limit, (i) => [i.name.toLowerCase(), i.id]);
}

export async function getItem(db: Executor, organizationId: string, id: string): Promise<Item> {
  if (!isUuid(id)) throw itemNotFound();
  const [row] = await db
    .select()
    .from(items)
    .where(and(eq(items.organizationId, organizationId), eq(items.id, id)));
  if (!row) throw itemNotFound();
  return row;
}

/** The organization's items among `ids` (well-formed), archived or not. */
export async function itemsByIds(db: Executor, organizationId: string, ids: readonly string[]): Promise<Item[]> {
  return db
    .select()
    .from(items)
    .where(and(eq(items.organizationId, organizationId), inArray(items.id, [...ids])));
}

/**
 * The organization's items by name, `limit` of them from `offset`, and how many it has: for lists paged by position
 * (the embedded platform's).
 */
export async function itemsAtOffset(
  db: Executor,
  organizationId: string,
  offset: number,
  limit: number,
): Promise<{ rows: Item[]; total: number }> {
  const where = eq(items.organizationId, organizationId);
  const rows = await db
    .select()
    .from(items)
    .where(where)
    .orderBy(asc(items.name), asc(items.id))
    .offset(offset)
    .limit(limit);
  const [total] = await db.select({ n: count() }).from(items).where(where);
  return { rows, total: total?.n ?? 0 };
}

const itemEvent = (tx: Tx, ctx: LedgerContext, action: EventType, item: Item) =>
  recordEvent(tx, ctx, {
    organizationId: item.organizationId,
    action,
    resourceType: 'item',
    resourceId: item.id,
    data: { name: item.name, unitPriceCents: item.unitPriceCents, archived: item.archived },
    payload: presentItem(item),
  });

export async function createItem(tx: Tx, ctx: LedgerContext, organizationId: string, input: ItemInput): Promise<Item> {
  await checkItemAccounts(tx, organizationId, input);
  const now = nowOf(ctx);
  let item: Item;
  try {
    const [row] = await tx
      .insert(items)
      .values({
        organizationId,
        kind: input.kind ?? 'service',
        name: input.name.trim(),
        description: input.description ?? null,
        unitPriceCents: input.unitPriceCents ?? 0,
        incomeAccountId: input.incomeAccountId ?? null,
        expenseAccountId: input.expenseAccountId ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    item = row as Item;
  } catch (err) {
    rethrowNameTaken(err, 'items_org_name_key', 'ITEM_NAME_TAKEN', input.name);
  }
  await itemEvent(tx, ctx, 'item.created', item);
  return item;
}

export async function updateItem(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  patch: ItemPatch,
): Promise<Item> {
  const current = await getItem(tx, organizationId, id);
  if (patch.incomeAccountId !== undefined || patch.expenseAccountId !== undefined) {
    await checkItemAccounts(tx, organizationId, {
      name: current.name,
      incomeAccountId: patch.incomeAccountId !== undefined ? patch.incomeAccountId : current.incomeAccountId,
      expenseAccountId: patch.expenseAccountId !== undefined ? patch.expenseAccountId : current.expenseAccountId,
    });
  }
  let item: Item;
  try {
    const [row] = await tx
      .update(items)
      .set({
        ...(patch.kind !== undefined ? { kind: patch.kind } : {}),
        ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.unitPriceCents !== undefined ? { unitPriceCents: patch.unitPriceCents } : {}),
        ...(patch.incomeAccountId !== undefined ? { incomeAccountId: patch.incomeAccountId } : {}),
        ...(patch.expenseAccountId !== undefined ? { expenseAccountId: patch.expenseAccountId } : {}),
        ...(patch.archived !== undefined ? { archived: patch.archived } : {}),
        updatedAt: nowOf(ctx),
      })
      .where(and(eq(items.organizationId, organizationId), eq(items.id, id)))
      .returning();
    item = row as Item;
  } catch (err) {
    rethrowNameTaken(err, 'items_org_name_key', 'ITEM_NAME_TAKEN', patch.name);
  }
  await itemEvent(tx, ctx, 'item.updated', item);
  return item;
}

export async function listTaxRates(db: Executor, organizationId: string, filter: NamedFilter): Promise<Page<TaxRate>> {
  const after = afterName(filter.cursor);
  const rows = await db
    .select()
    .from(taxRates)
    .where(
      and(
        eq(taxRates.organizationId, organizationId),
        filter.includeArchived ? undefined : eq(taxRates.archived, false),
        after ? sql`(lower(${taxRates.name}), ${taxRates.id}) > (${after[0]}, ${after[1]}::uuid)` : undefined,
      ),
    )
    .orderBy(sql`lower(${taxRates.name})`, asc(taxRates.id))
    .limit(filter.limit + 1);
  return toPage(rows, filter.limit, (r) => [r.name.toLowerCase(), r.id]);
}

export async function getTaxRate(db: Executor, organizationId: string, id: string): Promise<TaxRate> {
  if (!isUuid(id)) throw taxRateNotFound();
  const [row] = await db
    .select()
    .from(taxRates)
    .where(and(eq(taxRates.organizationId, organizationId), eq(taxRates.id, id)));
  if (!row) throw taxRateNotFound();
  return row;
}

/** The organization's tax rates among `ids` (well-formed), archived or not. */
export async function taxRatesByIds(db: Executor, organizationId: string, ids: readonly string[]): Promise<TaxRate[]> {
  return db
    .select()
    .from(taxRates)
    .where(and(eq(taxRates.organizationId, organizationId), inArray(taxRates.id, [...ids])));
}

/**
 * The organization's tax rates by name, `limit` of them from `offset`, and how many it has: for lists paged by
 * position (the embedded platform's).
 */
export async function taxRatesAtOffset(
  db: Executor,
  organizationId: string,
  offset: number,
  limit: number,
): Promise<{ rows: TaxRate[]; total: number }> {
  const where = eq(taxRates.organizationId, organizationId);
  const rows = await db
    .select()
    .from(taxRates)
    .where(where)
    .orderBy(asc(taxRates.name), asc(taxRates.id))
    .offset(offset)
    .limit(limit);
  const [total] = await db.select({ n: count() }).from(taxRates).where(where);
  return { rows, total: total?.n ?? 0 };
}

const taxRateEvent = (tx: Tx, ctx: LedgerContext, action: EventType, rate: TaxRate) =>
  recordEvent(tx, ctx, {
    organizationId: rate.organizationId,
    action,
    resourceType: 'tax_rate',
    resourceId: rate.id,
    data: { name: rate.name, rateBps: rate.rateBps, archived: rate.archived },
    payload: presentTaxRate(rate),
  });

export async function createTaxRate(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: TaxRateInput,
): Promise<TaxRate> {
  await checkLiabilityAccount(tx, organizationId, input.liabilityAccountId);
  const now = nowOf(ctx);
  let rate: TaxRate;
  try {
    const [row] = await tx
      .insert(taxRates)
      .values({
        organizationId,
        name: input.name.trim(),
        rateBps: input.rateBps,
        liabilityAccountId: input.liabilityAccountId,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    rate = row as TaxRate;
  } catch (err) {
    rethrowNameTaken(err, 'tax_rates_org_name_key', 'TAX_RATE_NAME_TAKEN', input.name);
  }
  await taxRateEvent(tx, ctx, 'tax_rate.created', rate);
  return rate;
}

/** A new rate applies to documents written after the change; existing documents keep their tax. */
export async function updateTaxRate(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  patch: TaxRatePatch,
): Promise<TaxRate> {
  await getTaxRate(tx, organizationId, id);
  if (patch.liabilityAccountId !== undefined) await checkLiabilityAccount(tx, organizationId, patch.liabilityAccountId);
  let rate: TaxRate;
  try {
    const [row] = await tx
      .update(taxRates)
      .set({
        ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
        ...(patch.rateBps !== undefined ? { rateBps: patch.rateBps } : {}),
        ...(patch.liabilityAccountId !== undefined ? { liabilityAccountId: patch.liabilityAccountId } : {}),
        ...(patch.archived !== undefined ? { archived: patch.archived } : {}),
        updatedAt: nowOf(ctx),
      })
      .where(and(eq(taxRates.organizationId, organizationId), eq(taxRates.id, id)))
      .returning();
    rate = row as TaxRate;
  } catch (err) {
    rethrowNameTaken(err, 'tax_rates_org_name_key', 'TAX_RATE_NAME_TAKEN', patch.name);
  }
  await taxRateEvent(tx, ctx, 'tax_rate.updated', rate);
  return rate;
}
