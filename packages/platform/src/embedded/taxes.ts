import { isUuid } from '@firm/core';
import type { Executor } from '@firm/db';
import { type TaxRate, taxRatesAtOffset, taxRatesByIds } from '@firm/documents';
import { sql } from 'drizzle-orm';
import type { PlatformRecord } from '../types';
import { envelope, offsetOf, pageOf, recordNotFound, versionsOf } from './common';
import type { EntityHandler } from './handler';
import { versioned } from './query';

/**
 * The organization's sales tax rates, read-only, each as the platform presents tax: a `TaxRate` (`RateValue` in
 * percent) and a `TaxCode` of that one rate, under the same Id, which is what document lines name. Tax rates are
 * created and changed through the partner API.
 */
function taxHandler(entity: 'TaxRate' | 'TaxCode'): EntityHandler {
  const present = (r: TaxRate, version: Parameters<typeof envelope>[2]): PlatformRecord => {
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
    const rows = await taxRatesByIds(db, organizationId, wanted);
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
      const { rows, total } = await taxRatesAtOffset(db, ctx.organizationId, offsetOf(options), options.maxResults);
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
