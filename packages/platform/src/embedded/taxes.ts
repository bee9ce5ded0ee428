import { isUuid } from '@firm/core';
import { type Executor, taxRates } from '@firm/db';
import { and, asc, count, eq, inArray, sql } from 'drizzle-orm';
import type { PlatformRecord } from '../types';
import { envelope, offsetOf, pageOf, recordNotFound, versionsOf } from './common';
import type { EntityHandler } from './handler';
import { versioned } from './query';

type TaxRateRow = typeof taxRates.$inferSelect;

/**
 * The organization's sales tax rates, read-only, each as the platform presents tax: a `TaxRate` (`RateValue` in
 * percent) and a `TaxCode` of that one rate, under the same Id, which is what document lines name. Tax rates are
 * created and changed through the partner API.
 */
function taxHandler(entity: 'TaxRate' | 'TaxCode'): EntityHandler {
  const present = (r: TaxRateRow, version: Parameters<typeof envelope>[2]): PlatformRecord => {
    const common = { ...envelope(r.id, r.createdAt, version), Name: r.name, Description: r.name, Active: !r.archived };
    if (entity === 'TaxRate') {
      return { ...common, RateValue: r.rateBps / 100, SpecialTaxType: 'NONE', DisplayType: 'ReadOnly' };
    }
    return {
      ...common,
      Taxable: true,
      TaxGroup: false,
      SalesTaxRateList: {
        TaxRateDetail: [{ TaxRateRef: { value: r.id, name: r.name }, TaxTypeApplicable: 'TaxOnAmount', TaxOrder: 0 }],
      },
      PurchaseTaxRateList: { TaxRateDetail: [] },
    };
  };

  async function getMany(db: Executor, organizationId: string, ids: readonly string[]): Promise<PlatformRecord[]> {
    const wanted = ids.filter(isUuid);
    if (wanted.length === 0) return [];
    const rows = await db
      .select()
      .from(taxRates)
      .where(and(eq(taxRates.organizationId, organizationId), inArray(taxRates.id, wanted)));
    const versions = await versionsOf(
      db,
      organizationId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => present(r, versions.get(r.id)));
  }

  return {
    table: 'tax_rates',
    operations: ['read'],
    query: {
      from: versioned('tax_rates'),
      where: (organizationId) => sql`t.organization_id = ${organizationId}`,
      fields: {
        Name: { sql: sql`t.name`, type: 'text' },
        Active: { sql: sql`not t.archived`, type: 'boolean' },
        ...(entity === 'TaxRate' ? { RateValue: { sql: sql`t.rate_bps / 100.0`, type: 'number' as const } } : {}),
      },
    },
    async list(db, ctx, options) {
      const where = eq(taxRates.organizationId, ctx.organizationId);
      const rows = await db
        .select()
        .from(taxRates)
        .where(where)
        .orderBy(asc(taxRates.name), asc(taxRates.id))
        .offset(offsetOf(options))
        .limit(options.maxResults);
      const [total] = await db.select({ n: count() }).from(taxRates).where(where);
      const versions = await versionsOf(
        db,
        ctx.organizationId,
        rows.map((r) => r.id),
      );
      return pageOf(
        rows.map((r) => present(r, versions.get(r.id))),
        options,
        total?.n ?? 0,
      );
    },
    async get(db, ctx, id) {
      const [record] = await getMany(db, ctx.organizationId, [id]);
      if (!record) throw recordNotFound(entity);
      return record;
    },
    getMany: (db, ctx, ids) => getMany(db, ctx.organizationId, ids),
  };
}

export const taxHandlers = new Map([
  ['TaxRate', taxHandler('TaxRate')],
  ['TaxCode', taxHandler('TaxCode')],
]);
