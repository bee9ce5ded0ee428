import { isUuid } from '@firm/core';
import { type Address, type Executor, type Tx } from '@firm/db';
import { type Contact, contactsAtOffset, contactsByIds, createContact, updateContact } from '@firm/documents';
import { sql } from 'drizzle-orm';
import type { PlatformRecord, WriteResult } from '../types';
import {
  booleanOf,
  checkSyncToken,
  envelope,
  invalid,
  ledgerContextOf,
  objectOf,
  offsetOf,
  type Payload,
  pageOf,
  recordNotFound,
  textOf,
  versionsOf,
} from './common';
import type { EntityHandler } from './handler';
import { versioned } from './query';

type Side = 'customer' | 'vendor';

const addressOut = (a: Address | null) =>
  a
    ? {
        Line1: a.line1,
        Line2: a.line2,
        City: a.city,
        CountrySubDivisionCode: a.region,
        PostalCode: a.postalCode,
        Country: a.country,
      }
    : undefined;

function addressIn(payload: Payload, field: string): Address | null | undefined {
  const a = objectOf(payload, field);
  if (a === undefined) return payload[field] === null ? null : undefined;
  const part = (name: string) => textOf(a, name);
  return {
    line1: part('Line1'),
    line2: part('Line2'),
    city: part('City'),
    region: part('CountrySubDivisionCode'),
    postalCode: part('PostalCode'),
    country: part('Country'),
  };
}

function present(c: Contact, version: Parameters<typeof envelope>[2]): PlatformRecord {
  return {
    ...envelope(c.id, c.createdAt, version),
    DisplayName: c.name,
    PrintOnCheckName: c.name,
    Active: !c.archived,
    ...(c.email ? { PrimaryEmailAddr: { Address: c.email } } : {}),
    ...(c.phone ? { PrimaryPhone: { FreeFormNumber: c.phone } } : {}),
    ...(c.billingAddress ? { BillAddr: addressOut(c.billingAddress) } : {}),
    ...(c.shippingAddress ? { ShipAddr: addressOut(c.shippingAddress) } : {}),
    ...(c.taxId ? { TaxIdentifier: c.taxId } : {}),
  };
}

const emailOf = (payload: Payload) => {
  const o = objectOf(payload, 'PrimaryEmailAddr');
  return o ? (textOf(o, 'Address') ?? null) : payload.PrimaryEmailAddr === null ? null : undefined;
};
const phoneOf = (payload: Payload) => {
  const o = objectOf(payload, 'PrimaryPhone');
  return o ? (textOf(o, 'FreeFormNumber') ?? null) : payload.PrimaryPhone === null ? null : undefined;
};

/** Customers and vendors are the books' contacts seen from one side; a contact of kind `both` is both. */
function contactHandler(side: Side, entity: string): EntityHandler {
  const kinds = side === 'customer' ? (['customer', 'both'] as const) : (['vendor', 'both'] as const);
  const getMany = async (db: Executor, organizationId: string, ids: readonly string[]) => {
    const wanted = ids.filter(isUuid);
    if (wanted.length === 0) return [];
    const rows = await contactsByIds(db, organizationId, kinds, wanted);
    const versions = await versionsOf(
      db,
      organizationId,
      rows.map((r) => r.id),
    );
    return rows.map((row) => present(row, versions.get(row.id)));
  };
  const getOne = async (db: Executor, organizationId: string, id: string) => {
    const [record] = await getMany(db, organizationId, [id]);
    if (!record) throw recordNotFound(entity);
    return record;
  };
  return {
    table: 'contacts',
    operations: ['read', 'create', 'update'],
    query: {
      from: versioned('contacts'),
      where: (organizationId) =>
        sql`t.organization_id = ${organizationId} and t.kind::text in (${sql.join(
          kinds.map((k) => sql`${k}`),
          sql`, `,
        )})`,
      fields: {
        DisplayName: { sql: sql`t.name`, type: 'text' },
        Active: { sql: sql`not t.archived`, type: 'boolean' },
        PrimaryEmailAddr: { sql: sql`t.email`, type: 'text' },
      },
    },
    async list(db, ctx, options) {
      const { rows, total } = await contactsAtOffset(
        db,
        ctx.organizationId,
        kinds,
        offsetOf(options),
        options.maxResults,
      );
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
      const name = textOf(payload, 'DisplayName');
      if (!name || name.trim() === '') throw invalid('DisplayName', 'is required');
      const contact = await createContact(tx, ledgerContextOf(ctx), ctx.organizationId, {
        kind: side,
        name,
        email: emailOf(payload) ?? null,
        phone: phoneOf(payload) ?? null,
        billingAddress: addressIn(payload, 'BillAddr') ?? null,
        shippingAddress: addressIn(payload, 'ShipAddr') ?? null,
        taxId: textOf(payload, 'TaxIdentifier') ?? null,
      });
      return { record: await getOne(tx, ctx.organizationId, contact.id), syncTokenBefore: null, journal: [] };
    },
    async update(tx: Tx, ctx, id, payload): Promise<WriteResult> {
      const before = await checkSyncToken(
        tx,
        'contacts',
        ctx.organizationId,
        id,
        payload.SyncToken,
        () => getOne(tx, ctx.organizationId, id),
        entity,
      );
      await getOne(tx, ctx.organizationId, id);
      const active = booleanOf(payload, 'Active');
      const patch = Object.fromEntries(
        Object.entries({
          name: textOf(payload, 'DisplayName'),
          email: emailOf(payload),
          phone: phoneOf(payload),
          billingAddress: addressIn(payload, 'BillAddr'),
          shippingAddress: addressIn(payload, 'ShipAddr'),
          taxId: textOf(payload, 'TaxIdentifier'),
          archived: active === undefined ? undefined : !active,
        }).filter(([, v]) => v !== undefined),
      );
      await updateContact(tx, ledgerContextOf(ctx), ctx.organizationId, id, patch);
      return { record: await getOne(tx, ctx.organizationId, id), syncTokenBefore: before, journal: [] };
    },
  };
}

export const customerHandler = contactHandler('customer', 'Customer');
export const vendorHandler = contactHandler('vendor', 'Vendor');
